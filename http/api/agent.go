package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// Agent is the client of /v1/agent: the agent the client talks to, not
// the cluster.
type Agent struct{ c *Client }

// Agent returns the agent endpoints.
func (c *Client) Agent() *Agent { return &Agent{c: c} }

// AgentMember is one server known through gossip.
type AgentMember struct {
	// Name is "<name>.<region>".
	Name string
	// Addr and Port are the gossip address.
	Addr string
	Port uint16
	// Tags hold the server's metadata: id (Raft ID), raft_addr, http_addr,
	// region, dc, expect, build, role.
	Tags map[string]string
	// Status is alive, failed or left.
	Status      string
	ProtocolMin uint8
	ProtocolMax uint8
	ProtocolCur uint8
}

// ServerMembers is the gossip member list with the answering server's
// identity.
type ServerMembers struct {
	ServerName   string
	ServerRegion string
	ServerDC     string
	Members      []*AgentMember
}

// AgentSelf describes the answering agent.
type AgentSelf struct {
	Config map[string]any               `json:"config"`
	Member *AgentMember                 `json:"member"`
	Stats  map[string]map[string]string `json:"stats"`
}

// AgentHealth is one role's health.
type AgentHealth struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// AgentHealthResponse is the agent's health per role.
type AgentHealthResponse struct {
	Server *AgentHealth `json:"server,omitempty"`
	Client *AgentHealth `json:"client,omitempty"`
}

// joinResponse is the body of PUT /v1/agent/join.
type joinResponse struct {
	NumJoined int    `json:"num_joined"`
	Error     string `json:"error"`
}

// Self returns the agent's configuration summary, gossip member and stats.
func (a *Agent) Self(ctx context.Context) (*AgentSelf, error) {
	out, _, err := get[*AgentSelf](ctx, a.c, "/v1/agent/self", nil, nil)
	return out, err
}

// Members returns the servers gossip knows.
func (a *Agent) Members(ctx context.Context) (*ServerMembers, error) {
	out, _, err := get[*ServerMembers](ctx, a.c, "/v1/agent/members", nil, nil)
	return out, err
}

// Health returns the agent's health. An agent that knows no cluster
// leader answers 500, which comes back as a *StatusError.
func (a *Agent) Health(ctx context.Context) (*AgentHealthResponse, error) {
	out, _, err := get[*AgentHealthResponse](ctx, a.c, "/v1/agent/health", nil, nil)
	return out, err
}

// Join makes the agent join the gossip addresses and returns how many it
// reached; reaching none is an error carrying the agent's reason.
func (a *Agent) Join(ctx context.Context, addrs ...string) (int, error) {
	if len(addrs) == 0 {
		return 0, errors.New("api: join needs at least one address")
	}
	params := url.Values{"address": addrs}
	var out joinResponse
	if _, err := a.c.write(ctx, http.MethodPut, "/v1/agent/join", params, nil, nil, &out); err != nil {
		return 0, err
	}
	if out.Error != "" {
		return out.NumJoined, errors.New(out.Error)
	}
	return out.NumJoined, nil
}
