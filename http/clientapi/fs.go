package clientapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/schedhq/sched/http/clientapi/allocfs"
	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// The allocation file system: GET /v1/client/fs/{ls,stat,cat,readat}/:alloc_id?path=
// read the allocation's directory and nothing else. path is relative to
// the allocation directory; a leading "/" names its root, as in Nomad
// ("/alloc/logs"), so a host path such as /etc/passwd names
// <alloc dir>/etc/passwd, which does not exist. A path that leaves the
// directory (through "..", or through a symbolic link that points
// outside) is a 400 and is not read. Opening goes through os.Root, so a
// link swapped in between the check and the open cannot lead out either.
//
// Only regular files are read (http/allocfs): cat and readat of a named
// pipe, a socket or a device are a 400 naming its type, and nothing is
// opened in a way that can block (a task's pipe used to hold a thread in
// open(2) for good). ls and stat list and describe such entries without
// opening them. Every read, logs included, takes a place under the
// client's caps (Client.FSGate): over one, a 429 at once.

// FSOps are the file system operations: GET /v1/client/fs/<op>/:alloc_id.
func FSOps() []string { return []string{"ls", "stat", "cat", "readat"} }

// maxFSPathBytes bounds the path parameter.
const maxFSPathBytes = 4096

// FSQuery is the parsed query of a file system request.
type FSQuery struct {
	rel    string // "." for the root
	shown  string // the path as the caller sent it, for messages
	offset int64
	limit  int64 // 0: to the end
}

// ParseFSQuery checks the path (lexically) and readat's offset and limit.
func ParseFSQuery(r *http.Request, op string) (FSQuery, error) {
	q := r.URL.Query()
	raw := q.Get("path")
	if raw == "" {
		if op == "cat" || op == "readat" {
			return FSQuery{}, codec.BadRequest("path: required query parameter")
		}
		raw = "/"
	}
	out := FSQuery{shown: raw}
	rel, err := allocRelPath(raw)
	if err != nil {
		return FSQuery{}, err
	}
	out.rel = rel
	if op == "readat" {
		var v state.ValidationError
		for _, f := range []struct {
			name string
			dst  *int64
		}{{"offset", &out.offset}, {"limit", &out.limit}} {
			s := q.Get(f.name)
			if s == "" {
				continue
			}
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				v.Add(f.name, "%q is not a non-negative integer", s)
				continue
			}
			*f.dst = n
		}
		if err := v.Err(); err != nil {
			return FSQuery{}, err
		}
	}
	return out, nil
}

// allocRelPath turns a caller's path into a path relative to the
// allocation directory, refusing one that climbs out of it.
func allocRelPath(p string) (string, error) {
	if len(p) > maxFSPathBytes {
		return "", codec.BadRequest("path: %d bytes; at most %d", len(p), maxFSPathBytes)
	}
	if strings.ContainsRune(p, 0) {
		return "", codec.BadRequest("path: contains a NUL byte")
	}
	rel := strings.TrimLeft(p, "/")
	if rel == "" {
		return ".", nil
	}
	if !filepath.IsLocal(rel) {
		return "", codec.BadRequest("path %q escapes the allocation directory", p)
	}
	return filepath.Clean(rel), nil
}

// errFSEscapes is the answer to a path that a symbolic link leads out of
// the allocation directory.
func errFSEscapes(shown string) error {
	return codec.BadRequest("path %q escapes the allocation directory (through a symbolic link)", shown)
}

// checkInside resolves every symbolic link of rel under dir and refuses a
// path that ends outside dir. A path that does not exist is a 404.
func checkInside(dir string, q FSQuery) error {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, q.rel))
	if errors.Is(err, fs.ErrNotExist) {
		return state.NotFoundf("no file %q in the allocation directory", q.shown)
	}
	if err != nil {
		return codec.BadRequest("path %q: %v", q.shown, err)
	}
	if inside, err := filepath.Rel(root, real); err != nil || !filepath.IsLocal(inside) && inside != "." {
		return errFSEscapes(q.shown)
	}
	return nil
}

