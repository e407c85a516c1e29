package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// systemGC serves PUT /v1/system/gc: the leader collects every terminal
// evaluation and allocation, dead job and down node that garbage
// collection may collect, now, whatever their age, and the request returns
// once that is committed.
func (s *Server) systemGC(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	leader, err := s.leader()
	if err != nil {
		return nil, err
	}
	if err := leader.ForceGC(r.Context()); err != nil {
		return nil, leaderError(err)
	}
	s.setMeta(w, s.store.LatestIndex())
	return &struct{ Index uint64 }{s.store.LatestIndex()}, nil
}
