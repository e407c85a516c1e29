package store

import (
	"github.com/schedhq/sched/state"
	"maps"
	"slices"
)

// Node lifecycle commands (types 30-39): what the node endpoints, the
// drainer and the evaluate endpoint write beyond the core commands of
// commands.go (nodes.go). Each writes its change together with the evaluations
// that react to it, in one command, so no reader ever sees a node become
// ready (or a failed allocation marked for rescheduling) without the
// evaluation that acts on it.
const (
	NodeUpsertRequestType                   MessageType = 30
	NodeUpdateEligibilityRequestType        MessageType = 31
	NodeUpdateDrainRequestType              MessageType = 32
	AllocUpdateDesiredTransitionRequestType MessageType = 33
	JobEvaluateRequestType                  MessageType = 34
)

// nodeCommand returns the command of type t in this area's range, if any.
func nodeCommand(t MessageType) (command, bool) {
	switch t {
	case NodeUpsertRequestType:
		return handler(applyNodeUpsert), true
	case NodeUpdateEligibilityRequestType:
		return handler(applyNodeUpdateEligibility), true
	case NodeUpdateDrainRequestType:
		return handler(applyNodeUpdateDrain), true
	case AllocUpdateDesiredTransitionRequestType:
		return handler(applyAllocUpdateDesiredTransition), true
	case JobEvaluateRequestType:
		return handler(applyJobEvaluate), true
	}
	return command{}, false
}

// NodeUpsertRequest registers a node (or re-registers it after a restart)
// with the evaluations its arrival calls for, in one command. As with
// NodeRegisterRequest, the servers' scheduling fields of an existing node
// (SchedulingEligibility, Drain, DrainStrategy) are kept, and a node pool
// that does not exist yet is created.
//
// The node's secret is the client's proof of identity: the leader proposes
// only its hash (Node.SecretHash; a plain SecretID from an older leader is
// hashed here), an empty one keeps the registered one, and a different
// non-empty one is refused, so one machine cannot take over another's node
// ID.
type NodeUpsertRequest struct {
	Node *state.Node
	// Evals are created with the node; those about this node get its
	// NodeModifyIndex.
	Evals []*state.Evaluation
	// UpdatedAt is the leader's clock in Unix seconds, recorded as the
	// node's StatusUpdatedAt when its status changes.
	UpdatedAt int64
	// Returning, set by the leader when a node that was not ready
	// (down, disconnected) registers ready again, drops the node-update
	// evaluations a held one covers (joinHeldOnReturn), as a status update
	// back to ready does: a client that comes back by registering rather
	// than by heartbeating must not add a second evaluation per job. A
	// flag rather than the apply's own view of the old node, so commands
	// written before it existed replay as they were applied.
	Returning bool `json:",omitempty"`
}

// NodeUpdateEligibilityRequest marks a node eligible or ineligible for new
// placements. A draining node cannot be made eligible: the drain must be
// cancelled (NodeUpdateDrainRequest with MarkEligible) instead.
type NodeUpdateEligibilityRequest struct {
	NodeID      string
	Eligibility string
	Evals       []*state.Evaluation
	UpdatedAt   int64
}

// NodeUpdateDrainRequest starts, changes or ends a node's drain.
//
// A non-nil DrainStrategy starts (or replaces) the drain: the node becomes
// Drain = true and ineligible; a replaced drain keeps its StartedAt. A nil
// DrainStrategy ends it: Drain = false, and the node becomes eligible only
// with MarkEligible. The drainer ends a completed drain with a nil strategy
// and MarkEligible false, so a drained node stays out of scheduling until
// an operator says otherwise, as in Nomad.
type NodeUpdateDrainRequest struct {
	NodeID        string
	DrainStrategy *state.DrainStrategy
	MarkEligible  bool
	Evals         []*state.Evaluation
	UpdatedAt     int64
}

// AllocUpdateDesiredTransitionRequest sets server requests on allocations
// (migrate, reschedule, force reschedule, skip shutdown delay) with the
// evaluations that act on them. Only the non-nil fields of each transition
// are set; the others keep their value. Unknown allocation IDs are skipped:
// the allocation may have been garbage collected meanwhile.
type AllocUpdateDesiredTransitionRequest struct {
	Allocs map[string]*state.DesiredTransition
	Evals  []*state.Evaluation
}