// fsError maps an error of an os.Root operation.
func fsError(err error, q FSQuery) error {
	var nr *allocfs.NotRegularError
	switch {
	case errors.As(err, &nr) && nr.Mode.IsDir():
		return codec.BadRequest("path %q is a directory (list it with /v1/client/fs/ls)", q.shown)
	case errors.As(err, &nr):
		return &codec.CodedError{Code: http.StatusBadRequest, Message: nr.Error(), Err: err}
	case errors.Is(err, fs.ErrNotExist):
		return state.NotFoundf("no file %q in the allocation directory", q.shown)
	case strings.Contains(err.Error(), "escapes"):
		return errFSEscapes(q.shown)
	}
	return fmt.Errorf("path %q: %w", q.shown, err)
}

// admitFSRead takes a place for one read of allocID's files under c's
// caps; over one it is a 429, with Retry-After, at once.
func admitFSRead(w http.ResponseWriter, c Client, allocID string) (release func(), err error) {
	release, err = c.FSGate().Acquire(allocID)
	if busy, ok := errors.AsType[*allocfs.BusyError](err); ok {
		w.Header().Set("Retry-After", "1")
		return nil, &codec.CodedError{Code: http.StatusTooManyRequests, Message: busy.Error(), Err: err}
	}
	return release, err
}

// ServeFS runs op against the allocation directory of the local client c.
func ServeFS(w http.ResponseWriter, r *http.Request, c Client, allocID, op string, q FSQuery) (any, error) {
	dir, err := c.AllocDir(allocID)
	if err != nil {
		return nil, err
	}
	release, err := admitFSRead(w, c, allocID)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := checkInside(dir, q); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	switch op {
	case "stat":
		info, err := root.Stat(q.rel)
		if err != nil {
			return nil, fsError(err, q)
		}
		return fileInfo(info), nil
	case "ls":
		return listDir(root, q)
	}
	f, err := allocfs.OpenInRoot(root, q.rel, q.shown)
	if err != nil {
		return nil, fsError(err, q)
	}
	defer f.Close()
	// A caller that goes away ends the copy: closing the file fails the
	// next read (or sendfile) at once.
	stop := context.AfterFunc(r.Context(), func() { f.Close() })
	defer stop()
	var body io.Reader = f
	if op == "readat" {
		if _, err := f.Seek(q.offset, io.SeekStart); err != nil {
			return nil, fsError(err, q)
		}
		if q.limit > 0 {
			body = io.LimitReader(f, q.limit)
		}
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, body)
	return codec.AlreadyWritten{}, nil
}

// listDir lists a directory, sorted by name; links are listed as links,
// not followed. Only a directory is opened (O_DIRECTORY, and O_NONBLOCK:
// a pipe swapped in after the check fails the open rather than block it).
func listDir(root *os.Root, q FSQuery) ([]*state.AllocFileInfo, error) {
	info, err := root.Stat(q.rel)
	if err != nil {
		return nil, fsError(err, q)
	}
	if !info.IsDir() {
		return nil, codec.BadRequest("path %q is not a directory (read it with /v1/client/fs/cat)", q.shown)
	}
	f, err := root.OpenFile(q.rel, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ENOTDIR) {
		return nil, codec.BadRequest("path %q is not a directory (read it with /v1/client/fs/cat)", q.shown)
	}
	if err != nil {
		return nil, fsError(err, q)
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, fsError(err, q)
	}
	out := make([]*state.AllocFileInfo, 0, len(entries))
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, fileInfo(fi))
	}
	slices.SortFunc(out, func(a, b *state.AllocFileInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func fileInfo(fi fs.FileInfo) *state.AllocFileInfo {
	return &state.AllocFileInfo{Name: fi.Name(), IsDir: fi.IsDir(), Size: fi.Size(), FileMode: fi.Mode().String(), ModTime: fi.ModTime()}
}
