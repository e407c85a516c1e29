package api

import (
	"context"
)

// Status is the client of /v1/status: who leads, and who the Raft peers
// are, as the answering server sees it.
type Status struct{ c *Client }

// Status returns the status endpoints.
func (c *Client) Status() *Status { return &Status{c: c} }

// Leader returns the leader's Raft address ("10.0.0.1:4647"), or "" when
// the answering server knows no leader.
func (s *Status) Leader(ctx context.Context) (string, error) {
	out, _, err := get[string](ctx, s.c, "/v1/status/leader", nil, nil)
	return out, err
}

// Peers returns the Raft addresses of the cluster's voters.
func (s *Status) Peers(ctx context.Context) ([]string, error) {
	out, _, err := get[[]string](ctx, s.c, "/v1/status/peers", nil, nil)
	return out, err
}
