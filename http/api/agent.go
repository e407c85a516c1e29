package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/schedhq/sched/state"
)

// Agent is the client of /v1/agent: the agent the client talks to, not
// the cluster.
type Agent struct{ c *Client }

// Agent returns the agent endpoints.
func (c *Client) Agent() *Agent { return &Agent{c: c} }

// Self returns the agent's configuration summary, gossip member and stats.
func (a *Agent) Self(ctx context.Context) (*state.AgentSelf, error) {
	out, _, err := get[*state.AgentSelf](ctx, a.c, "/v1/agent/self", nil, nil)
	return out, err
}

// Members returns the servers gossip knows.
func (a *Agent) Members(ctx context.Context) (*state.ServerMembers, error) {
	out, _, err := get[*state.ServerMembers](ctx, a.c, "/v1/agent/members", nil, nil)
	return out, err
}

// Health returns the agent's health. An agent that knows no cluster
// leader answers 500, which comes back as a *StatusError.
func (a *Agent) Health(ctx context.Context) (*state.AgentHealthResponse, error) {
	out, _, err := get[*state.AgentHealthResponse](ctx, a.c, "/v1/agent/health", nil, nil)
	return out, err
}

// Join makes the agent join the gossip addresses and returns how many it
// reached; reaching none is an error carrying the agent's reason.
func (a *Agent) Join(ctx context.Context, addrs ...string) (int, error) {
	if len(addrs) == 0 {
		return 0, errors.New("api: join needs at least one address")
	}
	params := url.Values{"address": addrs}
	var out state.JoinResponse
	if _, err := a.c.write(ctx, http.MethodPut, "/v1/agent/join", params, nil, nil, &out); err != nil {
		return 0, err
	}
	if out.Error != "" {
		return out.NumJoined, errors.New(out.Error)
	}
	return out.NumJoined, nil
}
