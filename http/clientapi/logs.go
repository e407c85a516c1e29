package clientapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedhq/sched/http/clientapi/allocfs"
	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// HeaderLogInitialBytes, on a plain log stream, is how many bytes of the
// stream were already on disk when the request arrived (from its starting
// point): a reader that wants the last lines of what exists, then new
// data, reads that many bytes before it starts printing as it goes.
const HeaderLogInitialBytes = "X-Sched-Log-Initial-Bytes"

// Log streaming limits.
const (
	// logPollInterval is how often a followed log is checked for new data
	// and for rotation. Files are polled: rotation renames nothing (the
	// driver opens <task>.<type>.N+1), so a look at the directory and the
	// current file's size is all it takes, and it works on every file
	// system.
	logPollInterval = 100 * time.Millisecond
	// logTaskCheckEvery is how many idle polls pass between checks of
	// whether the followed task has died, which ends the stream.
	logTaskCheckEvery = 10
	// logChunk is the largest piece written (and, framed, encoded) at
	// once.
	logChunk = 64 << 10
)

// LogRequest is the query of GET /v1/client/fs/logs/:alloc_id.
type LogRequest struct {
	Task   string
	Type   string // stdout or stderr
	Follow bool
	Offset int64
	// FromEnd: Offset counts back from the end of the stream rather than
	// forward from its start (origin=end).
	FromEnd bool
	// Plain streams the raw bytes; otherwise the stream is JSON frames
	// (LogFrame), one object per chunk.
	Plain bool
}

// LogFrame is one frame of a log stream that is not plain: Data (base64
// in JSON) is the bytes at Offset of File, the file's path relative to the
// allocation directory.
type LogFrame struct {
	Offset int64
	Data   []byte
	File   string
}

