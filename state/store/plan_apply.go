package store

import (
	"maps"
	"slices"
	"sync"

	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store/internal/packed"
)

// Plan and scheduler-runtime commands (types 20-29; see commands.go): what
// the leader's plan applier, workers and garbage collector write.
const (
	PlanApplyRequestType        MessageType = 20
	EvalStatusUpdateRequestType MessageType = 21
	GarbageCollectRequestType   MessageType = 22
	// PlanApplyPackedRequestType is a PlanApplyRequest whose JobAllocs
	// travel packed (PlanApplyRequest.Packed). It is a type of its own so
	// that a server too old to unpack them refuses the entry rather than
	// applying the plan without its placements.
	PlanApplyPackedRequestType MessageType = 23
	// PlanApplyRefRequestType is a packed PlanApplyRequest whose job is
	// named by JobRef rather than carried whole. A type of its own for the
	// same reason as type 23: an older server would find no job for the
	// placements and fail the entry that the others apply.
	PlanApplyRefRequestType MessageType = 24
)

// planCommand returns the command of type t in this area's range, if any.
func planCommand(t MessageType) (command, bool) {
	switch t {
	case PlanApplyRequestType:
		return handler(applyPlanApply), true
	case PlanApplyPackedRequestType:
		return handler(applyPlanApplyPacked), true
	case PlanApplyRefRequestType:
		return handler(applyPlanApplyRef), true
	case EvalStatusUpdateRequestType:
		return handler(applyEvalStatusUpdate), true
	case GarbageCollectRequestType:
		return handler(applyGarbageCollect), true
	}
	return command{}, false
}

// PlanApplyRequest records what the plan applier accepted of one plan, in
// one command.
//
// The plan's job travels once, in Job, rather than inside every
// allocation: JobAllocs are placements and updates whose Job Apply sets to
// Job (they all share the one decoded job), which keeps a plan of a
// thousand placements a small log entry and the store small. Allocs are
// placements and updates that carry their own Job (or nil: the existing
// allocation's job, else the job registered now), with the semantics of
// AllocUpdateRequest.
//
// Stops are applied as changes to the stored allocation rather than
// replacing it: only DesiredStatus, DesiredDescription, DesiredTransition,
// FollowupEvalID and NextAllocation are taken from the stop (the last two
// when set), and ClientStatus and ClientDescription only when the stop
// marks the allocation lost. Everything else, including what the client
// reported since the plan's snapshot, is kept. A stop of an allocation that
// no longer exists (collected meanwhile) is skipped.
type PlanApplyRequest struct {
	// EvalID is the evaluation whose plan this is, for logs and debugging.
	EvalID     string
	Job        *state.Job
	JobAllocs  []*state.Allocation
	Allocs     []*state.Allocation
	Stops      []*state.Allocation
	Deployment *state.Deployment
	// Evals are created or updated with the plan.
	Evals []*state.Evaluation
	// EvalStatus closes the plan's evaluation in the plan's own entry: the
	// evaluation's final status and the evaluations created with it (a
	// blocked one), written after everything else exactly as an
	// EvalStatusUpdateRequest of the same list writes them (job summary
	// queued counts included). The plan applier fills it only when it
	// commits the plan in full, so the worker does not write the status
	// again: one Raft entry per evaluation instead of two. Absent (nil) in
	// entries written before it existed. An older server would ignore the
	// field, so a cluster upgrades its leader last.
	EvalStatus []*state.Evaluation
	// Now is the leader's clock (Unix nanoseconds) for allocation
	// CreateTime and ModifyTime.
	Now int64
	// PackedJobAllocs holds JobAllocs as allocation records (the layout
	// of snapshot format 3, internal/packed) in entries of type
	// PlanApplyPackedRequestType; see Packed.
	PackedJobAllocs []byte
	// JobRef names the stored version of the job that JobAllocs run, in
	// entries of type PlanApplyRefRequestType, in place of Job; see
	// Packed.
	JobRef *JobRef
}

// JobRef names one stored version of a job: the row of the job versions
// table of its JobVersionRef whose CreateIndex and
// JobModifyIndex match (a job purged and registered again starts over at
// version 0 with another CreateIndex). It leaves out what changes in the
// row without a new version (Status, Stable, ModifyIndex): the
// allocations of a plan that names it share the row as it is when the plan
// is applied.
type JobRef struct {
	JobVersionRef
	CreateIndex, JobModifyIndex uint64
}

// refOf returns the reference that names j's version.
func refOf(j *state.Job) *JobRef {
	return &JobRef{JobVersionRef{j.Namespace, j.ID, j.Version}, j.CreateIndex, j.JobModifyIndex}
}

