package scheduler

import (
	"fmt"
	"time"

	"github.com/schedhq/sched/state"
)

// Descriptions of system scheduler stops.
const (
	descNodeIneligible = "alloc not needed as node is no longer eligible"
	descDuplicate      = "alloc not needed: another allocation of the group runs on the node"
)

// systemScheduler schedules system and sysbatch jobs: one allocation of
// each task group on every feasible node, including nodes that join
// later.
//
// An eval with a NodeID (a node registered, changed status or was drained)
// looks at that node only; any other eval looks at every node. On each
// node it considers: allocations on a node that is gone or down are
// marked lost and not replaced elsewhere; allocations asked to migrate off
// a draining node are stopped; allocations on a node that left the job's
// pool or datacenters or no longer meets its constraints or drivers are
// stopped; allocations on a node that is merely not ready (ineligible,
// initializing) are left alone and nothing new goes there. A missing
// allocation is placed when the node has room; a node without room is a
// failed placement (metrics, queued count, blocked eval), a node that does
// not match the job is not, and so is a placement the namespace's quota
// refuses (as for service and batch jobs).
//
// A failed system or sysbatch allocation is replaced at the next eval of
// its job; a sysbatch allocation that completed is never run again on its
// node, even after the job changes.
//
// A system job's group whose update block has a MaxParallel and a Stagger
// rolls out as Nomad's system jobs do: an eval replaces at most
// MaxParallel of the group's allocations destructively, and when more are
// left it creates a follow-up eval (rolling-update) that waits Stagger
// before the next batch. Placements on nodes without an allocation and
// in-place updates are never held back.
type systemScheduler struct {
	schedCore
	sysbatch bool
	// rollingLeft is, per group, how many more destructive updates this
	// eval may make (absent: no limit); rollingHeld is the longest Stagger
	// of the groups that hit their limit (0: none did).
	rollingLeft map[string]int
	rollingHeld time.Duration
	// rollingEval is the follow-up eval already created by this eval.
	rollingEval string
}

// NewSystemScheduler returns the scheduler of system jobs.
func NewSystemScheduler(cfg Config, st State, p Planner) Scheduler {
	return &systemScheduler{schedCore: newCore(cfg, st, p, state.JobTypeSystem)}
}

// NewSysBatchScheduler returns the scheduler of sysbatch jobs.
func NewSysBatchScheduler(cfg Config, st State, p Planner) Scheduler {
	return &systemScheduler{schedCore: newCore(cfg, st, p, state.JobTypeSysBatch), sysbatch: true}
}

// Process places and stops the job's allocations node by node, submits
// the plan and closes the eval like the generic scheduler does.
func (s *systemScheduler) Process(eval *state.Evaluation) error {
	return s.process(eval, s.compute)
}

// nodeSlot is what a task group has on one node.
type nodeSlot struct {
	live []*state.Allocation
	// done is set when a sysbatch allocation completed there.
	done bool
}

func (s *systemScheduler) compute() error {
	allocs, err := s.state.AllocsByJob(nil, s.eval.Namespace, s.eval.JobID, false)
	if err != nil {
		return fmt.Errorf("read allocations: %w", err)
	}
	if s.eval.NodeID != "" {
		var mine []*state.Allocation
		for _, a := range allocs {
			if a.NodeID == s.eval.NodeID {
				mine = append(mine, a)
			}
		}
		allocs = mine
	}
	job := s.job
	if job == nil || job.Stop || job.IsPeriodic() || job.IsParameterized() {
		return s.stopAll(allocs, descJobStopped)
	}

	// slots[group][node]
	slots := map[string]map[string]*nodeSlot{}
	for _, a := range allocs {
		m := slots[a.TaskGroup]
		if m == nil {
			m = map[string]*nodeSlot{}
			slots[a.TaskGroup] = m
		}
		sl := m[a.NodeID]
		if sl == nil {
			sl = &nodeSlot{}
			m[a.NodeID] = sl
		}
		switch {
		case s.sysbatch && a.ClientStatus == state.AllocClientStatusComplete:
			sl.done = true
		case !a.Terminal():
			sl.live = append(sl.live, a)
		}
	}
	var removed []*state.Allocation
	for _, g := range sortedKeys(slots) {
		if job.LookupTaskGroup(g) == nil {
			for _, sl := range slots[g] {
				removed = append(removed, sl.live...)
			}
		}
	}
	if err := s.stopAll(removed, descGroupRemoved); err != nil {
		return err
	}

	ready, byDC, inPool, total, err := readyNodes(s.state, job)
	if err != nil {
		return fmt.Errorf("read nodes: %w", err)
	}
	s.ctx.setNodes(ready, total, false)
	isReady := make(map[string]bool, len(ready))
	for _, n := range ready {
		isReady[n.ID] = true
	}
	nodes, err := s.candidateNodes(ready, allocs)
	if err != nil {
		return err
	}
	base := state.AllocMetric{NodesAvailable: byDC, NodesInPool: inPool}
	s.rollingLeft, s.rollingHeld = map[string]int{}, 0
	for _, tg := range job.TaskGroups {
		if u := tg.Update; u != nil && !s.sysbatch && u.MaxParallel > 0 && u.Stagger > 0 {
			s.rollingLeft[tg.Name] = u.MaxParallel
		}
		rk := &groupRanker{
			ctx:      s.ctx,
			job:      job,
			tg:       tg,
			checker:  newGroupChecker(s.ctx, job, tg),
			affinity: newAffinityScorer(s.ctx, job, tg),
			base:     base,
		}
		for _, id := range nodes {
			if err := s.node(rk, id, slots[tg.Name][id], isReady[id]); err != nil {
				return err
			}
		}
	}
	return s.nextRollingEval()
}

