package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// lifecycleRoutes registers the allocation lifecycle the client runs:
// restart and signal (stop, a server write, is the jobs API's).
func (s relay) lifecycleRoutes() {
	s.write("/v1/client/allocation/:alloc_id/restart", s.clientAllocRestart)
	s.write("/v1/client/allocation/:alloc_id/signal", s.clientAllocSignal)
}

// clientAllocRestart serves POST /v1/client/allocation/:alloc_id/restart
// (body state.AllocRestartRequest, optional): served by the local client
// or proxied to the allocation's node.
func (s relay) clientAllocRestart(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	var req state.AllocRestartRequest
	if err := codec.DecodeKeptBody(r, &req); err != nil {
		return nil, err
	}
	id := p.ByName("alloc_id")
	local, err := s.clientFor(w, r, id)
	if err != nil || local == nil {
		return alreadyWrittenOr(err)
	}
	return struct{}{}, local.AllocRestart(r.Context(), id, req.TaskName, req.AllTasks)
}

// clientAllocSignal serves POST /v1/client/allocation/:alloc_id/signal
// (body state.AllocSignalRequest, optional).
func (s relay) clientAllocSignal(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	var req state.AllocSignalRequest
	if err := codec.DecodeKeptBody(r, &req); err != nil {
		return nil, err
	}
	id := p.ByName("alloc_id")
	local, err := s.clientFor(w, r, id)
	if err != nil || local == nil {
		return alreadyWrittenOr(err)
	}
	return struct{}{}, local.AllocSignal(r.Context(), id, req.Task, req.Signal)
}
