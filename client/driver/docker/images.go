package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// imageEngine is what the coordinator asks of the engine.
type imageEngine interface {
	ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (image.InspectResponse, error)
	ImagePull(ctx context.Context, ref string, opts image.PullOptions) (io.ReadCloser, error)
	ImageRemove(ctx context.Context, id string, opts image.RemoveOptions) ([]image.DeleteResponse, error)
}

// pullRequest is one task's need of an image.
type pullRequest struct {
	Ref     string
	Auth    *authConfig
	Force   bool
	Timeout time.Duration
	Emit    func(string)
}

// imageCoordinator counts the tasks that use each image and removes an
// image this client pulled once no task has used it for the delay. An
// image that was on the engine before (built or pulled by someone else)
// is never removed: the client does not know who else needs it.
type imageCoordinator struct {
	engine imageEngine
	log    *slog.Logger
	delay  time.Duration
	gc     bool
	// now is the clock of the progress events.
	now func() time.Time

	mu       sync.Mutex
	refs     map[string]int          // image ID → tasks using it
	pulled   map[string]bool         // image IDs this client pulled
	timers   map[string]*time.Timer  // pending removals
	inspects map[string]*inspectCall // ref → the inspect in flight
	closed   bool
}

// inspectCall is one ImageInspect that every task asking about the same
// reference meanwhile shares: a hundred tasks of one image placed at
// once ask the engine once, not a hundred times while it is busiest.
type inspectCall struct {
	done chan struct{}
	info image.InspectResponse
	err  error
}

func newImageCoordinator(e imageEngine, log *slog.Logger, delay time.Duration, gc bool) *imageCoordinator {
	return &imageCoordinator{engine: e, log: log, delay: delay, gc: gc, now: time.Now,
		refs: map[string]int{}, pulled: map[string]bool{}, timers: map[string]*time.Timer{},
		inspects: map[string]*inspectCall{}}
}

// inspect asks the engine about ref, sharing the answer of a call for the
// same ref already in flight (a call that starts later asks again: an
// answer is never reused once given). The call is bounded by
// defaultAPITimeout within the context of the task that started it.
func (c *imageCoordinator) inspect(ctx context.Context, ref string) (image.InspectResponse, error) {
	c.mu.Lock()
	call := c.inspects[ref]
	if call == nil {
		call = &inspectCall{done: make(chan struct{})}
		c.inspects[ref] = call
		c.mu.Unlock()
		ictx, cancel := context.WithTimeout(ctx, defaultAPITimeout)
		call.info, call.err = c.engine.ImageInspect(ictx, ref)
		cancel()
		c.mu.Lock()
		delete(c.inspects, ref)
		c.mu.Unlock()
		close(call.done)
		return call.info, call.err
	}
	c.mu.Unlock()
	select {
	case <-call.done:
		return call.info, call.err
	case <-ctx.Done():
		return image.InspectResponse{}, ctx.Err()
	}
}

