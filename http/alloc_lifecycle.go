package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// lifecycleRoutes registers the allocation lifecycle: stop (a server
// write) and restart and signal (the client runs them).
func (s *Server) lifecycleRoutes() {
	s.write("/v1/allocation/:alloc_id/stop", s.allocStop)
	s.write("/v1/client/allocation/:alloc_id/restart", s.clientAllocRestart)
	s.write("/v1/client/allocation/:alloc_id/signal", s.clientAllocSignal)
}

// allocStop serves POST /v1/allocation/:alloc_id/stop, as Nomad does it:
// the allocation is marked to migrate (DesiredTransition.Migrate) and an
// evaluation of its job (TriggeredBy alloc-stop) is created in the same
// write; the scheduler stops it and places a replacement.
// ?no_shutdown_delay=true skips the group's shutdown delay.
func (s *Server) allocStop(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("alloc_id")
	noDelay, err := boolParam(r, "no_shutdown_delay")
	if err != nil {
		return nil, err
	}
	a, err := s.store.AllocByID(nil, id)
	if err != nil {
		return nil, err
	}
	if a == nil || !inNamespace(namespaceOf(r), a.Namespace) {
		return nil, state.NotFoundf("allocation %q", id)
	}
	job, err := s.store.JobByID(nil, a.Namespace, a.JobID)
	if err != nil {
		return nil, err
	}
	if job == nil {
		job = a.Job
	}
	if job == nil {
		return nil, state.NotFoundf("job %q of allocation %q", a.JobID, id)
	}
	yes := true
	tr := &state.DesiredTransition{Migrate: &yes}
	if noDelay {
		tr.NoShutdownDelay = &yes
	}
	now := s.cfg.Now().UnixNano()
	eval := s.newEval(job, 0, state.EvalTriggerAllocStop, now)
	eval.Namespace, eval.JobID = a.Namespace, a.JobID
	cmd := &store.AllocUpdateDesiredTransitionRequest{
		Allocs: map[string]*state.DesiredTransition{id: tr},
		Evals:  []*state.Evaluation{eval},
	}
	_, index, err := s.apply(w, r, store.AllocUpdateDesiredTransitionRequestType, cmd)
	if err != nil {
		return nil, err
	}
	return &state.AllocStopResponse{EvalID: eval.ID, Index: index}, nil
}

// clientAllocRestart serves POST /v1/client/allocation/:alloc_id/restart
// (body state.AllocRestartRequest, optional): served by the local client
// or proxied to the allocation's node.
func (s *Server) clientAllocRestart(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
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
func (s *Server) clientAllocSignal(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
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
