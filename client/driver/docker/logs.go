package docker

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/client/driver/logrotate"
	"github.com/schedhq/sched/state"
)

// A container's output is read from the engine (its json-file log, capped
// at 2 × 10 MB) with timestamps, and written without them into the task's
// rotated <task>.stdout.N and <task>.stderr.N files, as raw_exec's. The
// timestamp of the last entry copied is kept in a small file beside the
// logs (at most once a second, and when the copy stops), so a restarted
// client resumes the copy after it: nothing written while the client was
// down is lost, and at most the entries of the last second are copied
// twice after a crash.

// positionInterval is how often the copy position is saved.
const positionInterval = time.Second

// maxFrame bounds one log entry read from the engine.
const maxFrame = 1 << 20

// logSpec is how a task's output is kept; it is part of the handle.
type logSpec struct {
	Dir         string `json:"dir"`
	Task        string `json:"task"`
	Disabled    bool   `json:"disabled"`
	MaxFiles    int    `json:"max_files"`
	MaxFileSize int64  `json:"max_file_size"`
}

func newLogSpec(cfg *driver.TaskConfig) logSpec {
	s := logSpec{Dir: cfg.LogDir, Task: cfg.TaskName, MaxFiles: state.DefaultLogMaxFiles,
		MaxFileSize: int64(state.DefaultLogMaxFileSizeMB) << 20}
	if lc := cfg.LogConfig; lc != nil {
		s.Disabled = lc.Disabled
		if lc.MaxFiles > 0 {
			s.MaxFiles = lc.MaxFiles
		}
		if lc.MaxFileSizeMB > 0 {
			s.MaxFileSize = int64(lc.MaxFileSizeMB) << 20
		}
	}
	if s.Dir == "" || s.Task == "" {
		s.Disabled = true
	}
	return s
}

// positionPath is the file holding the last copied timestamp; the
// leading dot keeps it out of the log readers' listings.
func (s logSpec) positionPath() string {
	return filepath.Join(s.Dir, "."+s.Task+".docker-log-position")
}

// resumeFrom is the time after which a recovered task's copy resumes: the
// saved position, or now when there is none.
func (s logSpec) resumeFrom() time.Time {
	if s.Disabled {
		return time.Time{}
	}
	b, err := os.ReadFile(s.positionPath())
	if err != nil {
		return time.Now()
	}
	ts, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	if err != nil {
		return time.Now()
	}
	return ts.Add(time.Nanosecond)
}

func (s logSpec) removePosition() {
	if !s.Disabled {
		os.Remove(s.positionPath())
	}
}

// logStreamer copies one container's output into the task's files.
type logStreamer struct {
	spec   logSpec
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	last    time.Time // timestamp of the last entry copied
	savedAt time.Time
}

// streamLogs starts copying the container's output from since (zero:
// from its start).
func (d *Driver) streamLogs(id string, spec logSpec, since time.Time) (*logStreamer, error) {
	ls := &logStreamer{spec: spec, done: make(chan struct{})}
	if spec.Disabled {
		close(ls.done)
		return ls, nil
	}
	if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
		return nil, err
	}
	rot := func(stream string) (*logrotate.Rotator, error) {
		return logrotate.New(logrotate.Config{Dir: spec.Dir, Name: spec.Task + "." + stream,
			MaxFiles: spec.MaxFiles, MaxFileSize: spec.MaxFileSize})
	}
	out, err := rot("stdout")
	if err != nil {
		return nil, err
	}
	errw, err := rot("stderr")
	if err != nil {
		out.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(d.ctx)
	ls.cancel = cancel
	opts := container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: true, Timestamps: true}
	if !since.IsZero() {
		// Seconds and nanoseconds as integers: a float64 would round
		// the nanoseconds away and copy the last entry again.
		opts.Since = strconv.FormatInt(since.Unix(), 10) + "." + fmt.Sprintf("%09d", since.Nanosecond())
	}
	rc, err := d.engine.ContainerLogs(ctx, id, opts)
	if err != nil {
		cancel()
		out.Close()
		errw.Close()
		return nil, err
	}
	go func() {
		defer close(ls.done)
		defer out.Close()
		defer errw.Close()
		defer rc.Close()
		if err := ls.copy(bufio.NewReaderSize(rc, 64<<10), out, errw); err != nil && ctx.Err() == nil {
			d.log.Warn("docker: copying task output", "task", spec.Task, "error", err)
		}
		ls.save(true)
	}()
	return ls, nil
}

// copy demultiplexes the engine's stream (8-byte headers: stream, 3
// zero bytes, big-endian length) into w[stdout] and w[stderr], stripping
// each entry's timestamp.
func (ls *logStreamer) copy(r io.Reader, stdout, stderr io.Writer) error {
	var hdr [8]byte
	buf := make([]byte, 0, 32<<10)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		n := binary.BigEndian.Uint32(hdr[4:])
		if n > maxFrame {
			return fmt.Errorf("log entry of %d bytes, more than %d", n, maxFrame)
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		line := buf
		if i := strings.IndexByte(string(buf[:min(len(buf), 64)]), ' '); i > 0 {
			if ts, err := time.Parse(time.RFC3339Nano, string(buf[:i])); err == nil {
				line = buf[i+1:]
				ls.mu.Lock()
				ls.last = ts
				ls.mu.Unlock()
			}
		}
		w := stdout
		if hdr[0] == 2 {
			w = stderr
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
		ls.save(false)
	}
}

// save writes the position when a second has passed since the last save,
// or always with force.
func (ls *logStreamer) save(force bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.last.IsZero() || (!force && time.Since(ls.savedAt) < positionInterval) {
		return
	}
	ls.savedAt = time.Now()
	tmp := ls.spec.positionPath() + ".tmp"
	if err := os.WriteFile(tmp, []byte(ls.last.Format(time.RFC3339Nano)), 0o600); err == nil {
		_ = os.Rename(tmp, ls.spec.positionPath())
	}
}

// drain waits up to d for the copy to reach the end of the output of a
// stopped container, then stops it.
func (ls *logStreamer) drain(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ls.done:
	case <-t.C:
	}
	ls.close()
}

// close stops the copy now and waits for it.
func (ls *logStreamer) close() {
	if ls.cancel != nil {
		ls.cancel()
	}
	<-ls.done
}
