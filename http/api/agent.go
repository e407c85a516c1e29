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

// KeyringList lists the gossip keys of every server: for each key, how
// many servers hold it and how many send with it.
func (a *Agent) KeyringList(ctx context.Context) (*state.KeyringResponse, error) {
	out, _, err := get[*state.KeyringResponse](ctx, a.c, "/v1/agent/keyring/list", nil, nil)
	return out, err
}

// KeyringInstall adds a gossip key (base64) on every server.
func (a *Agent) KeyringInstall(ctx context.Context, key string) (*state.KeyringResponse, error) {
	return a.keyringOp(ctx, "install", key)
}

// KeyringUse makes an installed key the one every server sends with.
func (a *Agent) KeyringUse(ctx context.Context, key string) (*state.KeyringResponse, error) {
	return a.keyringOp(ctx, "use", key)
}

// KeyringRemove removes a key that is no server's primary from every
// server.
func (a *Agent) KeyringRemove(ctx context.Context, key string) (*state.KeyringResponse, error) {
	return a.keyringOp(ctx, "remove", key)
}

func (a *Agent) keyringOp(ctx context.Context, op, key string) (*state.KeyringResponse, error) {
	var out state.KeyringResponse
	if _, err := a.c.write(ctx, http.MethodPost, "/v1/agent/keyring/"+op, nil, nil, &state.KeyringRequest{Key: key}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
