package api

import (
	"context"
	"net/http"
)

// System is the client of /v1/system.
type System struct{ c *Client }

// System returns the system endpoints.
func (c *Client) System() *System { return &System{c: c} }

// GarbageCollect makes the leader collect every terminal evaluation and
// allocation, dead job and down node now, whatever their age; it returns
// once that is committed.
func (s *System) GarbageCollect(ctx context.Context, w *WriteOptions) (*WriteMeta, error) {
	return s.c.write(ctx, http.MethodPut, "/v1/system/gc", nil, w, nil, nil)
}