// acquire makes sure the image is on the engine (pulling it when it is
// missing or Force is set) and counts one more task using it. It returns
// the image's ID.
func (c *imageCoordinator) acquire(ctx context.Context, req pullRequest) (string, error) {
	info, err := c.inspect(ctx, req.Ref)
	pulled := false
	switch {
	case err == nil && !req.Force:
	case err == nil || client.IsErrNotFound(err):
		if err := c.pull(ctx, req); err != nil {
			return "", err
		}
		pulled = true
		// Asked anew, not joined to a call in flight: that one may have
		// started before the pull ended and not find the image.
		ictx, cancel := context.WithTimeout(ctx, defaultAPITimeout)
		info, err = c.engine.ImageInspect(ictx, req.Ref)
		cancel()
		if err != nil {
			return "", fmt.Errorf("docker: image %q after its pull: %w", req.Ref, err)
		}
	default:
		return "", fmt.Errorf("docker: image %q: %w", req.Ref, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if pulled {
		c.pulled[info.ID] = true
	}
	c.holdLocked(info.ID)
	return info.ID, nil
}

// adopt counts one more task using id (a recovered container's image).
func (c *imageCoordinator) adopt(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holdLocked(id)
}

func (c *imageCoordinator) holdLocked(id string) {
	c.refs[id]++
	if t := c.timers[id]; t != nil {
		t.Stop()
		delete(c.timers, id)
	}
}

// release counts one task less using id; the last one schedules the
// image's removal when this client pulled it.
func (c *imageCoordinator) release(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refs[id] <= 0 {
		return
	}
	c.refs[id]--
	if c.refs[id] > 0 {
		return
	}
	delete(c.refs, id)
	if !c.gc || !c.pulled[id] || c.closed {
		return
	}
	c.timers[id] = time.AfterFunc(c.delay, func() { c.removeUnused(id) })
}

// removeUnused removes id unless a task took it again meanwhile.
func (c *imageCoordinator) removeUnused(id string) {
	c.mu.Lock()
	if c.refs[id] > 0 || c.closed {
		c.mu.Unlock()
		return
	}
	delete(c.timers, id)
	delete(c.pulled, id)
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), defaultAPITimeout)
	defer cancel()
	if _, err := c.engine.ImageRemove(ctx, id, image.RemoveOptions{PruneChildren: true}); err != nil && !client.IsErrNotFound(err) {
		// Another container (not ours) may use it: leave it.
		c.log.Info("docker: unused image not removed", "image", id, "error", err)
	}
}

// uses is the number of tasks using id.
func (c *imageCoordinator) uses(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refs[id]
}

// shutdown drops the pending removals.
func (c *imageCoordinator) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for id, t := range c.timers {
		t.Stop()
		delete(c.timers, id)
	}
}

// pullMessage is one line of the engine's pull progress.
type pullMessage struct {
	Status         string `json:"status"`
	ID             string `json:"id"`
	ProgressDetail struct {
		Current int64 `json:"current"`
		Total   int64 `json:"total"`
	} `json:"progressDetail"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// pull pulls req.Ref within req.Timeout, reporting progress through
// req.Emit: when it starts, every few seconds, and when it is done.
func (c *imageCoordinator) pull(ctx context.Context, req pullRequest) error {
	ctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	req.Emit("Downloading image " + req.Ref)
	rc, err := c.engine.ImagePull(ctx, req.Ref, image.PullOptions{RegistryAuth: req.Auth.encode()})
	if err != nil {
		return pullError(ctx, req, err)
	}
	defer rc.Close()
	type layer struct{ current, total int64 }
	layers := map[string]*layer{}
	last := c.now()
	dec := json.NewDecoder(io.LimitReader(rc, 64<<20))
	for {
		var m pullMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return pullError(ctx, req, err)
		}
		if m.Error != "" || m.ErrorDetail != nil {
			msg := m.Error
			if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
				msg = m.ErrorDetail.Message
			}
			return pullError(ctx, req, errors.New(msg))
		}
		if m.ID != "" && m.ProgressDetail.Total > 0 && len(layers) < 1024 {
			l := layers[m.ID]
			if l == nil {
				l = &layer{}
				layers[m.ID] = l
			}
			l.current, l.total = m.ProgressDetail.Current, m.ProgressDetail.Total
		}
		if now := c.now(); now.Sub(last) >= progressEventInterval {
			last = now
			var cur, total int64
			for _, l := range layers {
				cur, total = cur+l.current, total+l.total
			}
			req.Emit(fmt.Sprintf("Image %s pull progress: %d layer(s), %.1f MB of %.1f MB", req.Ref, len(layers), float64(cur)/1e6, float64(total)/1e6))
		}
	}
	req.Emit("Image " + req.Ref + " downloaded")
	return nil
}

// pullError names the image and the cause, and a timeout as one.
func pullError(ctx context.Context, req pullRequest, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("docker: pull image %q: no image after image_pull_timeout %v", req.Ref, req.Timeout)
	}
	return fmt.Errorf("docker: pull image %q: %v", req.Ref, err)
}
