package store

import (
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

// Runs executed as jobs (state/mgmt/run_exec.go, docs/terraform.md): the
// commands of the leader's run executor and of the workers' reports. Each
// checks the run's lifecycle again, so a step decided on an older state
// (a run canceled meanwhile) is refused (ErrConflict) and changes nothing.

// Command types of run execution (range 95-99; agent pools take 98-99,
// agent_pools.go).
const (
	RunPhaseStartRequestType  MessageType = 95
	RunPhaseUpdateRequestType MessageType = 96
	RunLogAppendRequestType   MessageType = 97
)

// RunPhaseStartRequest starts a run's plan or apply: it creates
// Namespace when missing, registers Job with Eval (as a job register
// does), and moves the run to plan_queued or apply_queued with the job's
// ID. The plan records TerraformVersion and WorkerSecret; the apply locks
// the workspace for the run (unless its creator holds the lock), so that
// the state it saves follows the workspace's lock rules.
type RunPhaseStartRequest struct {
	RunID            string
	Phase            string
	Namespace        *state.Namespace
	Job              *state.Job
	Eval             *state.Evaluation
	TerraformVersion string
	WorkerSecret     string
	Now              time.Time
}

// RunPhaseUpdateRequest moves a run along its execution: to Status
// (planning, applying: the phase's job runs; errored, with Message: the
// executor gave up), or by Result, the worker's report of its phase. A
// run that ends unlocks the workspace if the run holds its lock, and
// settles its phases (SettlePhases).
type RunPhaseUpdateRequest struct {
	RunID   string
	Phase   string
	Status  string
	Message string
	Result  *mgmt.PlanResult
	Now     time.Time
}

// RunLogAppendRequest appends a chunk of a worker's output to its phase's
// log (bounded by mgmt.MaxRunLogBytes) while the phase has not ended.
type RunLogAppendRequest struct {
	RunID string
	Phase string
	Data  []byte
}

// Check bounds the chunk.
func (r *RunLogAppendRequest) Check() error {
	if len(r.Data) > mgmt.MaxRunLogChunk {
		return state.Invalidf("Data", "%d bytes is over the chunk limit of %d", len(r.Data), mgmt.MaxRunLogChunk)
	}
	return nil
}

func requirePhase(r *mgmt.Run, phase string) (*mgmt.RunPhase, error) {
	p := r.Phase(phase)
	if p == nil {
		return nil, state.Invalidf("Phase", "%q is not plan or apply", phase)
	}
	return p, nil
}

func applyRunPhaseStart(t *writeTxn, req *RunPhaseStartRequest) (any, error) {
	r, err := requireRun(t, req.RunID)
	if err != nil {
		return nil, err
	}
	c := r.Copy()
	p, err := requirePhase(c, req.Phase)
	if err != nil {
		return nil, err
	}
	queued := mgmt.RunPlanQueued
	if req.Phase == mgmt.PhaseApply {
		queued = mgmt.RunApplyQueued
	}
	if !mgmt.RunCanAdvance(r.Status, queued) {
		return nil, state.Conflictf("run %q is %s: its %s cannot start", r.ID, r.Status, req.Phase)
	}
	if req.Job == nil || req.Job.Namespace != mgmt.RunNamespace {
		return nil, state.Invalidf("Job", "a job in namespace %q is required", mgmt.RunNamespace)
	}
	if req.Phase == mgmt.PhaseApply {
		if err := lockForRun(t, r, req.Now); err != nil {
			return nil, err
		}
	} else {
		c.TerraformVersion, c.WorkerSecret = req.TerraformVersion, req.WorkerSecret
	}
	if req.Namespace != nil {
		ns, err := first[*state.Namespace](nil, t.Txn, TableNamespaces, indexID, req.Namespace.Name)
		if err != nil {
			return nil, err
		}
		if ns == nil {
			if _, err := applyNamespaceUpsert(t, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{req.Namespace}}); err != nil {
				return nil, err
			}
		}
	}
	if _, err := applyJobRegister(t, &JobRegisterRequest{Job: req.Job, Eval: req.Eval, Now: req.Now.UnixNano()}); err != nil {
		return nil, err
	}
	p.JobID = req.Job.ID
	p.SetStatus(mgmt.PhaseQueued, req.Now)
	c.Status = queued
	c.StatusTimestamps[queued] = mgmt.Time(req.Now)
	c.ModifyIndex = t.index
	return c, t.insert(TableRuns, c)
}

// lockForRun locks the run's workspace for it: a workspace its creator
// locked stays theirs (the run acts for them); one locked by anyone else
// is a conflict.
func lockForRun(t *writeTxn, r *mgmt.Run, now time.Time) error {
	w, err := requireWorkspace(t, r.WorkspaceID)
	if err != nil {
		return err
	}
	switch {
	case w.Locked && (w.LockedBy == r.ID || w.LockedBy == r.CreatedBy):
		return nil
	case w.Locked:
		return state.Conflictf("workspace %q is locked by %s: the run cannot apply", w.ID, w.LockedBy)
	}
	_, err = applyWorkspaceLock(t, &WorkspaceLockRequest{ID: w.ID, LockedBy: r.ID, Reason: "locked by " + r.ID, Now: now})
	return err
}