// nextRollingEval creates, once per eval, the follow-up eval that goes on
// with a rolling update after the stagger, when a group held back
// destructive updates.
func (s *systemScheduler) nextRollingEval() error {
	if s.rollingHeld == 0 || s.rollingEval != "" {
		return nil
	}
	next := s.newEval(state.EvalTriggerRollingUpdate, state.EvalStatusPending,
		"created to continue the rolling update after the stagger")
	next.WaitUntil = s.ctx.now.Add(s.rollingHeld)
	if err := s.planner.CreateEval(next); err != nil {
		return fmt.Errorf("create rolling-update eval: %w", err)
	}
	s.rollingEval = next.ID
	return nil
}

// candidateNodes lists, in ID order, the nodes the eval looks at: the
// eval's node, or every ready node and every node with an allocation.
func (s *systemScheduler) candidateNodes(ready []*state.Node, allocs []*state.Allocation) ([]string, error) {
	if s.eval.NodeID != "" {
		return []string{s.eval.NodeID}, nil
	}
	seen := map[string]bool{}
	for _, n := range ready {
		seen[n.ID] = true
	}
	for _, a := range allocs {
		seen[a.NodeID] = true
	}
	return sortedKeys(seen), nil
}

// node reconciles one group on one node.
func (s *systemScheduler) node(rk *groupRanker, nodeID string, sl *nodeSlot, ready bool) error {
	tg := rk.tg
	du := s.desiredFor(tg.Name)
	n, err := s.ctx.node(nodeID)
	if err != nil {
		return fmt.Errorf("read node: %w", err)
	}
	var live *state.Allocation
	if sl != nil && len(sl.live) > 0 {
		sortByName(sl.live)
		live = sl.live[0]
		for _, extra := range sl.live[1:] {
			s.stop(stopRequest{alloc: extra, desc: descDuplicate})
			du.Stop++
		}
	}
	if live != nil {
		switch {
		case n == nil || n.Status == state.NodeStatusDown ||
			(n.Status == state.NodeStatusDisconnected && tg.MaxClientDisconnect == nil):
			s.stop(stopRequest{alloc: live, desc: descLost, lost: true})
			du.Stop++
			return nil
		case boolValue(live.DesiredTransition.Migrate) && (n.Drain || n.DrainStrategy != nil):
			s.stop(stopRequest{alloc: live, desc: descMigrating})
			du.Stop++
			return nil
		case !poolMatches(s.job.NodePool, n) || !datacenterMatches(s.job.Datacenters, n.Datacenter):
			s.stop(stopRequest{alloc: live, desc: descNodeIneligible})
			du.Stop++
			return nil
		}
	}
	if n == nil || !ready {
		if live != nil {
			du.Ignore++
		}
		return nil
	}
	m := rk.newMetric()
	m.NodesEvaluated++
	if !rk.checker.feasible(n, m) {
		if live != nil {
			s.stop(stopRequest{alloc: live, desc: descNodeIneligible})
			du.Stop++
		}
		return nil
	}
	if live != nil {
		return s.update(rk, n, live, m)
	}
	if sl != nil && sl.done {
		du.Ignore++
		return nil
	}
	o, err := s.fit(rk, n, m)
	if err != nil || o == nil {
		return err
	}
	if !s.admit(rk, o, m) {
		return nil
	}
	s.ctx.planPlace(s.newAlloc(tg, allocName(s.job.ID, tg.Name, 0), o, m))
	du.Place++
	return nil
}

