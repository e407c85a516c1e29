package jobs

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// systemAPI serves /v1/system.
type systemAPI struct{ *api }

// systemGC serves PUT /v1/system/gc: the leader collects every terminal
// evaluation and allocation, dead job and down node that garbage
// collection may collect, now, whatever their age, and the request returns
// once that is committed.
func (h systemAPI) systemGC(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	leader, err := h.leader()
	if err != nil {
		return nil, err
	}
	if err := leader.ForceGC(r.Context()); err != nil {
		return nil, leaderError(err)
	}
	h.core.SetMeta(w, h.store.LatestIndex())
	return &struct{ Index uint64 }{h.store.LatestIndex()}, nil
}