// ParseLogRequest reads and checks the query; every bad value is a 400
// naming it.
func ParseLogRequest(r *http.Request) (*LogRequest, error) {
	q := r.URL.Query()
	lr := &LogRequest{Task: q.Get("task"), Type: q.Get("type")}
	if lr.Task == "" {
		return nil, codec.BadRequest("task: required query parameter")
	}
	if strings.ContainsAny(lr.Task, `/\`) || lr.Task == "." || lr.Task == ".." {
		return nil, codec.BadRequest("task: %q is not a task name", lr.Task)
	}
	switch lr.Type {
	case "":
		lr.Type = "stdout"
	case "stdout", "stderr":
	default:
		return nil, codec.BadRequest("type: %q is not stdout or stderr", lr.Type)
	}
	var err error
	if lr.Follow, err = codec.BoolParam(q, "follow"); err != nil {
		return nil, err
	}
	if lr.Plain, err = codec.BoolParam(q, "plain"); err != nil {
		return nil, err
	}
	if lr.Offset, err = codec.IntParam(q, "offset", 0); err != nil {
		return nil, err
	}
	if lr.Offset < 0 {
		return nil, codec.BadRequest("offset: must not be negative, got %d", lr.Offset)
	}
	switch o := q.Get("origin"); o {
	case "", "start":
	case "end":
		lr.FromEnd = true
	default:
		return nil, codec.BadRequest("origin: %q is not start or end", o)
	}
	return lr, nil
}

// ServeLogs streams the logs of allocID from c, which holds it.
func ServeLogs(w http.ResponseWriter, r *http.Request, c Client, allocID string, lr *LogRequest) (any, error) {
	alloc, err := c.Alloc(allocID)
	if err != nil {
		return nil, err
	}
	if !allocHasTask(alloc, lr.Task) {
		return nil, state.NotFoundf("task %q in allocation %q", lr.Task, allocID)
	}
	dir, err := c.AllocLogDir(allocID)
	if err != nil {
		return nil, err
	}
	release, err := admitFSRead(w, c, allocID)
	if err != nil {
		return nil, err
	}
	defer release()
	ls := &logStream{dir: dir, prefix: lr.Task + "." + lr.Type + ".", relDir: "alloc/logs"}
	files, err := ls.list()
	if nr, ok := errors.AsType[*allocfs.NotRegularError](err); ok {
		return nil, &codec.CodedError{Code: http.StatusBadRequest, Message: nr.Error(), Err: err}
	}
	if err != nil {
		return nil, err
	}
	start, avail := ls.startAt(files, lr)

	h := w.Header()
	h.Set(HeaderLogInitialBytes, strconv.FormatInt(avail, 10))
	if lr.Plain {
		h.Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		h.Set("Content-Type", "application/json")
	}
	h.Set("X-Content-Type-Options", "nosniff")
	rc := http.NewResponseController(w)
	if lr.Follow {
		// A followed log outlives any write timeout the agent's server
		// sets for ordinary answers.
		_ = rc.SetWriteDeadline(time.Time{})
	}
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()

	out := &logWriter{w: w, rc: rc, plain: lr.Plain}
	taskDead := func() bool {
		a, err := c.Alloc(allocID)
		if err != nil {
			return errors.Is(err, state.ErrNotFound)
		}
		ts := a.TaskStates[lr.Task]
		return a.ClientTerminal() || ts != nil && ts.State == state.TaskStateDead
	}
	if !lr.Follow {
		taskDead = nil
	}
	if err := ls.stream(r.Context(), start, out, lr.Follow, taskDead); err != nil && r.Context().Err() == nil {
		// The status is sent: all that can be done is end the stream.
		return codec.AlreadyWritten{}, nil
	}
	return codec.AlreadyWritten{}, nil
}

// allocHasTask reports whether task is a task of alloc's group. Without
// the job to tell, any name is taken.
func allocHasTask(alloc *state.Allocation, task string) bool {
	if alloc == nil || alloc.Job == nil {
		return true
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	return tg == nil || tg.LookupTask(task) != nil
}

// logStream reads the rotated files <prefix>N of dir in order of N. They
// are the driver's regular files: anything else under such a name (a
// pipe, a socket, a symbolic link, which could lead anywhere on the
// host) is a *allocfs.NotRegularError, never opened nor followed.
type logStream struct {
	dir    string
	prefix string
	// relDir is dir relative to the allocation directory, for frames.
	relDir string
}

// logFile is one rotated file.
type logFile struct {
	index int
	name  string
	size  int64
}

// list returns the stream's files ordered by index. A directory that does
// not exist yet (the task has not started) holds none. One that is not a
// regular file is an error.
func (ls *logStream) list() ([]logFile, error) {
	entries, err := os.ReadDir(ls.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []logFile
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), ls.prefix)
		if !ok || e.IsDir() {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 {
			continue
		}
		if !e.Type().IsRegular() {
			return nil, &allocfs.NotRegularError{Path: ls.relDir + "/" + e.Name(), Mode: e.Type()}
		}
		info, err := e.Info()
		if err != nil {
			continue // rotated away between the listing and now
		}
		out = append(out, logFile{index: n, name: e.Name(), size: info.Size()})
	}
	slices.SortFunc(out, func(a, b logFile) int { return a.index - b.index })
	return out, nil
}

// logPos is a position in the stream: a file index and an offset in it.
type logPos struct {
	index  int
	offset int64
}

// startAt turns the request's offset and origin into a position, and
// returns how many bytes from there are on disk now.
func (ls *logStream) startAt(files []logFile, lr *LogRequest) (logPos, int64) {
	var total int64
	for _, f := range files {
		total += f.size
	}
	skip := lr.Offset
	if lr.FromEnd {
		skip = max(total-lr.Offset, 0)
	}
	skip = min(skip, total)
	avail := total - skip
	for _, f := range files {
		if skip < f.size || f.index == files[len(files)-1].index {
			return logPos{index: f.index, offset: skip}, avail
		}
		skip -= f.size
	}
	return logPos{}, 0 // no file yet: start at the first one to appear
}

// stream copies from pos onwards to out. Without follow it ends at the
// end of the last file. With follow it waits for more: new data in the
// current file, or a newer file (the current one is then drained first),
// until ctx ends or taskDead (checked while idle) says the task is gone
// and everything is sent.
func (ls *logStream) stream(ctx context.Context, pos logPos, out *logWriter, follow bool, taskDead func() bool) error {
	buf := make([]byte, logChunk)
	var ticker *time.Ticker
	idle := 0
	for {
		f, err := ls.open(pos.index)
		switch {
		case errors.Is(err, os.ErrNotExist):
			f = nil // not written yet, or rotated away: look for a newer one below
		case err != nil:
			return err
		}
		if f != nil {
			n, err := ls.copyFrom(ctx, f, pos, out, buf)
			f.Close()
			if err != nil {
				return err
			}
			if n > 0 {
				idle = 0
			}
			pos.offset += n
		}
		files, err := ls.list()
		if err != nil {
			return err
		}
		if next, ok := nextFile(files, pos.index); ok {
			if f != nil {
				// Data written before the rotation may have landed
				// after the copy: read the file once more.
				if g, err := ls.open(pos.index); err == nil {
					n, err := ls.copyFrom(ctx, g, pos, out, buf)
					g.Close()
					if err != nil {
						return err
					}
					pos.offset += n
				}
			}
			pos = logPos{index: next}
			continue
		}
		if !follow {
			return nil
		}
		if ticker == nil {
			ticker = time.NewTicker(logPollInterval)
			defer ticker.Stop()
		}
		idle++
		if taskDead != nil && idle%logTaskCheckEvery == 0 && taskDead() {
			// One last look: the task's final words may be unread.
			if g, err := ls.open(pos.index); err == nil {
				_, err := ls.copyFrom(ctx, g, pos, out, buf)
				g.Close()
				return err
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

// nextFile returns the index of the first file after index.
func nextFile(files []logFile, index int) (int, bool) {
	for _, f := range files {
		if f.index > index {
			return f.index, true
		}
	}
	return 0, false
}

// open opens the file of index: a regular file only, never blocking in
// open and never through a link (allocfs.OpenNoFollow).
func (ls *logStream) open(index int) (*os.File, error) {
	name := ls.prefix + strconv.Itoa(index)
	return allocfs.OpenNoFollow(filepath.Join(ls.dir, name), ls.relDir+"/"+name)
}

// copyFrom copies f from pos.offset to its current end, or until ctx
// ends, and returns the number of bytes sent.
func (ls *logStream) copyFrom(ctx context.Context, f *os.File, pos logPos, out *logWriter, buf []byte) (int64, error) {
	if _, err := f.Seek(pos.offset, io.SeekStart); err != nil {
		return 0, err
	}
	var sent int64
	for {
		if err := ctx.Err(); err != nil {
			return sent, err
		}
		n, err := f.Read(buf)
		if n > 0 {
			name := ls.relDir + "/" + ls.prefix + strconv.Itoa(pos.index)
			if werr := out.write(buf[:n], name, pos.offset+sent); werr != nil {
				return sent, werr
			}
			sent += int64(n)
		}
		if errors.Is(err, io.EOF) {
			return sent, nil
		}
		if err != nil {
			return sent, err
		}
	}
}

// logWriter sends stream data, raw or as frames, flushing each piece.
type logWriter struct {
	w     io.Writer
	rc    *http.ResponseController
	plain bool
}

func (lw *logWriter) write(data []byte, file string, offset int64) error {
	if lw.plain {
		if _, err := lw.w.Write(data); err != nil {
			return err
		}
	} else if err := json.NewEncoder(lw.w).Encode(&LogFrame{Offset: offset, Data: data, File: file}); err != nil {
		return err
	}
	return lw.rc.Flush()
}