// admit counts a placement of the group against the namespace's quota
// (quota.go), or records it as a failed placement with the quota's reason
// and reports false.
func (s *systemScheduler) admit(rk *groupRanker, o *option, m *state.AllocMetric) bool {
	reason := s.quota.admit(&state.Allocation{Job: s.job, TaskGroup: rk.tg.Name, AllocatedResources: o.resources})
	if reason == "" {
		return true
	}
	s.quotaRefused(rk.tg.Name, reason, m.Copy())
	return false
}

// update brings a live allocation to the job's current version: in place
// when only in-place fields changed, otherwise by replacing it on the same
// node (the old one is kept if the new one does not fit).
func (s *systemScheduler) update(rk *groupRanker, n *state.Node, live *state.Allocation, m *state.AllocMetric) error {
	tg := rk.tg
	du := s.desiredFor(tg.Name)
	switch {
	case live.Job != nil && live.Job.JobModifyIndex == s.job.JobModifyIndex && live.Job.CreateIndex == s.job.CreateIndex:
		du.Ignore++
		return nil
	case !tasksUpdated(live.Job, s.job, tg.Name):
		c := live.CopySkipJob()
		c.Job = s.job
		c.ClientStatus, c.ClientDescription = "", ""
		s.ctx.planPlace(c)
		du.InPlaceUpdate++
		return nil
	}
	left, limited := s.rollingLeft[tg.Name]
	if limited && left <= 0 {
		// This batch is full: the rolling-update eval comes back for it.
		s.rollingHeld = max(s.rollingHeld, tg.Update.Stagger)
		du.Ignore++
		return nil
	}
	stopped := s.stop(stopRequest{alloc: live, desc: descUpdating})
	o, err := s.fit(rk, n, m)
	if err != nil || o == nil || !s.admit(rk, o, m) {
		s.unstop(stopped)
		return err
	}
	a := s.newAlloc(tg, live.Name, o, m)
	s.link(live, a)
	s.ctx.planPlace(a)
	du.DestructiveUpdate++
	if limited {
		s.rollingLeft[tg.Name] = left - 1
	}
	return nil
}

// fit ranks and grants the group on node n. When it does not fit, it
// records the failure and returns nil.
func (s *systemScheduler) fit(rk *groupRanker, n *state.Node, m *state.AllocMetric) (*option, error) {
	o, dim, err := rk.rank(n, -1, placeOptions{})
	if err != nil {
		return nil, err
	}
	if dim != "" {
		if s.preemptionEnabled() {
			if po, err := rk.preemptOnNode(n); err != nil || po != nil { // preempt.go
				return po, err
			}
		}
		exhausted(m, n, dim)
		s.placementFailed(rk.tg.Name, m)
		return nil, nil
	}
	ok, err := rk.grant(o, m)
	if err != nil {
		return nil, err
	}
	if !ok {
		// Its ports are taken: evicting their holders may free them.
		if s.preemptionEnabled() {
			if po, err := rk.preemptOnNode(n); err != nil || po != nil { // preempt.go
				return po, err
			}
		}
		s.placementFailed(rk.tg.Name, m)
		return nil, nil
	}
	recordScores(&rk.scores, m, []*option{o})
	return o, nil
}

// stopAll stops every live allocation of the list.
func (s *systemScheduler) stopAll(allocs []*state.Allocation, desc string) error {
	for _, a := range allocs {
		if a.Terminal() {
			continue
		}
		n, err := s.ctx.node(a.NodeID)
		if err != nil {
			return fmt.Errorf("read node: %w", err)
		}
		lost := n == nil || n.Status == state.NodeStatusDown
		s.stop(stopRequest{alloc: a, desc: desc, lost: lost})
		s.desiredFor(a.TaskGroup).Stop++
	}
	return nil
}

// desiredFor returns the annotation counters of a group.
func (c *schedCore) desiredFor(group string) *state.DesiredUpdates {
	du := c.desired[group]
	if du == nil {
		du = &state.DesiredUpdates{}
		c.desired[group] = du
	}
	return du
}
