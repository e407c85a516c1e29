package jobs

import (
	"net/http"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// The small named objects of the scheduler (namespaces, node pools,
// quotas and their usage) are read, listed and written the same way: by
// name, by name prefix, and with the body's Name reconciled with the path.

// readNamed serves the read of one object by name: get runs under the
// core's consistent or blocking read, its index is the highest of tables,
// and an absent object is a 404 naming kind.
func readNamed[T any](h *api, w http.ResponseWriter, r *http.Request, kind, name string, get func(memdb.WatchSet, string) (*T, error), tables ...string) (any, error) {
	var out *T
	err := h.core.Read(w, r, func(ws memdb.WatchSet, _ string) (uint64, error) {
		var err error
		out, err = get(ws, name)
		return h.maxIndex(tables...), err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, state.NotFoundf("%s %q", kind, name)
	}
	return out, nil
}

// listNamed serves a list of named objects whose name starts with the
// request's prefix parameter, and that keep (nil: all) lets through; its
// index is the highest of tables.
func listNamed[T any](h *api, w http.ResponseWriter, r *http.Request, all func(memdb.WatchSet) ([]*T, error), name func(*T) string, keep func(string) bool, tables ...string) (any, error) {
	prefix := h.core.Query(r).Get("prefix")
	var out []*T
	err := h.core.Read(w, r, func(ws memdb.WatchSet, _ string) (uint64, error) {
		objs, err := all(ws)
		out = out[:0]
		for _, o := range objs {
			if n := name(o); strings.HasPrefix(n, prefix) && (keep == nil || keep(n)) {
				out = append(out, o)
			}
		}
		return h.maxIndex(tables...), err
	})
	return nonNil(out), err
}

// nameFromPath reconciles the Name of a write's body with the name in its
// path (empty on the unnamed route): a missing Name takes the path's, a
// different one is a 400, and no name at all is a 400.
func nameFromPath(kind string, body *string, path string) error {
	if path != "" {
		if *body == "" {
			*body = path
		} else if *body != path {
			return codec.BadRequest("Name: %q does not match the %s in the path %q", *body, kind, path)
		}
	}
	if *body == "" {
		return codec.BadRequest("Name: required")
	}
	return nil
}
