package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/schedhq/sched/state"
)

// Operator is the client of /v1/operator: the Raft configuration and
// snapshots.
type Operator struct{ c *Client }

// Operator returns the operator endpoints.
func (c *Client) Operator() *Operator { return &Operator{c: c} }

// RaftGetConfiguration returns the Raft configuration, as the leader knows
// it unless q.AllowStale.
func (o *Operator) RaftGetConfiguration(ctx context.Context, q *QueryOptions) (*state.RaftConfiguration, error) {
	out, _, err := get[*state.RaftConfiguration](ctx, o.c, "/v1/operator/raft/configuration", nil, q)
	return out, err
}

// RaftRemovePeerByID removes the server with the Raft ID from the
// configuration.
func (o *Operator) RaftRemovePeerByID(ctx context.Context, id string, w *WriteOptions) error {
	_, err := o.c.write(ctx, http.MethodDelete, "/v1/operator/raft/peer", url.Values{"id": {id}}, w, nil, nil)
	return err
}

// RaftRemovePeerByAddress removes the server with the Raft address from
// the configuration.
func (o *Operator) RaftRemovePeerByAddress(ctx context.Context, addr string, w *WriteOptions) error {
	_, err := o.c.write(ctx, http.MethodDelete, "/v1/operator/raft/peer", url.Values{"address": {addr}}, w, nil, nil)
	return err
}

// Snapshot streams a snapshot archive of the cluster's state (the
// leader's, unless q.AllowStale). The caller must close it. A stream that
// ends early is truncated, and SnapshotRestore refuses a truncated archive.
func (o *Operator) Snapshot(ctx context.Context, q *QueryOptions) (io.ReadCloser, error) {
	params := url.Values{}
	token := q.apply(o.c.cfg, params)
	resp, err := o.c.stream(ctx, http.MethodGet, "/v1/operator/snapshot", params, token, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// SnapshotRestore replaces the cluster's state with the archive read from
// r, which Snapshot produced.
func (o *Operator) SnapshotRestore(ctx context.Context, r io.Reader, w *WriteOptions) error {
	params := url.Values{}
	token := w.apply(o.c.cfg, params)
	resp, err := o.c.stream(ctx, http.MethodPut, "/v1/operator/snapshot", params, token, r)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// stream is do for bodies that are not JSON: body is sent as is, and a 2xx
// response is returned with its body unread.
func (c *Client) stream(ctx context.Context, method, path string, params url.Values, token string, body io.Reader) (*http.Response, error) {
	target := c.base + path
	if len(params) > 0 {
		target += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, fmt.Errorf("api: build %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	if token != "" {
		req.Header.Set(HeaderToken, token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("api: %s %s: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
		return nil, &StatusError{Code: resp.StatusCode, Body: strings.TrimSpace(string(msg))}
	}
	return resp, nil
}
