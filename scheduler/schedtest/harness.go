package schedtest

import (
	"sync"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// epoch is the harness clock's starting time. It is never written.
var epoch = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// Harness runs schedulers against a real *state.Store without Raft: it
// writes through the same commands the servers use (encoded and applied
// like log entries), implements Planner by committing each plan with the
// plan applier's command (PlanApplyCommand) and writing evals as workers
// do, and records every plan and eval change for tests to check.
// Its clock is fixed (Now, advanced by tests) and its IDs are sequential,
// so a run is reproducible.
type Harness struct {
	t     TestingT
	log   *Log
	ids   IDs
	Store *store.Store

	mu sync.Mutex
	// Now is the clock schedulers and commands see.
	Now time.Time

	// Plans, Results and the eval lists record what schedulers did.
	Plans          []*scheduler.Plan
	Results        []*scheduler.PlanResult
	CreatedEvals   []*state.Evaluation
	UpdatedEvals   []*state.Evaluation
	ReblockedEvals []*state.Evaluation

	// CheckFit makes SubmitPlan check the plan as the plan applier does
	// (EvaluatePlan): a node whose placements do not fit or that may not
	// take them is left out of the commit, and the result asks for a
	// refresh.
	CheckFit bool
	// PlanFilter, when set, decides what of a plan commits (a hook for
	// partial-commit tests); it runs instead of CheckFit.
	PlanFilter func(*scheduler.Plan) *scheduler.PlanResult
	// CloseSeparately makes SubmitPlan ignore a plan's EvalUpdate and
	// CreatedEvals, as a planner that writes the eval's status in an entry
	// of its own does.
	CloseSeparately bool
}

var _ scheduler.Planner = (*Harness)(nil)

// NewHarness returns a harness with an empty store.
func NewHarness(t TestingT) *Harness {
	t.Helper()
	log := NewLog(t)
	return &Harness{t: t, log: log, Store: log.Store, Now: epoch}
}

// Config returns a scheduler config on the harness clock and IDs.
func (h *Harness) Config() scheduler.Config {
	return scheduler.Config{Now: h.Clock, NewID: h.NextID}
}

// Clock returns the harness clock's time.
func (h *Harness) Clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.Now
}

// Advance moves the harness clock forward.
func (h *Harness) Advance(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Now = h.Now.Add(d)
}

// NextID returns the next sequential UUID-shaped ID.
func (h *Harness) NextID() string { return h.ids.Next() }

// Apply encodes and applies one command at the next index, failing the
// test when it errors, and returns the command's response.
func (h *Harness) Apply(t store.MessageType, req any) any {
	h.t.Helper()
	resp, err := h.apply(t, req)
	if err != nil {
		h.t.Fatalf("apply command %d: %v", t, err)
	}
	return resp
}

func (h *Harness) apply(t store.MessageType, req any) (any, error) {
	resp, _, err := h.log.Apply(t, req)
	return resp, err
}

// UpsertNodes registers nodes.
func (h *Harness) UpsertNodes(nodes ...*state.Node) {
	h.t.Helper()
	for _, n := range nodes {
		h.Apply(store.NodeRegisterRequestType, &store.NodeRegisterRequest{Node: n})
	}
}

// SetNodeStatus records a node's status (e.g. down).
func (h *Harness) SetNodeStatus(id, status string) {
	h.t.Helper()
	h.Apply(store.NodeUpdateStatusRequestType, &store.NodeUpdateStatusRequest{
		NodeID: id, Status: status, UpdatedAt: h.Clock().Unix(),
	})
}

// UpsertJob registers a job version (no eval) and returns it as stored.
func (h *Harness) UpsertJob(job *state.Job) *state.Job {
	h.t.Helper()
	h.Apply(store.JobRegisterRequestType, &store.JobRegisterRequest{Job: job, Now: h.Clock().UnixNano()})
	stored, err := h.Store.JobByID(nil, job.Namespace, job.ID)
	if err != nil || stored == nil {
		h.t.Fatalf("read back job %q: %v", job.ID, err)
	}
	return stored
}

