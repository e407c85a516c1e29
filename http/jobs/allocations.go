package jobs

import (
	"net/http"
	"net/url"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// stubOptions say what an allocation list entry carries.
type stubOptions struct {
	resources  bool
	taskStates bool
}

// parseStubOptions reads resources (default false) and task_states
// (default true).
func parseStubOptions(q url.Values) (stubOptions, error) {
	o := stubOptions{taskStates: true}
	var err error
	if o.resources, err = codec.BoolParam(q, "resources"); err != nil {
		return o, err
	}
	if _, ok := q["task_states"]; ok {
		if o.taskStates, err = codec.BoolParam(q, "task_states"); err != nil {
			return o, err
		}
	}
	return o, nil
}

// allocStub makes a's list entry.
func allocStub(a *state.Allocation, o stubOptions) *state.AllocListStub {
	stub := a.Stub()
	if o.resources {
		stub.AllocatedResources = a.AllocatedResources
	}
	if !o.taskStates {
		stub.TaskStates = nil
	}
	return stub
}

// allocStubs makes the list entries of allocs, never null.
func allocStubs(allocs []*state.Allocation, o stubOptions) []*state.AllocListStub {
	out := make([]*state.AllocListStub, 0, len(allocs))
	for _, a := range allocs {
		out = append(out, allocStub(a, o))
	}
	return out
}

// AllocCompact is an allocation's entry in GET /v1/allocations with
// compact=true: where it runs, what it is meant to do and does, and what
// it holds, for a client that draws the whole cluster (the UI's
// topology): about 270 bytes where a stub with its resources takes 850.
type AllocCompact struct {
	ID, Name, Namespace, JobID, TaskGroup, NodeID string
	DesiredStatus, ClientStatus                   string
	// CPU (MHz) and MemoryMB are what the allocation's tasks were
	// granted, summed.
	CPU, MemoryMB int
	ModifyIndex   uint64
	// ModifyTime is the leader's clock (Unix nanoseconds) when it made
	// the last write to the allocation, as in the stub: for a client's
	// report, when the leader took it, just before writing it.
	ModifyTime int64
}

// compactOf makes a's compact entry.
func compactOf(a *state.Allocation) *AllocCompact {
	cpu, mem, _ := a.AllocatedResources.Totals()
	return &AllocCompact{ID: a.ID, Name: a.Name, Namespace: a.Namespace, JobID: a.JobID, TaskGroup: a.TaskGroup,
		NodeID: a.NodeID, DesiredStatus: a.DesiredStatus, ClientStatus: a.ClientStatus, CPU: cpu, MemoryMB: mem,
		ModifyIndex: a.ModifyIndex, ModifyTime: a.ModifyTime}
}

// parseCompact reads compact (default false); it answers its own shape,
// so resources=true and task_states=true alongside it are a 400.
func parseCompact(q url.Values) (bool, error) {
	compact, err := codec.BoolParam(q, "compact")
	if err != nil || !compact {
		return false, err
	}
	for _, other := range []string{"resources", "task_states"} {
		if on, err := codec.BoolParam(q, other); err != nil {
			return false, err
		} else if on {
			return false, codec.BadRequest("%s: not with compact=true, whose entries carry CPU and MemoryMB and no task states", other)
		}
	}
	return true, nil
}

// allocAPI serves /v1/allocations and /v1/allocation.
type allocAPI struct{ *api }

// allocRoutes registers the allocation reads.
func (h allocAPI) allocRoutes() {
	h.core.Route(http.MethodGet, "/v1/allocations", h.allocList)
	h.core.Route(http.MethodGet, "/v1/allocation/:alloc_id", h.allocRead)
	h.write("/v1/allocation/:alloc_id/stop", h.allocStop)
}

// allocList serves GET /v1/allocations: namespace (with *), prefix,
// filter (over the entry: AllocListStub, or AllocCompact with
// compact=true), per_page and next_token (an allocation ID), resources
// and task_states, or compact.
func (h allocAPI) allocList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	q := h.core.Query(r)
	opts, err := parseListOptions(q)
	if err != nil {
		return nil, err
	}
	so, err := parseStubOptions(q)
	if err != nil {
		return nil, err
	}
	compact, err := parseCompact(q)
	if err != nil {
		return nil, err
	}
	if compact {
		return readPage(h.api, w, r, opts, store.TableAllocs, h.store.Allocs,
			func(a *state.Allocation) (string, string) { return a.ID, a.Namespace },
			func(a *state.Allocation) (*AllocCompact, bool) { return compactOf(a), true })
	}
	return readPage(h.api, w, r, opts, store.TableAllocs, h.store.Allocs,
		func(a *state.Allocation) (string, string) { return a.ID, a.Namespace },
		func(a *state.Allocation) (*state.AllocListStub, bool) { return allocStub(a, so), true })
}

// allocRead serves GET /v1/allocation/:alloc_id: the whole allocation,
// with its job. An allocation of another namespace than the request's is
// a 404 (see codec.InNamespace).
func (h allocAPI) allocRead(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	return readByID(h.api, w, r, store.TableAllocs, "allocation", p.ByName("alloc_id"), h.store.AllocByID,
		func(a *state.Allocation) string { return a.Namespace })
}

// allocStop serves POST /v1/allocation/:alloc_id/stop, as Nomad does it:
// the allocation is marked to migrate (DesiredTransition.Migrate) and an
// evaluation of its job (TriggeredBy alloc-stop) is created in the same
// write; the scheduler stops it and places a replacement.
// ?no_shutdown_delay=true skips the group's shutdown delay.
func (h allocAPI) allocStop(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("alloc_id")
	noDelay, err := codec.BoolParam(h.core.Query(r), "no_shutdown_delay")
	if err != nil {
		return nil, err
	}
	a, err := h.store.AllocByID(nil, id)
	if err != nil {
		return nil, err
	}
	if a == nil || !codec.InNamespace(h.core.Namespace(r), a.Namespace) {
		return nil, state.NotFoundf("allocation %q", id)
	}
	job, err := h.store.JobByID(nil, a.Namespace, a.JobID)
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
	now := h.core.Now().UnixNano()
	eval := h.newEval(job, 0, state.EvalTriggerAllocStop, now)
	eval.Namespace, eval.JobID = a.Namespace, a.JobID
	cmd := &store.AllocUpdateDesiredTransitionRequest{
		Allocs: map[string]*state.DesiredTransition{id: tr},
		Evals:  []*state.Evaluation{eval},
	}
	_, index, err := h.core.Propose(w, r, store.AllocUpdateDesiredTransitionRequestType, cmd)
	if err != nil {
		return nil, err
	}
	return &state.AllocStopResponse{EvalID: eval.ID, Index: index}, nil
}
