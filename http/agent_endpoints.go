package http

import (
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

func (s *Server) agentSelf(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	return withClientStats(s.cfg.Forwarder.Self(), s.cfg.Client), nil // node_local.go
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
		return &state.AgentHealthResponse{Server: &state.AgentHealth{OK: false, Message: "No cluster leader"}}, nil
	}
	return &state.AgentHealthResponse{Server: &state.AgentHealth{OK: true, Message: "ok"}}, nil
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
		return nil, codec.BadRequest("address: at least one gossip address to join is required (?address=host:port)")
	}
	n, err := s.cfg.Forwarder.Join(addrs)
	resp := &state.JoinResponse{NumJoined: n}
	if err != nil {
		resp.Error = err.Error()
	}
	return resp, nil
}