// StopJob stops a job (deregister without purge), with noShutdownDelay
// as the stop request says.
func (h *Harness) StopJob(namespace, id string, noShutdownDelay bool) {
	h.t.Helper()
	h.Apply(store.JobDeregisterRequestType, &store.JobDeregisterRequest{
		Namespace: namespace, JobID: id, NoShutdownDelay: noShutdownDelay, Now: h.Clock().UnixNano(),
	})
}

// UpsertAllocs writes allocations as a plan would.
func (h *Harness) UpsertAllocs(allocs ...*state.Allocation) {
	h.t.Helper()
	h.Apply(store.AllocUpdateRequestType, &store.AllocUpdateRequest{Allocs: allocs, Now: h.Clock().UnixNano()})
}

// ClientUpdate records what a client reports about allocations.
func (h *Harness) ClientUpdate(allocs ...*state.Allocation) {
	h.t.Helper()
	h.Apply(store.AllocClientUpdateRequestType, &store.AllocClientUpdateRequest{Allocs: allocs, Now: h.Clock().UnixNano()})
}

// NewEval creates (and stores) a pending eval of job.
func (h *Harness) NewEval(job *state.Job, trigger string) *state.Evaluation {
	h.t.Helper()
	now := h.Clock().UnixNano()
	e := &state.Evaluation{
		ID:             h.NextID(),
		Namespace:      job.Namespace,
		Priority:       job.Priority,
		Type:           job.Type,
		TriggeredBy:    trigger,
		JobID:          job.ID,
		JobModifyIndex: job.JobModifyIndex,
		Status:         state.EvalStatusPending,
		CreateTime:     now,
		ModifyTime:     now,
	}
	h.Apply(store.EvalUpdateRequestType, &store.EvalUpdateRequest{Evals: []*state.Evaluation{e}})
	stored, err := h.Store.EvalByID(nil, e.ID)
	if err != nil || stored == nil {
		h.t.Fatalf("read back eval: %v", err)
	}
	return stored
}

// Process runs the scheduler that factory builds on a snapshot of the
// store, with the harness as its planner.
func (h *Harness) Process(factory scheduler.Factory, eval *state.Evaluation) error {
	h.t.Helper()
	snap, err := h.Store.Snapshot()
	if err != nil {
		h.t.Fatalf("snapshot: %v", err)
	}
	return factory(h.Config(), snap, h).Process(eval)
}

