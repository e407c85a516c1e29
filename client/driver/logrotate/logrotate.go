// Package logrotate writes a task's output to size-bounded, numbered
// files: <dir>/<name>.0, <name>.1, … The highest index is the file being
// written; when it would pass MaxFileSize the next index is opened, and
// only the newest MaxFiles files are kept. A Rotator opened on a directory
// that already holds files continues the highest index, so a restarted
// task (or a restarted client) appends to its old logs instead of
// overwriting them.
//
// Readers (the logs endpoint) list the files with Indexes and read them in
// ascending order.
package logrotate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Config says where and how much to write.
type Config struct {
	// Dir holds the files; it is created if missing.
	Dir string
	// Name is the file name before the index, e.g. "web.stdout".
	Name string
	// MaxFiles is how many files are kept (at least 1).
	MaxFiles int
	// MaxFileSize is the size in bytes at which a file is rotated (at
	// least 1).
	MaxFileSize int64
}

// Rotator is an io.WriteCloser over the rotated files. It is safe for
// concurrent use.
type Rotator struct {
	cfg Config

	mu   sync.Mutex
	f    *os.File
	idx  int
	size int64
}

// New opens the newest file of cfg.Name in cfg.Dir for appending (index 0
// when there is none) and removes files beyond MaxFiles.
func New(cfg Config) (*Rotator, error) {
	if cfg.Dir == "" || cfg.Name == "" {
		return nil, errors.New("logrotate: Dir and Name are required")
	}
	if cfg.MaxFiles < 1 || cfg.MaxFileSize < 1 {
		return nil, fmt.Errorf("logrotate: MaxFiles %d and MaxFileSize %d must be at least 1", cfg.MaxFiles, cfg.MaxFileSize)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	r := &Rotator{cfg: cfg}
	idxs, err := Indexes(cfg.Dir, cfg.Name)
	if err != nil {
		return nil, err
	}
	if len(idxs) > 0 {
		r.idx = idxs[len(idxs)-1]
	}
	if err := r.openLocked(); err != nil {
		return nil, err
	}
	r.purgeLocked()
	return r, nil
}

// Path is the file of index idx.
func Path(dir, name string, idx int) string {
	return filepath.Join(dir, name+"."+strconv.Itoa(idx))
}

// Indexes lists the indexes of name's files in dir, ascending.
func Indexes(dir, name string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []int
	prefix := name + "."
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 || strconv.Itoa(n) != rest {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// Write appends p, rotating as often as needed so that no file passes
// MaxFileSize: a write larger than the room left is split across files.
func (r *Rotator) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, os.ErrClosed
	}
	written := 0
	for len(p) > 0 {
		room := r.cfg.MaxFileSize - r.size
		if room <= 0 {
			if err := r.rotateLocked(); err != nil {
				return written, err
			}
			room = r.cfg.MaxFileSize
		}
		chunk := p[:min(int64(len(p)), room)]
		n, err := r.f.Write(chunk)
		written += n
		r.size += int64(n)
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// Close closes the current file. Writes after Close fail.
func (r *Rotator) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// openLocked opens the file of r.idx for appending. The client writes as
// root into a directory a task may reach: a link or a FIFO put at the next
// file's name must neither redirect the write nor block the client, so the
// open follows no link, never waits, and anything but a regular file is
// refused.
func (r *Rotator) openLocked() error {
	name := Path(r.cfg.Dir, r.cfg.Name, r.idx)
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0o644)
	if err != nil {
		return err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("log file %s is not a regular file (%s)", name, info.Mode().Type())
	}
	if err != nil {
		f.Close()
		return err
	}
	r.f, r.size = f, info.Size()
	return nil
}

// rotateLocked moves to the next index and drops the files it pushes out.
func (r *Rotator) rotateLocked() error {
	if err := r.f.Close(); err != nil {
		return err
	}
	r.f = nil
	r.idx++
	if err := r.openLocked(); err != nil {
		return err
	}
	r.purgeLocked()
	return nil
}

// purgeLocked removes every file older than the newest MaxFiles. Removal
// errors are ignored: a file left behind is only disk, and the next
// rotation tries again.
func (r *Rotator) purgeLocked() {
	idxs, err := Indexes(r.cfg.Dir, r.cfg.Name)
	if err != nil {
		return
	}
	for _, i := range idxs {
		if i <= r.idx-r.cfg.MaxFiles {
			os.Remove(Path(r.cfg.Dir, r.cfg.Name, i))
		}
	}
}
