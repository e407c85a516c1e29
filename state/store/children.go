package store

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// Child jobs: dispatches of parameterized jobs and launches of periodic
// ones. Each is one command that registers the child and its evaluation
// (through applyJobRegister, so summaries and the parent's children counts
// follow), after checking the parent in the same transaction.

// Command types of child launches (the jobs range of commands.go).
const (
	JobDispatchRequestType    MessageType = 18
	PeriodicLaunchRequestType MessageType = 19
)

// TablePeriodicLaunch holds the latest launch of every periodic job.
const TablePeriodicLaunch = "periodic_launch"

func childTables() []tableDef {
	return []tableDef{{
		name: TablePeriodicLaunch,
		indexes: map[string]keyFunc{
			indexID: func(o any) []any { l := o.(*state.PeriodicLaunch); return []any{l.Namespace, l.ID} },
		},
		newRow: func() any { return new(state.PeriodicLaunch) },
	}}
}

// JobDispatchRequest registers a dispatched child of a parameterized job
// with its evaluation. The leader built both (IDs, payload, meta); Apply
// checks the parent is still a parameterized job that is not stopped, and
// answers an earlier child of the same parent dispatched with the same
// idempotency token instead of writing a new one.
type JobDispatchRequest struct {
	Child *state.Job
	Eval  *state.Evaluation
	Now   int64
}

// JobDispatchResponse is what Apply returns for a JobDispatchRequest.
type JobDispatchResponse struct {
	DispatchedJobID string
	EvalID          string
	EvalCreateIndex uint64
	JobCreateIndex  uint64
	// Existing is set when an earlier dispatch with the same token
	// answered and nothing was written.
	Existing bool
}

// PeriodicLaunchRequest registers the child a periodic job launches for
// the launch time Launch (Unix nanoseconds), with its evaluation, and
// records the launch. A launch not after the recorded one is refused with
// ErrConflict, so a launch is never made twice (a new leader may retry
// one its predecessor committed). Force launches now whatever the record
// says (POST /v1/job/:job_id/periodic/force).
type PeriodicLaunchRequest struct {
	Child  *state.Job
	Eval   *state.Evaluation
	Launch int64
	Force  bool
	Now    int64
}

// PeriodicLaunchByID returns the latest launch of a periodic job, or nil.
func (r reader) PeriodicLaunchByID(ws memdb.WatchSet, ns, id string) (*state.PeriodicLaunch, error) {
	return first[*state.PeriodicLaunch](ws, r.txn(), TablePeriodicLaunch, indexID, ns, id)
}

// PeriodicLaunches lists the latest launch of every periodic job.
func (r reader) PeriodicLaunches(ws memdb.WatchSet) ([]*state.PeriodicLaunch, error) {
	return list[*state.PeriodicLaunch](ws, r.txn(), nil, TablePeriodicLaunch, indexID)
}

// Children lists the child jobs of parent (IDs under "<parent>/").
func (r reader) Children(ws memdb.WatchSet, ns, parent string) ([]*state.Job, error) {
	return childrenOf(ws, r.txn(), ns, parent)
}

func childrenOf(ws memdb.WatchSet, txn *memdb.Txn, ns, parent string) ([]*state.Job, error) {
	keep := func(j *state.Job) bool { return j.ParentID == parent }
	return list(ws, txn, keep, TableJobs, indexID+"_prefix", ns, prefixArg(parent+"/"))
}

// parentFor loads the parent of child and checks it may launch children:
// it exists, is not stopped, and is what want says.
func parentFor(t *writeTxn, child *state.Job, want func(*state.Job) bool, what string) (*state.Job, error) {
	if child == nil || child.ParentID == "" {
		return nil, state.Invalidf("Child", "missing child job or its ParentID")
	}
	parent, err := first[*state.Job](nil, t.Txn, TableJobs, indexID, child.Namespace, child.ParentID)
	if err != nil {
		return nil, err
	}
	switch {
	case parent == nil:
		return nil, fmt.Errorf("job %q: %w", child.ParentID, state.ErrNotFound)
	case parent.Stop:
		return nil, fmt.Errorf("job %q is stopped: %w", parent.ID, state.ErrConflict)
	case !want(parent):
		return nil, state.Invalidf("JobID", "job %q is not %s", parent.ID, what)
	}
	return parent, nil
}

func applyJobDispatch(t *writeTxn, req *JobDispatchRequest) (any, error) {
	if _, err := parentFor(t, req.Child, (*state.Job).IsParameterized, "a parameterized job"); err != nil {
		return nil, err
	}
	if tok := req.Child.DispatchIdempotencyToken; tok != "" {
		children, err := childrenOf(nil, t.Txn, req.Child.Namespace, req.Child.ParentID)
		if err != nil {
			return nil, err
		}
		for _, c := range children {
			if c.DispatchIdempotencyToken == tok {
				return &JobDispatchResponse{DispatchedJobID: c.ID, JobCreateIndex: c.CreateIndex, Existing: true}, nil
			}
		}
	}
	if err := newChildOnly(t, req.Child); err != nil {
		return nil, err
	}
	resp, err := applyJobRegister(t, &JobRegisterRequest{Job: req.Child, Eval: req.Eval, Now: req.Now})
	if err != nil {
		return nil, err
	}
	reg := resp.(*JobRegisterResponse)
	return &JobDispatchResponse{DispatchedJobID: req.Child.ID, EvalID: reg.EvalID, EvalCreateIndex: reg.EvalCreateIndex, JobCreateIndex: t.index}, nil
}

func applyPeriodicLaunch(t *writeTxn, req *PeriodicLaunchRequest) (any, error) {
	if _, err := parentFor(t, req.Child, (*state.Job).IsPeriodic, "a periodic job"); err != nil {
		return nil, err
	}
	ns, id := req.Child.Namespace, req.Child.ParentID
	last, err := first[*state.PeriodicLaunch](nil, t.Txn, TablePeriodicLaunch, indexID, ns, id)
	if err != nil {
		return nil, err
	}
	if !req.Force && last != nil && req.Launch <= last.Launch {
		return nil, fmt.Errorf("job %q was already launched for %d: %w", id, req.Launch, state.ErrConflict)
	}
	if err := newChildOnly(t, req.Child); err != nil {
		return nil, err
	}
	resp, err := applyJobRegister(t, &JobRegisterRequest{Job: req.Child, Eval: req.Eval, Now: req.Now})
	if err != nil {
		return nil, err
	}
	rec := &state.PeriodicLaunch{Namespace: ns, ID: id, Launch: req.Launch, CreateIndex: t.index, ModifyIndex: t.index}
	if last != nil {
		rec.CreateIndex = last.CreateIndex
		rec.Launch = max(last.Launch, req.Launch)
	}
	if err := t.insert(TablePeriodicLaunch, rec); err != nil {
		return nil, err
	}
	return resp, nil
}

// newChildOnly refuses a child whose ID is taken: a launch never
// overwrites a job.
func newChildOnly(t *writeTxn, child *state.Job) error {
	old, err := first[*state.Job](nil, t.Txn, TableJobs, indexID, child.Namespace, child.ID)
	if err != nil {
		return err
	}
	if old != nil {
		return fmt.Errorf("job %q exists: %w", child.ID, state.ErrConflict)
	}
	return nil
}