// SubmitPlan commits the plan (all of it, or what CheckFit or PlanFilter
// accept) with the command the plan applier writes (leader.PlanApplyCommand):
// a plan committed whole carries its EvalUpdate and CreatedEvals, recorded
// as UpdateEval and CreateEval record them, unless CloseSeparately is set;
// a plan committed at all carries its FollowupEvals, recorded as created.
func (h *Harness) SubmitPlan(plan *scheduler.Plan) (*scheduler.PlanResult, scheduler.State, error) {
	h.mu.Lock()
	h.Plans = append(h.Plans, plan)
	filter, check, separately := h.PlanFilter, h.CheckFit, h.CloseSeparately
	h.mu.Unlock()

	var result *scheduler.PlanResult
	var rejected []scheduler.Rejection
	switch {
	case filter != nil:
		result = filter(plan)
	case check:
		var err error
		if result, rejected, err = scheduler.EvaluatePlan(h.Store, nil, plan); err != nil {
			return nil, nil, err
		}
	default:
		result = &scheduler.PlanResult{NodeUpdate: plan.NodeUpdate, NodeAllocation: plan.NodeAllocation, NodePreemptions: plan.NodePreemptions, Deployment: plan.Deployment}
	}
	full, _, _ := result.FullCommit(plan)
	carry := !separately && plan.EvalUpdate != nil && full && len(rejected) == 0 && result.RefreshIndex == 0
	if !scheduler.ResultEmpty(result) || carry {
		c := scheduler.CommitOf(plan, result)
		req := &store.PlanApplyRequest{
			EvalID: plan.EvalID, Deployment: result.Deployment, Now: h.Clock().UnixNano(),
			Job: c.Job, JobAllocs: c.JobAllocs, Allocs: c.Allocs, Stops: c.Stops,
		}
		for _, e := range plan.FollowupEvals {
			req.Evals = append(req.Evals, e.Copy())
		}
		for _, e := range c.Evals { // evaluations of preempted jobs
			req.Evals = append(req.Evals, e.Copy())
		}
		if carry {
			for _, e := range plan.CreatedEvals {
				req.EvalStatus = append(req.EvalStatus, e.Copy())
			}
			req.EvalStatus = append(req.EvalStatus, plan.EvalUpdate.Copy())
		}
		if _, err := h.apply(store.PlanApplyRequestType, req); err != nil {
			return nil, nil, err
		}
		h.mu.Lock()
		h.CreatedEvals = append(h.CreatedEvals, plan.FollowupEvals...)
		h.CreatedEvals = append(h.CreatedEvals, c.Evals...)
		h.mu.Unlock()
		if carry {
			result.EvalUpdated = true
			h.mu.Lock()
			h.CreatedEvals = append(h.CreatedEvals, plan.CreatedEvals...)
			h.UpdatedEvals = append(h.UpdatedEvals, plan.EvalUpdate)
			h.mu.Unlock()
		}
	}
	h.mu.Lock()
	result.AllocIndex = h.log.Index()
	h.Results = append(h.Results, result)
	h.mu.Unlock()
	if full {
		return result, nil, nil
	}
	result.RefreshIndex = result.AllocIndex
	snap, err := h.Store.Snapshot()
	if err != nil {
		return nil, nil, err
	}
	return result, snap, nil
}

// UpdateEval records and stores the eval.
func (h *Harness) UpdateEval(e *state.Evaluation) error {
	h.mu.Lock()
	h.UpdatedEvals = append(h.UpdatedEvals, e)
	h.mu.Unlock()
	return h.writeEval(e)
}

// CreateEval records and stores the eval.
func (h *Harness) CreateEval(e *state.Evaluation) error {
	h.mu.Lock()
	h.CreatedEvals = append(h.CreatedEvals, e)
	h.mu.Unlock()
	return h.writeEval(e)
}

// ReblockEval records and stores the eval.
func (h *Harness) ReblockEval(e *state.Evaluation) error {
	h.mu.Lock()
	h.ReblockedEvals = append(h.ReblockedEvals, e)
	h.mu.Unlock()
	return h.writeEval(e)
}

// writeEval stores an eval as a worker does, which also sets its job's
// queued counts.
func (h *Harness) writeEval(e *state.Evaluation) error {
	_, err := h.apply(store.EvalStatusUpdateRequestType, &store.EvalStatusUpdateRequest{Evals: []*state.Evaluation{e.Copy()}})
	return err
}

// LastPlan returns the last plan submitted, failing the test when none
// was.
func (h *Harness) LastPlan() *scheduler.Plan {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.Plans) == 0 {
		h.t.Fatalf("no plan was submitted")
	}
	return h.Plans[len(h.Plans)-1]
}

// LastEval returns the last eval update, failing the test when none was.
func (h *Harness) LastEval() *state.Evaluation {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.UpdatedEvals) == 0 {
		h.t.Fatalf("no eval was updated")
	}
	return h.UpdatedEvals[len(h.UpdatedEvals)-1]
}

// LiveAllocs returns the job's allocations that are not terminal.
func (h *Harness) LiveAllocs(namespace, jobID string) []*state.Allocation {
	h.t.Helper()
	all, err := h.Store.AllocsByJob(nil, namespace, jobID, false)
	if err != nil {
		h.t.Fatalf("read allocs: %v", err)
	}
	var out []*state.Allocation
	for _, a := range all {
		if !a.Terminal() {
			out = append(out, a)
		}
	}
	return out
}
