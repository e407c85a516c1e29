package driver

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/schedhq/sched/client/driver/logrotate"
	"github.com/schedhq/sched/state"
)

// A raw_exec task writes stdout and stderr into named pipes (FIFOs) in its
// log directory, and the driver copies each pipe into rotated files. A
// pipe, unlike an anonymous one, can be opened again by name: a restarted
// client re-attaches to the logs of a task it recovers. The task holds its
// end open read-write, so it never gets SIGPIPE while no client reads; it
// blocks once the pipe buffer (64 KiB) is full and resumes when a client
// reads again.

// logSpec is how a task's output is kept; it is part of the handle so a
// recovered task keeps logging the same way.
type logSpec struct {
	Dir         string `json:"dir"`
	Task        string `json:"task"`
	Disabled    bool   `json:"disabled"`
	MaxFiles    int    `json:"max_files"`
	MaxFileSize int64  `json:"max_file_size"`
}

// newLogSpec fills a logSpec from a task config, with the job defaults for
// zero fields.
func newLogSpec(cfg *TaskConfig) logSpec {
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

// fifoPath is the pipe of one stream. The leading dot keeps it out of
// the <task>.<stream>.N names that log readers list.
func (s logSpec) fifoPath(stream string) string {
	return filepath.Join(s.Dir, "."+s.Task+"."+stream+".fifo")
}

// logCopier copies one task's pipes into rotated files.
type logCopier struct {
	readers []*os.File
	wg      sync.WaitGroup
}

// taskLogs is what StartTask hands the child: its stdout and stderr.
type taskLogs struct {
	stdout, stderr *os.File
	copier         *logCopier
}

// closeChildEnds closes the parent's copies of the child's ends, once the
// child has them.
func (l *taskLogs) closeChildEnds() {
	l.stdout.Close()
	if l.stderr != l.stdout {
		l.stderr.Close()
	}
}

// openTaskLogs prepares the child's output: /dev/null when logging is
// disabled, else fresh pipes with copiers already reading them.
func openTaskLogs(s logSpec) (*taskLogs, error) {
	if s.Disabled {
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &taskLogs{stdout: null, stderr: null, copier: &logCopier{}}, nil
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, err
	}
	l := &taskLogs{copier: &logCopier{}}
	for _, stream := range []string{"stdout", "stderr"} {
		p := s.fifoPath(stream)
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			l.abort()
			return nil, &os.PathError{Op: "mkfifo", Path: p, Err: err}
		}
		// Open the reader first (non-blocking, so it does not wait for a
		// writer), then the child's read-write end.
		r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			l.abort()
			return nil, err
		}
		w, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			r.Close()
			l.abort()
			return nil, err
		}
		if stream == "stdout" {
			l.stdout = w
		} else {
			l.stderr = w
		}
		if err := l.copier.start(s, stream, r); err != nil {
			l.abort()
			return nil, err
		}
	}
	return l, nil
}

// abort undoes a partial openTaskLogs.
func (l *taskLogs) abort() {
	for _, f := range []*os.File{l.stdout, l.stderr} {
		if f != nil {
			f.Close()
		}
	}
	l.copier.close()
}

// reattachLogs opens the pipes of a recovered task again.
func reattachLogs(s logSpec) (*logCopier, error) {
	c := &logCopier{}
	if s.Disabled {
		return c, nil
	}
	for _, stream := range []string{"stdout", "stderr"} {
		r, err := os.OpenFile(s.fifoPath(stream), os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			c.close()
			return nil, err
		}
		if err := c.start(s, stream, r); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// start copies r into the rotated files of stream until every writer has
// closed the pipe (end of file) or the reader is closed.
func (c *logCopier) start(s logSpec, stream string, r *os.File) error {
	rot, err := logrotate.New(logrotate.Config{Dir: s.Dir, Name: s.Task + "." + stream,
		MaxFiles: s.MaxFiles, MaxFileSize: s.MaxFileSize})
	if err != nil {
		r.Close()
		return err
	}
	c.readers = append(c.readers, r)
	c.wg.Go(func() {
		defer rot.Close()
		_, err := io.Copy(rot, r)
		if err != nil && !errors.Is(err, os.ErrClosed) {
			// Output is lost from here on: drain the pipe so the task
			// does not block on a full buffer.
			io.Copy(io.Discard, r)
		}
	})
	return nil
}

// drain waits up to d for the copiers to reach the end of their pipes, so
// the last lines a task wrote are in the files before its exit is
// reported; a pipe still held open by an escaped process is then cut.
func (c *logCopier) drain(d time.Duration) {
	done := make(chan struct{})
	go func() {
		c.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	c.close()
}

// close stops the copiers now and waits for them.
func (c *logCopier) close() {
	for _, r := range c.readers {
		r.Close()
	}
	c.wg.Wait()
}

// removeFifos deletes a task's pipes.
func removeFifos(s logSpec) {
	if s.Disabled {
		return
	}
	os.Remove(s.fifoPath("stdout"))
	os.Remove(s.fifoPath("stderr"))
}
