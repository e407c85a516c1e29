package jobs

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// statusLeader serves GET /v1/status/leader: the leader's Raft address as
// a JSON string ("10.0.0.1:4647"), or "" when this server knows no leader,
// as Nomad answers. It is this server's view; no barrier.
func (h clusterAPI) statusLeader(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	return h.cfg.Cluster.LeaderRaftAddr(), nil
}

// statusPeers serves GET /v1/status/peers: the Raft addresses of the
// voters of the latest configuration this server knows.
func (h clusterAPI) statusPeers(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	conf, err := h.cfg.Cluster.RaftConfiguration()
	if err != nil {
		return nil, err
	}
	peers := []string{}
	for _, srv := range conf.Servers {
		if srv.Voter {
			peers = append(peers, srv.Address)
		}
	}
	return peers, nil
}