// endRun settles a run that reached a final status and releases the
// workspace's lock if the run holds it.
func endRun(t *writeTxn, c *mgmt.Run, now time.Time) error {
	if !mgmt.RunIsFinal(c.Status) {
		return nil
	}
	c.SettlePhases(now)
	w, err := requireWorkspace(t, c.WorkspaceID)
	if err != nil {
		return err
	}
	if w.Locked && w.LockedBy == c.ID {
		_, err = applyWorkspaceUnlock(t, &WorkspaceUnlockRequest{ID: w.ID, By: c.ID, Now: now})
	}
	return err
}

func applyRunPhaseUpdate(t *writeTxn, req *RunPhaseUpdateRequest) (any, error) {
	r, err := requireRun(t, req.RunID)
	if err != nil {
		return nil, err
	}
	c := r.Copy()
	to := req.Status
	if req.Result != nil {
		p, err := requirePhase(c, req.Phase)
		if err != nil {
			return nil, err
		}
		if st := p.PhaseStatus(); st != mgmt.PhaseQueued && st != mgmt.PhaseRunning {
			return nil, state.Conflictf("the %s of run %q is %s: it takes no result", req.Phase, r.ID, st)
		}
		to = mgmt.RunAfterPhase(c, req.Phase, *req.Result)
		res := req.Result
		p.Additions, p.Changes, p.Destructions, p.Imports, p.HasChanges = res.Additions, res.Changes, res.Destructions, res.Imports, res.HasChanges
		if res.OK {
			p.SetStatus(mgmt.PhaseFinished, req.Now)
		} else {
			p.SetStatus(mgmt.PhaseErrored, req.Now)
			c.ErrorMessage = truncate(res.Error, mgmt.RunMessageMaxLen)
		}
		// A queued run whose worker already reported passes through
		// the working status, as the lifecycle has it.
		if working := map[string]string{mgmt.RunPlanQueued: mgmt.RunPlanning, mgmt.RunApplyQueued: mgmt.RunApplying}[r.Status]; working != "" {
			c.StatusTimestamps[working] = mgmt.Time(req.Now)
			r = c.Copy()
			r.Status = working
		}
	}
	if !mgmt.RunCanAdvance(r.Status, to) {
		return nil, state.Conflictf("run %q cannot go from %s to %s", r.ID, r.Status, to)
	}
	switch to {
	case mgmt.RunPlanning:
		c.Plan.SetStatus(mgmt.PhaseRunning, req.Now)
	case mgmt.RunApplying:
		c.Apply.SetStatus(mgmt.PhaseRunning, req.Now)
	case mgmt.RunErrored:
		if req.Message != "" {
			c.ErrorMessage = truncate(req.Message, mgmt.RunMessageMaxLen)
		}
	}
	c.Status = to
	c.StatusTimestamps[to] = mgmt.Time(req.Now)
	c.ModifyIndex = t.index
	if err := endRun(t, c, req.Now); err != nil {
		return nil, err
	}
	return c, t.insert(TableRuns, c)
}

func applyRunLogAppend(t *writeTxn, req *RunLogAppendRequest) (any, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	r, err := requireRun(t, req.RunID)
	if err != nil {
		return nil, err
	}
	c := r.Copy()
	p, err := requirePhase(c, req.Phase)
	if err != nil {
		return nil, err
	}
	if st := p.PhaseStatus(); st != mgmt.PhaseQueued && st != mgmt.PhaseRunning {
		return nil, state.Conflictf("the %s of run %q is %s: its log is closed", req.Phase, r.ID, st)
	}
	p.AppendLog(req.Data)
	c.ModifyIndex = t.index
	return c, t.insert(TableRuns, c)
}

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// runExecCommand returns this file's command of type t, if any.
func runExecCommand(t MessageType) (command, bool) {
	switch t {
	case RunPhaseStartRequestType:
		return handler(applyRunPhaseStart), true
	case RunPhaseUpdateRequestType:
		return handler(applyRunPhaseUpdate), true
	case RunLogAppendRequestType:
		return handler(applyRunLogAppend), true
	case AgentPoolUpsertRequestType:
		return handler(applyAgentPoolUpsert), true
	case AgentPoolDeleteRequestType:
		return handler(applyAgentPoolDelete), true
	}
	return command{}, false
}

// ToolVersionsOfFamily lists the tool versions of a family in creation
// order.
func (r reader) ToolVersionsOfFamily(ws memdb.WatchSet, family string) ([]*mgmt.ToolVersion, error) {
	return list[*mgmt.ToolVersion](ws, r.txn(), nil, TableToolVersions, indexMgFamily, family)
}