// JobEvaluateRequest creates an evaluation of a job on demand (spec §4.16)
// and, with ForceReschedule, marks the job's failed allocations for
// immediate rescheduling, in one command. Periodic and parameterized jobs
// are templates and cannot be evaluated.
type JobEvaluateRequest struct {
	Namespace       string
	JobID           string
	Eval            *state.Evaluation
	ForceReschedule bool
	// Now is the leader's clock (Unix nanoseconds) for the eval's times.
	Now int64
}

// JobEvaluateResponse is what Apply returns for a JobEvaluateRequest.
type JobEvaluateResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	// ForcedAllocs lists the allocations marked for forced rescheduling.
	ForcedAllocs []string
	Index        uint64
}

// applyNodeUpsert registers a node with its evaluations; see
// NodeUpsertRequest.
func applyNodeUpsert(t *writeTxn, req *NodeUpsertRequest) (any, error) {
	n := req.Node
	if n == nil || n.ID == "" {
		return nil, state.Invalidf("Node.ID", "missing node ID")
	}
	old, err := first[*state.Node](nil, t.Txn, TableNodes, indexID, n.ID)
	if err != nil {
		return nil, err
	}
	n.StatusUpdatedAt = req.UpdatedAt
	n.SealSecret() // a command from a server that proposed secrets in plain text
	if old != nil {
		switch {
		case n.SecretHash == "":
			n.SecretHash = old.SecretHash
		case old.SecretHash != "" && n.SecretHash != old.SecretHash:
			return nil, state.Invalidf("Node.SecretID", "does not match the secret node %q registered with", n.ID)
		}
		if old.Status == n.Status {
			n.StatusUpdatedAt = old.StatusUpdatedAt
		}
	}
	if _, err := applyNodeRegister(t, &NodeRegisterRequest{Node: n}); err != nil {
		return nil, err
	}
	evals := req.Evals
	if req.Returning && n.Status == state.NodeStatusReady {
		if evals, err = joinHeldOnReturn(t, evals); err != nil { // node_churn.go
			return nil, err
		}
	}
	return upsertNodeEvals(t, n.ID, evals)
}

// upsertNodeEvals writes evaluations reacting to a change of node nodeID,
// stamping the node's new modify index on those about it, and answers
// with their IDs (NodeEvalsResponse).
func upsertNodeEvals(t *writeTxn, nodeID string, evals []*state.Evaluation) (any, error) {
	for _, e := range evals {
		if e != nil && e.NodeID == nodeID {
			e.NodeModifyIndex = t.index
		}
	}
	if err := upsertEvals(t, "Evals", evals); err != nil {
		return nil, err
	}
	return nodeEvalsResponse(evals), nil
}

// nodeForUpdate returns a copy of node id to change, or a not-found error.
func nodeForUpdate(t *writeTxn, id string) (*state.Node, error) {
	if id == "" {
		return nil, state.Invalidf("NodeID", "missing node ID")
	}
	n, err := first[*state.Node](nil, t.Txn, TableNodes, indexID, id)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, state.NotFoundf("node %q not found", id)
	}
	next := *n
	next.ModifyIndex = t.index
	return &next, nil
}

// applyNodeUpdateEligibility sets a node's scheduling eligibility; see
// NodeUpdateEligibilityRequest.
func applyNodeUpdateEligibility(t *writeTxn, req *NodeUpdateEligibilityRequest) (any, error) {
	switch req.Eligibility {
	case state.NodeSchedulingEligible, state.NodeSchedulingIneligible:
	default:
		return nil, state.Invalidf("Eligibility", "%q is not %q or %q", req.Eligibility, state.NodeSchedulingEligible, state.NodeSchedulingIneligible)
	}
	n, err := nodeForUpdate(t, req.NodeID)
	if err != nil {
		return nil, err
	}
	if req.Eligibility == state.NodeSchedulingEligible && n.DrainStrategy != nil {
		return nil, state.Invalidf("Eligibility", "node %q is draining: cancel the drain to make it eligible", n.ID)
	}
	n.SchedulingEligibility = req.Eligibility
	if err := t.insert(TableNodes, n); err != nil {
		return nil, err
	}
	return upsertNodeEvals(t, n.ID, req.Evals)
}

