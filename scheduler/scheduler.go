// Package scheduler holds the pure scheduling decisions: it turns an
// evaluation into a plan. Feasibility, ranking, spread, the reconciler,
// the service, batch, system and sysbatch schedulers and plan evaluation
// read an immutable State and write only through a Planner, so they are
// tested with a harness (scheduler/schedtest) that applies real store
// commands and no Raft, and with scenario scripts (testdata/scenarios).
//
// The leader's runtime that feeds and commits plans (eval broker, blocked
// evals, workers, plan queue and applier, heartbeats, drainer, GC) lives
// in scheduler/leader. This package imports nothing of sched but state.
package scheduler

import (
	"errors"
	"log/slog"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// State is the read-only view a scheduler runs against: a point-in-time
// snapshot of the store. *store.StateSnapshot and *store.Store satisfy it
// (asserted in scheduler/leader, which imports both).
type State interface {
	LatestIndex() uint64
	JobByID(ws memdb.WatchSet, namespace, id string) (*state.Job, error)
	Nodes(ws memdb.WatchSet, prefix string) ([]*state.Node, error)
	NodeByID(ws memdb.WatchSet, id string) (*state.Node, error)
	NodePoolByName(ws memdb.WatchSet, name string) (*state.NodePool, error)
	AllocByID(ws memdb.WatchSet, id string) (*state.Allocation, error)
	AllocsByJob(ws memdb.WatchSet, namespace, jobID string, all bool) ([]*state.Allocation, error)
	AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*state.Allocation, error)
	// NodeUsage is the total grant of the node's live allocations, kept
	// by the store as they are written.
	NodeUsage(ws memdb.WatchSet, nodeID string) (*state.NodeUsage, error)
	EvalByID(ws memdb.WatchSet, id string) (*state.Evaluation, error)
	LatestDeploymentByJob(ws memdb.WatchSet, namespace, jobID string) (*state.Deployment, error)
	// SchedulerConfig is the cluster's scheduler configuration (the
	// defaults when none was written); the answer must not be changed.
	SchedulerConfig(ws memdb.WatchSet) (*state.SchedulerConfiguration, error)
}

// NodeUsageScanner is a State that can also list every node's usage in
// one pass, which costs less than a NodeUsage per node when an
// evaluation ranks most of a large cluster (*store.StateSnapshot and the
// leader's worker state implement it). fn is called with parts of the
// nodes' usage, in any order: a node's NodeUsage is the sum of the parts
// it is called with (none: zero). fn must not keep u.
type NodeUsageScanner interface {
	EachNodeUsage(fn func(u *state.NodeUsage)) error
}

// Planner is how a scheduler changes the world. The runtime's worker
// implements it on the leader; the test harness implements it in memory.
type Planner interface {
	// SubmitPlan hands a plan to the plan applier and waits for the
	// result. When the applier rejected part of the plan, the returned
	// State is a fresh snapshot at least as new as the result's
	// RefreshIndex, and the scheduler must retry against it.
	SubmitPlan(plan *Plan) (*PlanResult, State, error)
	// UpdateEval records the evaluation's new status.
	UpdateEval(eval *state.Evaluation) error
	// CreateEval creates a follow-up evaluation (delayed reschedule,
	// blocked eval, next rolling-update batch).
	CreateEval(eval *state.Evaluation) error
	// ReblockEval re-blocks an evaluation that is already blocked.
	ReblockEval(eval *state.Evaluation) error
}

// Scheduler processes one evaluation.
type Scheduler interface {
	Process(eval *state.Evaluation) error
}

// Config is what every scheduler is built with.
type Config struct {
	Logger *slog.Logger
	// Now is the clock for reschedule delays and times stamped on
	// allocations; nil means time.Now. Tests pass a fixed clock.
	Now func() time.Time
	// NewID makes allocation and eval IDs; nil means random UUIDs.
	NewID func() string
	// Cancel, when closed, abandons the work: Process returns
	// ErrCanceled before its next placement, submitting nothing more.
	// The leader closes it when it stops leading or shuts down, so a
	// large evaluation does not hold either up. Nil never cancels.
	Cancel <-chan struct{}
	// NodeSets, when set, keeps the ready nodes of a job's pool and
	// datacenters across evaluations while the nodes do not change
	// (node_sets.go); the leader's workers share one. Nil reads them
	// for every attempt.
	NodeSets *NodeSets
}

