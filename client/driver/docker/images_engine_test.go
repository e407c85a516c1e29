package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// loadingEngine is the real engine whose pull loads an image saved
// before (the engine here can reach no registry): what the driver then
// inspects, runs and removes is the engine's own.
type loadingEngine struct {
	*client.Client
	saved map[string][]byte // ref → `docker save` archive
	pulls int
	// removes counts the finished ImageRemove calls, refused or not.
	removes atomic.Int32
}

func (l *loadingEngine) ImageRemove(ctx context.Context, id string, opts image.RemoveOptions) ([]image.DeleteResponse, error) {
	defer l.removes.Add(1)
	return l.Client.ImageRemove(ctx, id, opts)
}

func (l *loadingEngine) ImagePull(ctx context.Context, ref string, _ image.PullOptions) (io.ReadCloser, error) {
	tarball, ok := l.saved[ref]
	if !ok {
		return nil, errors.New("pull access denied for " + ref)
	}
	l.pulls++
	resp, err := l.Client.ImageLoad(ctx, bytes.NewReader(tarball), client.ImageLoadWithQuiet(true))
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// uniqueImage builds an image of its own on the test image (a label
// makes its ID unique), saves it as a registry would serve it, and
// removes it from the engine: the driver's first task pulls it.
func uniqueImage(t *testing.T, e *env) (string, []byte) {
	t.Helper()
	ref := "sched-test-gc:" + randomID(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	df := []byte("FROM " + e.image + "\nLABEL com.schedhq.test=" + ref + "\n")
	tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df)), Typeflag: tar.TypeReg})
	tw.Write(df)
	tw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := e.engine.ImageBuild(ctx, &buf, build.ImageBuildOptions{Tags: []string{ref}, Remove: true, ForceRemove: true})
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var m struct{ Error string }
		if err := dec.Decode(&m); err != nil {
			break
		}
		if m.Error != "" {
			t.Fatal(m.Error)
		}
	}
	resp.Body.Close()
	t.Cleanup(func() {
		e.engine.ImageRemove(context.Background(), ref, image.RemoveOptions{Force: true, PruneChildren: true})
	})
	rc, err := e.engine.ImageSave(ctx, []string{ref})
	if err != nil {
		t.Fatal(err)
	}
	saved, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.engine.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true}); err != nil {
		t.Fatal(err)
	}
	return ref, saved
}

// TestImageGCWithTheEngine: on the real engine, an image the driver
// pulled stays while a task still uses it, and is removed a GC delay
// after the last task using it ends.
func TestImageGCWithTheEngine(t *testing.T) {
	e := newEnv(t, Config{ImageGCDelay: 300 * time.Millisecond})
	ref, saved := uniqueImage(t, e)
	le := &loadingEngine{Client: e.engine, saved: map[string][]byte{ref: saved}}
	e.d.images.engine = le
	present := func() bool {
		_, err := e.engine.ImageInspect(context.Background(), ref)
		return err == nil
	}
	if present() {
		t.Fatal("the image is on the engine before any pull")
	}
	var ids []string
	for range 2 {
		cfg := e.newTask(map[string]any{"image": ref, "command": "sleep", "args": []any{"3600"}})
		if _, err := e.d.StartTask(cfg); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cfg.ID)
	}
	if le.pulls != 1 || !present() {
		t.Fatalf("pulls %d, image present %v: want one pull for two tasks", le.pulls, present())
	}
	info, err := e.engine.ImageInspect(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.d.DestroyTask(ids[0], true); err != nil {
		t.Fatal(err)
	}
	// One task still uses it: no removal is even scheduled.
	e.d.images.mu.Lock()
	pending, uses := len(e.d.images.timers), e.d.images.refs[info.ID]
	e.d.images.mu.Unlock()
	if pending != 0 || uses != 1 || !present() {
		t.Fatalf("with one task left: %d removal(s) pending, %d use(s), present %v", pending, uses, present())
	}
	if err := e.d.DestroyTask(ids[1], true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the unused image to be removed", func() bool { return !present() })
	if _, err := e.engine.ImageInspect(context.Background(), e.image); err != nil {
		t.Fatalf("the base image went with it: %v", err)
	}
}

// TestImageGCKeepsAnImageAnotherContainerUses: when the last task using
// an image it pulled ends, the driver asks the engine to remove it; a
// container that is not the driver's (created by someone else from the
// same image) makes the engine refuse, and the image stays.
func TestImageGCKeepsAnImageAnotherContainerUses(t *testing.T) {
	e := newEnv(t, Config{ImageGCDelay: 100 * time.Millisecond})
	ref, saved := uniqueImage(t, e)
	le := &loadingEngine{Client: e.engine, saved: map[string][]byte{ref: saved}}
	e.d.images.engine = le
	cfg := e.newTask(map[string]any{"image": ref, "command": "sleep", "args": []any{"3600"}})
	if _, err := e.d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	other, err := e.engine.ContainerCreate(ctx, &container.Config{Image: ref, Cmd: []string{"true"}}, nil, nil, nil, "sched-test-other-"+randomID(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.engine.ContainerRemove(context.Background(), other.ID, container.RemoveOptions{Force: true}) })
	if err := e.d.DestroyTask(cfg.ID, true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the driver's removal of the unused image", func() bool { return le.removes.Load() > 0 })
	if _, err := e.engine.ImageInspect(ctx, ref); err != nil {
		t.Fatalf("the image another container uses was removed: %v", err)
	}
}
