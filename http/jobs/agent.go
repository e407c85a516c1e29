package jobs

import (
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/clientapi"
	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

func (h clusterAPI) agentSelf(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	return withClientStats(h.cfg.Cluster.Self(), h.cfg.Client), nil
}

func (h clusterAPI) agentMembers(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	return h.cfg.Cluster.Members(), nil
}

// agentHealth serves GET /v1/agent/health: 200 when this server knows a
// cluster leader, 500 with ok=false otherwise, so a load balancer's health
// check takes servers without a leader out of rotation.
func (h clusterAPI) agentHealth(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	if !h.core.KnownLeader() {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		return &state.AgentHealthResponse{Server: &state.AgentHealth{OK: false, Message: "No cluster leader"}}, nil
	}
	return &state.AgentHealthResponse{Server: &state.AgentHealth{OK: true, Message: "ok"}}, nil
}

// agentJoin serves PUT /v1/agent/join?address=A&address=B: this agent
// contacts the gossip addresses. Reaching none of them is still a 200 with
// the reason in "error", as Nomad answers; no address at all is a 400.
func (h clusterAPI) agentJoin(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	var addrs []string
	for _, a := range h.core.Query(r)["address"] {
		for _, part := range strings.Split(a, ",") {
			if part = strings.TrimSpace(part); part != "" {
				addrs = append(addrs, part)
			}
		}
	}
	if len(addrs) == 0 {
		return nil, codec.BadRequest("address: at least one gossip address to join is required (?address=host:port)")
	}
	n, err := h.cfg.Cluster.Join(addrs)
	resp := &state.JoinResponse{NumJoined: n}
	if err != nil {
		resp.Error = err.Error()
	}
	return resp, nil
}

// withClientStats adds the local client's node ID to a server's
// /v1/agent/self under stats.client.node_id (dev mode), where `sched node
// status -self` looks for it. self is the Forwarder's fresh answer.
func withClientStats(self *state.AgentSelf, c clientapi.Client) *state.AgentSelf {
	if self == nil || c == nil || c.NodeID() == "" {
		return self
	}
	if self.Stats == nil {
		self.Stats = map[string]map[string]string{}
	}
	self.Stats["client"] = map[string]string{"node_id": c.NodeID()}
	return self
}
