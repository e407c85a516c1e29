package api

import (
	"context"
	"net/http"
	"net/url"
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

// SearchResponse is the answer of Search: matching IDs per context
// (jobs, nodes, allocs, evals, deployments), at most 20 each, and whether
// each list was cut.
type SearchResponse struct {
	Matches     map[string][]string
	Truncations map[string]bool
}

// Search lists the IDs that start with prefix in context ("all" or "":
// every context) of q's namespace ("*": every namespace).
func (c *Client) Search(ctx context.Context, prefix, searchContext string, q *QueryOptions) (*SearchResponse, error) {
	params := url.Values{}
	token := q.apply(c.cfg, params)
	var out SearchResponse
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/search", params: params, token: token,
		in: struct{ Prefix, Context string }{prefix, searchContext}, out: &out})
	if err != nil {
		return nil, err
	}
	return &out, nil
}