// applyNodeUpdateDrain starts, changes or ends a drain; see
// NodeUpdateDrainRequest.
func applyNodeUpdateDrain(t *writeTxn, req *NodeUpdateDrainRequest) (any, error) {
	n, err := nodeForUpdate(t, req.NodeID)
	if err != nil {
		return nil, err
	}
	if ds := req.DrainStrategy; ds != nil {
		next := *ds
		if n.DrainStrategy != nil && n.DrainStrategy.StartedAt != 0 {
			next.StartedAt = n.DrainStrategy.StartedAt
		}
		n.Drain, n.DrainStrategy = true, &next
		n.SchedulingEligibility = state.NodeSchedulingIneligible
	} else {
		n.Drain, n.DrainStrategy = false, nil
		if req.MarkEligible {
			n.SchedulingEligibility = state.NodeSchedulingEligible
		}
	}
	if err := t.insert(TableNodes, n); err != nil {
		return nil, err
	}
	return upsertNodeEvals(t, n.ID, req.Evals)
}

// applyAllocUpdateDesiredTransition sets desired transitions; see
// AllocUpdateDesiredTransitionRequest.
func applyAllocUpdateDesiredTransition(t *writeTxn, req *AllocUpdateDesiredTransitionRequest) (any, error) {
	// Sorted, so that an error names the same allocation on every server.
	for _, id := range slices.Sorted(maps.Keys(req.Allocs)) {
		tr := req.Allocs[id]
		if id == "" {
			return nil, state.Invalidf("Allocs", "missing allocation ID")
		}
		if tr == nil {
			continue
		}
		a, err := t.allocByID(id)
		if err != nil {
			return nil, err
		}
		if a == nil {
			continue
		}
		next := *a
		next.DesiredTransition = mergeTransition(a.DesiredTransition, *tr)
		next.ModifyIndex = t.index
		if err := t.insert(TableAllocs, &next); err != nil {
			return nil, err
		}
	}
	return nil, upsertEvals(t, "Evals", req.Evals)
}

// mergeTransition returns old with the fields set in update replaced.
func mergeTransition(old, update state.DesiredTransition) state.DesiredTransition {
	out := old.Copy()
	if update.Migrate != nil {
		out.Migrate = state.CopyBoolPtr(update.Migrate)
	}
	if update.Reschedule != nil {
		out.Reschedule = state.CopyBoolPtr(update.Reschedule)
	}
	if update.ForceReschedule != nil {
		out.ForceReschedule = state.CopyBoolPtr(update.ForceReschedule)
	}
	if update.NoShutdownDelay != nil {
		out.NoShutdownDelay = state.CopyBoolPtr(update.NoShutdownDelay)
	}
	return out
}

// applyJobEvaluate creates an on-demand evaluation; see JobEvaluateRequest.
func applyJobEvaluate(t *writeTxn, req *JobEvaluateRequest) (any, error) {
	if req.Eval == nil {
		return nil, state.Invalidf("Eval", "missing evaluation")
	}
	job, err := first[*state.Job](nil, t.Txn, TableJobs, indexID, req.Namespace, req.JobID)
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, state.NotFoundf("job %q in namespace %q not found", req.JobID, req.Namespace)
	}
	if job.IsPeriodic() || job.IsParameterized() {
		return nil, state.Invalidf("JobID", "job %q is periodic or parameterized: it is a template and cannot be evaluated", job.ID)
	}
	resp := &JobEvaluateResponse{JobModifyIndex: job.JobModifyIndex, Index: t.index}
	if req.ForceReschedule {
		allocs, err := allocsOfJob(nil, t.Txn, job.Namespace, job.ID)
		if err != nil {
			return nil, err
		}
		yes := true
		for _, a := range allocs {
			if !forceReschedulable(a, job) {
				continue
			}
			next := *a
			next.DesiredTransition = mergeTransition(a.DesiredTransition, state.DesiredTransition{ForceReschedule: &yes})
			next.ModifyIndex = t.index
			if err := t.insert(TableAllocs, &next); err != nil {
				return nil, err
			}
			resp.ForcedAllocs = append(resp.ForcedAllocs, a.ID)
		}
	}
	req.Eval.ForceReschedule = req.ForceReschedule
	if err := insertJobEval(t, req.Eval, job, job.JobModifyIndex, req.Now); err != nil {
		return nil, err
	}
	resp.EvalID, resp.EvalCreateIndex = req.Eval.ID, req.Eval.CreateIndex
	return resp, nil
}

// forceReschedulable reports whether a forced reschedule applies to a: a
// failed allocation of the current job that servers still want running,
// has not been replaced yet and is not already marked.
func forceReschedulable(a *state.Allocation, job *state.Job) bool {
	if a.ClientStatus != state.AllocClientStatusFailed || a.ServerTerminal() || a.NextAllocation != "" || !sameJobInstance(a, job) {
		return false
	}
	return a.DesiredTransition.ForceReschedule == nil || !*a.DesiredTransition.ForceReschedule
}