// resolve returns the stored job version ref names, or a conflict when it
// is no longer stored (pruned or purged since the plan was made).
func (ref *JobRef) resolve(txn *memdb.Txn) (*state.Job, error) {
	j, err := first[*state.Job](nil, txn, TableJobVersion, indexID, ref.Namespace, ref.JobID, ref.Version)
	if err != nil {
		return nil, err
	}
	if j == nil || j.CreateIndex != ref.CreateIndex || j.JobModifyIndex != ref.JobModifyIndex {
		return nil, state.Conflictf("version %d of job %q in namespace %q (job modify index %d) is no longer stored",
			ref.Version, ref.JobID, ref.Namespace, ref.JobModifyIndex)
	}
	return j, nil
}

// Packed returns a copy of req whose JobAllocs travel as allocation
// records in PackedJobAllocs, and the type to write it with. When stored
// reports that req.Job is a row of the store the entry will be applied to
// (the scheduler planned with the job as read, not a copy of its own), the
// job travels as a JobRef (type PlanApplyRefRequestType): a job decoded
// from every plan's entry, and compared whole with the stored row it then
// gave way to, was a tenth of a busy leader's time. A plan without
// JobAllocs needs no job at all and carries none. Msgpack
// writes every field's name with every allocation, and decodes it by
// reflection: a plan of a thousand placements was ~1.2 MB in the log,
// and its encoding and decoding a large share of the leader's garbage.
// The records write each repeated string (node, job, evaluation IDs,
// score keys) once per entry. req is not changed.
func (req *PlanApplyRequest) Packed(stored func(*state.Job) bool) (*PlanApplyRequest, MessageType, error) {
	if len(req.JobAllocs) == 0 {
		if req.Job == nil {
			return req, PlanApplyRequestType, nil
		}
		out := *req
		out.Job = nil
		return &out, PlanApplyRequestType, nil
	}
	// A pooled writer: its maps and caches keep their room from plan to
	// plan.
	w := planWriters.Get().(*packed.Writer)
	defer planWriters.Put(w)
	buf, err := w.PackAllocs("JobAllocs", req.JobAllocs)
	if err != nil {
		return nil, 0, err
	}
	out := *req
	out.JobAllocs, out.PackedJobAllocs = nil, buf
	if req.Job != nil && stored != nil && stored(req.Job) {
		out.Job, out.JobRef = nil, refOf(req.Job)
		return &out, PlanApplyRefRequestType, nil
	}
	return &out, PlanApplyPackedRequestType, nil
}

// planWriters pools the record writers of packed plans: a plan of a
// thousand placements filled maps of thousands of strings and score keys
// from empty, every plan. A writer keeps nothing of a plan but the room
// of its maps, so the pool is scratch space, not state: Packed is called
// by the leader with no store at hand.
var planWriters = sync.Pool{New: func() any { return packed.NewWriter(logCodec{}) }}

// unpack decodes PackedJobAllocs into JobAllocs.
func (req *PlanApplyRequest) unpack(p *packed.Packer) error {
	if req.PackedJobAllocs == nil {
		return nil
	}
	allocs, err := p.Unpack(req.PackedJobAllocs)
	if err != nil {
		return err
	}
	req.JobAllocs = append(req.JobAllocs, allocs...)
	req.PackedJobAllocs = nil
	return nil
}

// applyPlanApplyPacked unpacks a plan's allocation records and applies it
// as applyPlanApply does.
func applyPlanApplyPacked(t *writeTxn, req *PlanApplyRequest) (any, error) {
	if err := req.unpack(t.packer); err != nil {
		return nil, state.Invalidf("PackedJobAllocs", "%v", err)
	}
	return applyPlanApply(t, req)
}

// applyPlanApplyRef finds the job version a packed plan names and applies
// the plan as applyPlanApplyPacked does.
func applyPlanApplyRef(t *writeTxn, req *PlanApplyRequest) (any, error) {
	if req.JobRef == nil {
		return nil, state.Invalidf("JobRef", "missing job reference")
	}
	job, err := req.JobRef.resolve(t.Txn)
	if err != nil {
		return nil, prefixField("JobRef", err)
	}
	req.Job = job
	return applyPlanApplyPacked(t, req)
}

