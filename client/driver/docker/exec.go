package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/schedhq/sched/client/driver"
)

// ExecTask implements driver.Execer: the command runs inside the task's
// container (docker exec), with the task's environment as the container
// has it and the container's working directory. Ending ctx closes the
// session's connection, which ends a command reading its input or
// writing to a terminal; a command that ignores both keeps running until
// the task stops (docker has no way to kill one exec).
func (d *Driver) ExecTask(ctx context.Context, req *driver.ExecRequest) (int, error) {
	t, err := d.task(req.TaskID)
	if err != nil {
		return 0, err
	}
	if t.exit.get() != nil {
		return 0, fmt.Errorf("%s has exited: %w", req.TaskID, driver.ErrTaskNotFound)
	}
	if len(req.Command) == 0 || req.Command[0] == "" {
		return 0, fmt.Errorf("%w: no command", driver.ErrBadConfig)
	}
	opts := container.ExecOptions{Cmd: req.Command, Tty: req.TTY, AttachStdin: true,
		AttachStdout: true, AttachStderr: true}
	if req.TTY && req.Size.Height > 0 && req.Size.Width > 0 {
		opts.ConsoleSize = &[2]uint{uint(req.Size.Height), uint(req.Size.Width)}
	}
	created, err := d.engine.ContainerExecCreate(ctx, t.containerID, opts)
	if err != nil {
		return 0, fmt.Errorf("docker exec in %s: %w", req.TaskID, err)
	}
	hj, err := d.engine.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{Tty: req.TTY, ConsoleSize: opts.ConsoleSize})
	if err != nil {
		return 0, fmt.Errorf("docker exec in %s: %w", req.TaskID, err)
	}
	defer hj.Close()
	stop := context.AfterFunc(ctx, func() { hj.Close() })
	defer stop()
	done := make(chan struct{})
	defer close(done)
	go func() {
		if req.Stdin != nil {
			_, _ = io.Copy(hj.Conn, req.Stdin)
		}
		_ = hj.CloseWrite()
	}()
	if req.TTY && req.Resize != nil {
		go func() {
			for {
				select {
				case sz, ok := <-req.Resize:
					if !ok {
						return
					}
					if sz.Height > 0 && sz.Width > 0 {
						_ = d.engine.ContainerExecResize(context.Background(), created.ID,
							container.ResizeOptions{Height: uint(sz.Height), Width: uint(sz.Width)})
					}
				case <-done:
					return
				}
			}
		}()
	}
	stdout, stderr := writerOr(req.Stdout), writerOr(req.Stderr)
	if req.TTY {
		_, err = io.Copy(stdout, hj.Reader)
	} else {
		_, err = stdcopy.StdCopy(stdout, stderr, hj.Reader)
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("docker exec in %s: %w", req.TaskID, err)
	}
	ictx, cancel := context.WithTimeout(context.Background(), defaultAPITimeout)
	defer cancel()
	// The output ends as the command exits; the engine records the exit
	// code a moment later.
	for {
		info, err := d.engine.ContainerExecInspect(ictx, created.ID)
		if err != nil {
			return 0, fmt.Errorf("docker exec in %s: %w", req.TaskID, err)
		}
		if !info.Running {
			return info.ExitCode, nil
		}
		select {
		case <-ictx.Done():
			return 0, fmt.Errorf("docker exec in %s: the command's output ended but it still runs", req.TaskID)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// writerOr is w, or a discarding writer for nil; writes are serialized.
func writerOr(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return &lockedWriter{w: w}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
