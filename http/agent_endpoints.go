package http

import (
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"
)

// AgentMember is one server of GET /v1/agent/members (and the "member" of
// /v1/agent/self), in the shape Nomad's clients read.
type AgentMember struct {
	// Name is "<name>.<region>", as Nomad names servers.
	Name string
	// Addr and Port are the member's gossip address.
	Addr string
	Port uint16
	// Tags carry the server's metadata: id (its Raft ID), raft_addr,
	// http_addr, region, dc, expect (bootstrap_expect), build, role.
	Tags map[string]string
	// Status is alive, failed or left.
	Status      string
	ProtocolMin uint8
	ProtocolMax uint8
	ProtocolCur uint8
}

// ServerMembers is the answer of GET /v1/agent/members.
type ServerMembers struct {
	ServerName   string
	ServerRegion string
	ServerDC     string
	Members      []*AgentMember
}

// AgentSelf is the answer of GET /v1/agent/self. The lower-case keys are
// Nomad's.
type AgentSelf struct {
	// Config is a summary of the agent's configuration; secrets (the
	// gossip key) are never included.
	Config map[string]any `json:"config"`
	// Member is this server as gossip presents it.
	Member *AgentMember `json:"member"`
	// Stats groups counters: "raft" (hashicorp/raft's own), "serf"
	// (gossip member counts), "runtime" (Go runtime).
	Stats map[string]map[string]string `json:"stats"`
}

// AgentHealth is one role's health.
type AgentHealth struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// AgentHealthResponse is the answer of GET /v1/agent/health. Client is
// absent until client agents exist.
type AgentHealthResponse struct {
	Server *AgentHealth `json:"server,omitempty"`
	Client *AgentHealth `json:"client,omitempty"`
}

// JoinResponse is the answer of PUT /v1/agent/join.
type JoinResponse struct {
	NumJoined int    `json:"num_joined"`
	Error     string `json:"error"`
}

func (s *Server) agentSelf(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	return withClientStats(s.cfg.Forwarder.Self(), s.cfg.Client), nil // client_handler.go
}

func (s *Server) agentMembers(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	return s.cfg.Forwarder.Members(), nil
}

// agentHealth serves GET /v1/agent/health: 200 when this server knows a
// cluster leader, 500 with ok=false otherwise, so a load balancer's health
// check takes servers without a leader out of rotation.
func (s *Server) agentHealth(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	if !s.cfg.Cluster.KnownLeader() {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		return &AgentHealthResponse{Server: &AgentHealth{OK: false, Message: "No cluster leader"}}, nil
	}
	return &AgentHealthResponse{Server: &AgentHealth{OK: true, Message: "ok"}}, nil
}

// agentJoin serves PUT /v1/agent/join?address=A&address=B: this agent
// contacts the gossip addresses. Reaching none of them is still a 200 with
// the reason in "error", as Nomad answers; no address at all is a 400.
func (s *Server) agentJoin(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	var addrs []string
	for _, a := range r.URL.Query()["address"] {
		for _, part := range strings.Split(a, ",") {
			if part = strings.TrimSpace(part); part != "" {
				addrs = append(addrs, part)
			}
		}
	}
	if len(addrs) == 0 {
		return nil, badRequest("address: at least one gossip address to join is required (?address=host:port)")
	}
	n, err := s.cfg.Forwarder.Join(addrs)
	resp := &JoinResponse{NumJoined: n}
	if err != nil {
		resp.Error = err.Error()
	}
	return resp, nil
}
