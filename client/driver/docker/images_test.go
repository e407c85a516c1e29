package docker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// fakeImages is an engine's image store: images by reference, a pull
// that streams progress lines (one every pullStep) and can fail.
type fakeImages struct {
	mu       sync.Mutex
	have     map[string]string // ref → ID
	pullable map[string]string // ref → ID a pull gets
	pullErr  string            // an error line in the pull's stream
	pullStep time.Duration
	pulls    int
	removed  []string
	// inspects counts ImageInspect calls; with gate set, each waits for
	// a value (or its context) before answering.
	inspects int
	gate     chan struct{}
}

func (f *fakeImages) ImageInspect(ctx context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	f.mu.Lock()
	f.inspects++
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return image.InspectResponse{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if id, ok := f.have[ref]; ok {
		return image.InspectResponse{ID: id}, nil
	}
	return image.InspectResponse{}, notFoundError("No such image: " + ref)
}

func (f *fakeImages) ImagePull(ctx context.Context, ref string, _ image.PullOptions) (io.ReadCloser, error) {
	f.mu.Lock()
	f.pulls++
	id, ok := f.pullable[ref]
	errLine, step := f.pullErr, f.pullStep
	f.mu.Unlock()
	pr, pw := io.Pipe()
	go func() {
		for i := 1; i <= 4; i++ {
			select {
			case <-ctx.Done():
				pw.CloseWithError(ctx.Err())
				return
			case <-time.After(step):
			}
			pw.Write([]byte(`{"status":"Downloading","id":"layer1","progressDetail":{"current":` + string(rune('0'+i)) + `000000,"total":4000000}}` + "\n"))
		}
		switch {
		case errLine != "":
			pw.Write([]byte(`{"errorDetail":{"message":"` + errLine + `"},"error":"` + errLine + `"}` + "\n"))
		case ok:
			f.mu.Lock()
			f.have[ref] = id
			f.mu.Unlock()
		default:
			pw.Write([]byte(`{"error":"pull access denied for ` + ref + `"}` + "\n"))
		}
		pw.Close()
	}()
	return pr, nil
}

func (f *fakeImages) ImageRemove(_ context.Context, id string, _ image.RemoveOptions) ([]image.DeleteResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, id)
	for ref, have := range f.have {
		if have == id {
			delete(f.have, ref)
		}
	}
	return nil, nil
}

// notFoundError is an engine's 404, as the client library classifies it.
type notFoundError string

func (e notFoundError) Error() string { return string(e) }
func (notFoundError) NotFound()       {}

// events collects a task's driver messages.
type events struct {
	mu   sync.Mutex
	msgs []string
}

func (e *events) emit(m string) { e.mu.Lock(); e.msgs = append(e.msgs, m); e.mu.Unlock() }
func (e *events) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.msgs...)
}

// An image pulled by the client is counted per task and removed the GC
// delay after its last task, unless a task takes it again first; the pull
// reports its progress; an image that was there before is never removed.
func TestImageCoordinatorPullCountAndGC(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeImages{have: map[string]string{"local:1": "sha256:local"},
			pullable: map[string]string{"web:1": "sha256:web"}, pullStep: 2 * time.Second}
		c := newImageCoordinator(f, slog.New(slog.DiscardHandler), time.Minute, true)
		var ev events
		req := pullRequest{Ref: "web:1", Timeout: time.Minute, Emit: ev.emit}
		id, err := c.acquire(context.Background(), req)
		if err != nil || id != "sha256:web" {
			t.Fatalf("acquire: %q %v", id, err)
		}
		msgs := ev.all()
		if len(msgs) < 3 || msgs[0] != "Downloading image web:1" || msgs[len(msgs)-1] != "Image web:1 downloaded" ||
			!strings.Contains(strings.Join(msgs, "\n"), "pull progress: 1 layer(s)") {
			t.Fatalf("pull events %q", msgs)
		}
		if _, err := c.acquire(context.Background(), req); err != nil || f.pulls != 1 {
			t.Fatalf("second acquire: %v, pulls %d (the image is there: no pull)", err, f.pulls)
		}
		if c.uses(id) != 2 {
			t.Fatalf("uses %d", c.uses(id))
		}
		c.release(id)
		c.release(id)
		time.Sleep(59 * time.Second)
		synctest.Wait()
		if len(f.removed) != 0 {
			t.Fatalf("removed before the delay: %v", f.removed)
		}
		// Taken again within the delay: kept.
		if _, err := c.acquire(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if len(f.removed) != 0 {
			t.Fatalf("removed while used: %v", f.removed)
		}
		c.release(id)
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		if len(f.removed) != 1 || f.removed[0] != "sha256:web" {
			t.Fatalf("removed %v, want the pulled image", f.removed)
		}
		// An image the engine had before is used, never removed.
		lid, err := c.acquire(context.Background(), pullRequest{Ref: "local:1", Timeout: time.Minute, Emit: ev.emit})
		if err != nil || lid != "sha256:local" {
			t.Fatal(lid, err)
		}
		c.release(lid)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if len(f.removed) != 1 {
			t.Fatalf("removed %v: the local image must stay", f.removed)
		}
		c.shutdown()
	})
}