// applyPlanApply records a plan's results; see PlanApplyRequest.
func applyPlanApply(t *writeTxn, req *PlanApplyRequest) (any, error) {
	if req.Deployment != nil {
		if err := upsertDeployment(t, req.Deployment, req.Now); err != nil {
			return nil, prefixField("Deployment", err)
		}
	}
	for i, s := range req.Stops {
		if err := applyStop(t, s, req.Now); err != nil {
			return nil, prefixField(state.Fieldf("Stops", i, ""), err)
		}
	}
	for i, a := range req.JobAllocs {
		if a == nil {
			return nil, state.Invalidf(state.Fieldf("JobAllocs", i, "ID"), "missing allocation")
		}
		if req.Job == nil {
			return nil, state.Invalidf("Job", "missing job for the allocations of JobAllocs")
		}
		a.Job = req.Job
		if err := upsertAlloc(t, a, req.Now); err != nil {
			return nil, prefixField(state.Fieldf("JobAllocs", i, ""), err)
		}
	}
	for i, a := range req.Allocs {
		if a == nil {
			return nil, state.Invalidf(state.Fieldf("Allocs", i, "ID"), "missing allocation")
		}
		if err := upsertAlloc(t, a, req.Now); err != nil {
			return nil, prefixField(state.Fieldf("Allocs", i, ""), err)
		}
	}
	if err := upsertEvals(t, "Evals", req.Evals); err != nil {
		return nil, err
	}
	return nil, writeEvalStatus(t, "EvalStatus", req.EvalStatus)
}

// applyStop applies one stop of a PlanApplyRequest to the stored
// allocation.
func applyStop(t *writeTxn, s *state.Allocation, now int64) error {
	if s == nil || s.ID == "" {
		return state.Invalidf("ID", "missing allocation ID")
	}
	old, err := t.allocByID(s.ID)
	if err != nil || old == nil {
		return err
	}
	next := *old
	next.DesiredStatus = s.DesiredStatus
	next.DesiredDescription = s.DesiredDescription
	next.DesiredTransition = s.DesiredTransition.Copy()
	if s.FollowupEvalID != "" {
		next.FollowupEvalID = s.FollowupEvalID
	}
	if s.NextAllocation != "" {
		next.NextAllocation = s.NextAllocation
	}
	if s.PreemptedByAllocation != "" {
		next.PreemptedByAllocation = s.PreemptedByAllocation
	}
	if s.ClientStatus == state.AllocClientStatusLost {
		next.ClientStatus, next.ClientDescription = s.ClientStatus, s.ClientDescription
	}
	next.ModifyIndex, next.AllocModifyIndex = t.index, t.index
	next.ModifyTime = now
	if err := t.insert(TableAllocs, &next); err != nil {
		return err
	}
	// A stop alone keeps the registrations (the client removes them once
	// the tasks are down); a stop that marks the allocation lost does not.
	if err := deleteServicesOfEndedAlloc(t, &next); err != nil {
		return err
	}
	t.jobs[nsID{next.Namespace, next.JobID}] = true
	return updateSummaryForAlloc(t, old, &next)
}

// EvalStatusUpdateRequest records evaluations a worker processed (their new
// status, blocked and follow-up evaluations) and, for each evaluation with
// QueuedAllocations, sets the Queued counts of its job's summary: how many
// placements the scheduler could not make yet, which only it knows. Groups
// the job no longer has, and jobs that no longer exist, are skipped.
type EvalStatusUpdateRequest struct {
	Evals []*state.Evaluation
}

// applyEvalStatusUpdate writes evaluations and their queued counts; see
// EvalStatusUpdateRequest.
func applyEvalStatusUpdate(t *writeTxn, req *EvalStatusUpdateRequest) (any, error) {
	return nil, writeEvalStatus(t, "Evals", req.Evals)
}

// writeEvalStatus writes evaluations a worker processed, listed in the
// request's field named field, and their queued counts: what
// EvalStatusUpdateRequest and PlanApplyRequest.EvalStatus record.
func writeEvalStatus(t *writeTxn, field string, evals []*state.Evaluation) error {
	if err := upsertEvals(t, field, evals); err != nil {
		return err
	}
	for _, e := range evals {
		if e.QueuedAllocations == nil {
			continue
		}
		sum, err := first[*state.JobSummary](nil, t.Txn, TableJobSummary, indexID, e.Namespace, e.JobID)
		if err != nil {
			return err
		}
		if sum == nil {
			continue
		}
		next := *sum
		next.Summary = maps.Clone(sum.Summary)
		changed := false
		for _, group := range slices.Sorted(maps.Keys(e.QueuedAllocations)) {
			tg, ok := next.Summary[group]
			if !ok || tg.Queued == e.QueuedAllocations[group] {
				continue
			}
			tg.Queued = e.QueuedAllocations[group]
			next.Summary[group] = tg
			changed = true
		}
		if !changed {
			continue
		}
		next.ModifyIndex = t.index
		if err := t.insert(TableJobSummary, &next); err != nil {
			return err
		}
	}
	return nil
}