// ErrCanceled is what Process returns when Config.Cancel closed.
var ErrCanceled = errors.New("scheduler: canceled")

// Factory builds the scheduler for one eval type.
type Factory func(cfg Config, st State, planner Planner) Scheduler

// Plan is a scheduler's proposed change, checked and committed by the plan
// applier. Allocations in NodeAllocation are new placements or in-place
// updates; those in NodeUpdate are stops and evictions.
type Plan struct {
	EvalID string
	// EvalToken is the broker's delivery token: the applier refuses plans
	// of an eval that was nacked and redelivered since.
	EvalToken string
	Priority  int
	// AllAtOnce means the plan commits whole or not at all.
	AllAtOnce bool
	Job       *state.Job
	// NodeUpdate maps node ID to allocations to stop or evict (their
	// DesiredStatus and DesiredDescription already set).
	NodeUpdate map[string][]*state.Allocation
	// NodeAllocation maps node ID to allocations to create or update.
	NodeAllocation map[string][]*state.Allocation
	// NodePreemptions maps node ID to other jobs' allocations evicted to
	// make room for this plan's placements on the node (DesiredStatus
	// evict, PreemptedByAllocation set; preempt.go). The applier checks
	// them with the node's placements and commits them as stops.
	NodePreemptions map[string][]*state.Allocation
	// PreemptionEvals are evaluations of the jobs of NodePreemptions, one
	// per job; the applier writes those of the jobs whose evictions it
	// committed.
	PreemptionEvals []*state.Evaluation
	// Deployment is created or updated with the plan: a new version's
	// deployment, or one that gains a group or its canaries (see
	// reconcile_deploy.go).
	Deployment *state.Deployment
	// Annotations explain the plan, for dry runs.
	Annotations *state.PlanAnnotations
	// SnapshotIndex is the index of the state the plan was computed on.
	SnapshotIndex uint64
	// EvalUpdate, when set, is the evaluation's final status as the
	// scheduler will write it if this plan commits in full, and
	// CreatedEvals the evaluations it creates with it (a blocked eval).
	// The plan applier writes them in the plan's own Raft entry when it
	// commits the whole plan, and says so in PlanResult.EvalUpdated; when
	// it leaves anything out, it writes neither, and the scheduler goes
	// on as without them (retry, then UpdateEval and CreateEval itself).
	// The Planner stamps them as UpdateEval and CreateEval would.
	EvalUpdate   *state.Evaluation
	CreatedEvals []*state.Evaluation
	// FollowupEvals are the evaluations the plan's allocations name as
	// their FollowupEvalID (delayed reschedules). They are written in the
	// plan's entry whenever any of the plan is committed, whole or not,
	// so an allocation never names an evaluation that does not exist and
	// a plan that commits nothing leaves none behind. The Planner stamps
	// them as CreateEval would.
	FollowupEvals []*state.Evaluation
}

// IsNoOp reports whether the plan changes nothing.
func (p *Plan) IsNoOp() bool {
	return len(p.NodeUpdate) == 0 && len(p.NodeAllocation) == 0 && p.Deployment == nil
}

// PlanResult is what the applier committed of a plan.
type PlanResult struct {
	NodeUpdate      map[string][]*state.Allocation
	NodeAllocation  map[string][]*state.Allocation
	NodePreemptions map[string][]*state.Allocation
	Deployment      *state.Deployment
	// RefreshIndex, when non-zero, says part of the plan was rejected and
	// the scheduler must refresh its state to at least this index.
	RefreshIndex uint64
	// AllocIndex is the Raft index the committed part was written at.
	AllocIndex uint64
	// EvalUpdated says the plan's EvalUpdate and CreatedEvals were written
	// with it: the evaluation is closed, and the scheduler writes nothing
	// more.
	EvalUpdated bool
}

// FullCommit reports whether everything in plan was committed, with the
// number of allocations expected and actually committed.
func (r *PlanResult) FullCommit(plan *Plan) (bool, int, int) {
	expected, actual := 0, 0
	for node, allocs := range plan.NodeAllocation {
		expected += len(allocs)
		actual += len(r.NodeAllocation[node])
	}
	return expected == actual, expected, actual
}