// A pull the registry refuses, one that fails midway and one that
// outlasts its timeout fail with the image and the cause named, and
// count nothing.
func TestImageCoordinatorPullFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeImages{have: map[string]string{}, pullable: map[string]string{"slow:1": "sha256:slow"}, pullStep: time.Second}
		c := newImageCoordinator(f, slog.New(slog.DiscardHandler), time.Minute, true)
		emit := func(string) {}
		_, err := c.acquire(context.Background(), pullRequest{Ref: "private/x:1", Timeout: time.Minute, Emit: emit})
		if err == nil || !strings.Contains(err.Error(), `pull image "private/x:1": pull access denied for private/x:1`) {
			t.Fatalf("refused pull: %v", err)
		}
		f.pullErr = "unexpected EOF"
		_, err = c.acquire(context.Background(), pullRequest{Ref: "slow:1", Timeout: time.Minute, Emit: emit})
		if err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
			t.Fatalf("broken pull: %v", err)
		}
		f.pullErr = ""
		_, err = c.acquire(context.Background(), pullRequest{Ref: "slow:1", Timeout: 2 * time.Second, Emit: emit})
		if err == nil || !strings.Contains(err.Error(), "no image after image_pull_timeout 2s") {
			t.Fatalf("slow pull: %v", err)
		}
		if len(c.refs) != 0 {
			t.Fatalf("refs after failures: %v", c.refs)
		}
		if errors.Is(err, context.Canceled) {
			t.Fatal("timeout reported as a cancel")
		}
		c.shutdown()
	})
}

// Tasks of one image started at once share one ImageInspect: while it is
// in flight every other task waits for its answer; a task that asks after
// the answer asks the engine again.
func TestImageInspectShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeImages{have: map[string]string{"busybox:1": "sha256:bb"}, gate: make(chan struct{})}
		c := newImageCoordinator(f, slog.New(slog.DiscardHandler), time.Minute, true)
		const n = 10
		ids := make(chan string, n)
		for range n {
			go func() {
				id, err := c.acquire(context.Background(), pullRequest{Ref: "busybox:1", Timeout: time.Minute, Emit: func(string) {}})
				if err != nil {
					t.Error(err)
				}
				ids <- id
			}()
		}
		synctest.Wait() // every task is waiting: on the engine, or on the call in flight
		f.mu.Lock()
		inflight := f.inspects
		f.mu.Unlock()
		if inflight != 1 {
			t.Fatalf("%d inspects in flight for %d tasks of one image, want 1", inflight, n)
		}
		close(f.gate) // the engine answers
		for range n {
			if id := <-ids; id != "sha256:bb" {
				t.Errorf("image ID %q, want sha256:bb", id)
			}
		}
		if got := c.uses("sha256:bb"); got != n {
			t.Errorf("%d tasks counted, want %d", got, n)
		}
		if _, err := c.acquire(context.Background(), pullRequest{Ref: "busybox:1", Timeout: time.Minute, Emit: func(string) {}}); err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.inspects != 2 {
			t.Errorf("%d inspects after a later task, want 2 (an answer is not reused)", f.inspects)
		}
	})
}

// A task whose context ends while it waits for another task's inspect
// gives up with its context's error; the call in flight still answers the
// others.
func TestImageInspectSharedWaiterGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeImages{have: map[string]string{"busybox:1": "sha256:bb"}, gate: make(chan struct{})}
		c := newImageCoordinator(f, slog.New(slog.DiscardHandler), time.Minute, true)
		first := make(chan error, 1)
		go func() {
			_, err := c.acquire(context.Background(), pullRequest{Ref: "busybox:1", Timeout: time.Minute, Emit: func(string) {}})
			first <- err
		}()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := c.acquire(ctx, pullRequest{Ref: "busybox:1", Timeout: time.Minute, Emit: func(string) {}}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("waiter: %v, want its deadline", err)
		}
		close(f.gate)
		if err := <-first; err != nil {
			t.Errorf("first: %v", err)
		}
		if got := c.uses("sha256:bb"); got != 1 {
			t.Errorf("%d tasks counted, want 1 (the waiter that gave up holds nothing)", got)
		}
	})
}
