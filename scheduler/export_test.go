package scheduler

import (
	"time"

	"github.com/schedhq/sched/state"
)

// This file opens a few internals to the external tests (package
// scheduler_test), which run schedulers on the schedtest harness and so
// cannot live in package scheduler: schedtest imports it.

// testEpoch is the clock of internal tests: the harness clock's start.
var testEpoch = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// Internals the external tests check against.
var (
	ReadyNodes       = readyNodes
	EvaluateNodePlan = evaluateNodePlan
	FitWithPorts     = fitWithPorts
	FitAlloc         = fitAlloc
	TrackerOf        = trackerOf
)

// Constants the external tests compare with.
const (
	MaxPlanAttempts = maxPlanAttempts
	TopScores       = topScores
	DescJobStopped  = descJobStopped
	DescRescheduled = descRescheduled
)

// EvalCounters returns what a service or batch scheduler's last Process
// counted: feasibility checks not answered from the class memo, nodes
// ranked, and whether a constraint escaped the memo.
func EvalCounters(s Scheduler) (checks, ranks int, escaped bool) {
	g := s.(*genericScheduler)
	return g.ctx.checks, g.ctx.ranks, g.ctx.elig.escaped
}

// UsageScanned reports whether a service or batch scheduler's last
// Process read every node's usage in one pass (NodeUsageScanner).
func UsageScanned(s Scheduler) bool {
	return s.(*genericScheduler).ctx.usageScanned
}

// RankWalk is one group's node ranker over a fixed node order.
type RankWalk struct {
	ctx *evalContext
	rk  *groupRanker
}

// NewRankWalk returns a ranker of job's first group over nodes, ranking
// at most limit of them per walk.
func NewRankWalk(snap State, job *state.Job, nodes []*state.Node, limit int) *RankWalk {
	ctx := newEvalContext(snap, &Plan{}, nil, testEpoch, 1)
	ctx.setNodes(nodes, len(nodes), false)
	cur := &nodeCursor{nodes: nodes, slots: make([]int32, len(nodes))}
	for i := range cur.slots {
		cur.slots[i] = int32(i)
	}
	tg := job.TaskGroups[0]
	return &RankWalk{ctx: ctx, rk: &groupRanker{ctx: ctx, job: job, tg: tg,
		checker: newGroupChecker(ctx, job, tg), nodes: cur, limit: limit}}
}

// Select walks the nodes for one placement and returns the node chosen
// (empty when none), its metrics, and how many nodes it ranked.
func (w *RankWalk) Select() (nodeID string, m *state.AllocMetric, ranked int, err error) {
	before := w.ctx.ranks
	o, m, err := w.rk.selectNode(placeOptions{})
	if o != nil {
		nodeID = o.node.ID
	}
	return nodeID, m, w.ctx.ranks - before, err
}

// PlanStop records a stop in the walk's plan.
func (w *RankWalk) PlanStop(a *state.Allocation) { w.ctx.planStop(a) }

// RecordingPlanner is the dry run's planner: it accepts every plan whole
// and commits nothing.
type RecordingPlanner = recordingPlanner

// LastPlan is the last plan submitted.
func (p *recordingPlanner) LastPlan() *Plan { return p.plan }

// CachedReadyNodes is the service scheduler's read of the job's ready
// nodes through sets (node_sets.go).
func CachedReadyNodes(sets *NodeSets, st State, job *state.Job) ([]*state.Node, map[string]int, error) {
	ready, byDC, _, _, _, err := cachedReadyNodes(sets, st, job)
	return ready, byDC, err
}
