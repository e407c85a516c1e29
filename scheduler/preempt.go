package scheduler

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/schedhq/sched/state"
)

// Preemption: when no node has room for an allocation and the scheduler
// configuration enables preemption for the job's type, the scheduler
// looks for a node where evicting allocations of lower-priority jobs
// makes room. It runs only after a placement failed, so a cluster where
// everything fits never pays for it.
//
// Rules (docs/scheduler.md#preemption):
//   - only allocations of jobs whose priority is at least
//     PreemptionPriorityDelta below the placing job's are candidates, and
//     never the placing job's own;
//   - on a node, candidates are taken lowest priority first; among equal
//     priorities, those that would move anyway (asked to migrate or
//     reschedule) first, then those that free most of what is missing, so
//     that few are evicted; then any victim not needed once the others are
//     chosen is given back, highest priority first;
//   - host ports count as resources: an allocation holding a static port
//     the group asks for is a victim whatever else is chosen (the node is
//     passed over when it may not be evicted), and ports of a full dynamic
//     range are freed like CPU;
//   - among nodes, the one whose victims have the lowest highest priority
//     wins, then the fewest victims, then the lowest sum of priorities, then
//     the node order of the evaluation.
//
// The plan carries the victims in NodePreemptions (DesiredStatus evict,
// PreemptedByAllocation naming the new allocation, which lists them in
// PreemptedAllocations) and one evaluation per victim job in
// PreemptionEvals, so the victims are placed elsewhere or blocked.

// PreemptionPriorityDelta is how much higher a job's priority must be
// than another's for it to preempt the other's allocations.
const PreemptionPriorityDelta = 10

// maxPreemptNodes bounds how many nodes where evictions make room one
// preempting placement compares: on a large cluster full of low-priority
// work most nodes qualify, and walking them all would cost a preempting
// placement a read of every allocation of the cluster.
const maxPreemptNodes = 64

// preemptionEnabled reports whether the eval's job may preempt.
func (c *schedCore) preemptionEnabled() bool {
	return c.job != nil && c.ctx.schedConfig().PreemptionEnabled(c.job.Type)
}

// preemption is one node's way to make room: the victims and what they
// weigh.
type preemption struct {
	node    *state.Node
	victims []*state.Allocation
	maxPrio int
	sumPrio int
}

// compare orders preemptions best first.
func (p preemption) compare(q preemption) int {
	return cmp.Or(cmp.Compare(p.maxPrio, q.maxPrio), cmp.Compare(len(p.victims), len(q.victims)), cmp.Compare(p.sumPrio, q.sumPrio))
}

// selectPreempt finds a node for one allocation of the group by evicting
// allocations there, after selectNode found none with room. It returns nil
// when no node can make room. It walks the eval's nodes from the start of
// their (shuffled) order and leaves the cursor where it is.
func (r *groupRanker) selectPreempt() (*option, error) {
	var found []preemption
	scratch := new(state.AllocMetric)
	for _, n := range r.nodes.nodes {
		if len(found) >= maxPreemptNodes {
			break
		}
		if !r.checker.feasible(n, scratch) {
			continue
		}
		p, err := r.preemptionOn(n)
		if err != nil {
			return nil, err
		}
		if p != nil {
			found = append(found, *p)
		}
	}
	slices.SortStableFunc(found, preemption.compare)
	for _, p := range found {
		o, err := r.grantPreempting(p)
		if err != nil || o != nil {
			return o, err
		}
	}
	return nil, nil
}

// preemptOnNode is selectPreempt for one given node (the system
// schedulers place on each node in turn).
func (r *groupRanker) preemptOnNode(n *state.Node) (*option, error) {
	p, err := r.preemptionOn(n)
	if err != nil || p == nil {
		return nil, err
	}
	return r.grantPreempting(*p)
}

// grantPreempting grants the group on p's node once p's victims are gone;
// nil when its ports cannot be granted even then.
func (r *groupRanker) grantPreempting(p preemption) (*option, error) {
	proposed, err := r.ctx.proposedAllocs(p.node.ID)
	if err != nil {
		return nil, err
	}
	rest := make([]*state.Allocation, 0, len(proposed))
	for _, a := range proposed {
		if !slices.Contains(p.victims, a) {
			rest = append(rest, a)
		}
	}
	ask := r.askOn(p.node)
	res, dim := r.resourcesOn(p.node, rest, nil, ask)
	if dim != "" {
		return nil, nil
	}
	o := r.newOption(p.node, ask)
	o.resources = res
	o.preempt = p.victims
	return o, nil
}

// room is what a placement is short of on a node, or what a victim
// frees there: CPU, memory and disk, and ports of the node's dynamic
// range.
type room struct {
	usage
	dyn int
}

func (r *room) add(o room) {
	r.CPU, r.MemoryMB, r.DiskMB, r.dyn = r.CPU+o.CPU, r.MemoryMB+o.MemoryMB, r.DiskMB+o.DiskMB, r.dyn+o.dyn
}

func (r room) minus(o room) room {
	return room{usage{r.CPU - o.CPU, r.MemoryMB - o.MemoryMB, r.DiskMB - o.DiskMB}, r.dyn - o.dyn}
}

// candidate is an allocation that may be evicted, with how it sorts.
type candidate struct {
	alloc *state.Allocation
	prio  int
	moves bool
	gain  float64
	res   room
	// must: it holds a static port the group asks for, so it goes
	// whatever else is chosen.
	must bool
}

// groupPorts is what a group asks of a node's ports: the static ports it
// names and how many dynamic ones it needs.
type groupPorts struct {
	static []int
	dyn    int
}

// portsAsked lists the group's static ports and counts its dynamic ones.
func (r *groupRanker) portsAsked() groupPorts {
	var g groupPorts
	addNets := func(nets []*state.NetworkResource) {
		for _, n := range nets {
			if n == nil {
				continue
			}
			for _, p := range n.ReservedPorts {
				if p.Value > 0 {
					g.static = append(g.static, p.Value)
				}
			}
			g.dyn += len(n.DynamicPorts)
		}
	}
	addNets(r.tg.Networks)
	for _, t := range r.tg.Tasks {
		if t.Resources != nil {
			addNets(t.Resources.Networks)
		}
	}
	return g
}

// preemptionOn returns the victims whose eviction lets the group fit on
// n, or nil when there are none or evicting every candidate would not be
// enough. Ports count as resources: an allocation holding a static port
// the group asks for must be evicted (and when it may not be, the node
// cannot be used), and when the node's dynamic range has fewer free ports
// than the group needs, victims must free them.
func (r *groupRanker) preemptionOn(n *state.Node) (*preemption, error) {
	ask := r.askOn(n)
	capa := capacity(n)
	if (usage{ask.CPU, ask.MemoryMB, ask.DiskMB}).exceeds(capa) != "" {
		return nil, nil // too small even empty
	}
	proposed, err := r.ctx.proposedAllocs(n.ID)
	if err != nil {
		return nil, err
	}
	var asked groupPorts
	var wanted, usedDyn portSet
	lo, hi := dynamicRange(n)
	inRange := func(p int) bool { return p >= lo && p <= hi }
	if r.needsPorts() {
		asked = r.portsAsked()
		reserved, err := r.ctx.reservedPorts(n)
		if err != nil {
			return nil, nil // a malformed node is never placed on
		}
		wanted, usedDyn = portSet{}, portSet{}
		for _, p := range asked.static {
			wanted.add(p)
			if inRange(p) {
				usedDyn.add(p)
			}
		}
		for _, p := range reserved {
			if wanted.has(p) {
				return nil, nil // the node keeps the port for itself
			}
			if inRange(p) {
				usedDyn.add(p)
			}
		}
	}
	var used usage
	var cands []candidate
	mustGo := false
	limit := r.job.Priority - PreemptionPriorityDelta
	for _, a := range proposed {
		if a.Terminal() || a.AllocatedResources == nil {
			continue
		}
		var res room
		res.usage.add(a.AllocatedResources)
		used.CPU, used.MemoryMB, used.DiskMB = used.CPU+res.CPU, used.MemoryMB+res.MemoryMB, used.DiskMB+res.DiskMB
		holds := false
		if wanted != nil {
			for _, p := range allocPorts(a.AllocatedResources) {
				holds = holds || wanted.has(p)
				if inRange(p) && !usedDyn.has(p) {
					usedDyn.add(p)
					res.dyn++
				}
			}
		}
		if a.Job == nil || a.Job.Priority > limit || (a.Namespace == r.job.Namespace && a.JobID == r.job.ID) {
			if holds {
				return nil, nil // the port's holder may not be evicted
			}
			continue
		}
		mustGo = mustGo || holds
		cands = append(cands, candidate{alloc: a, prio: a.Job.Priority, moves: wouldMove(a), res: res, must: holds})
	}
	need := room{usage{used.CPU + ask.CPU - capa.CPU, used.MemoryMB + ask.MemoryMB - capa.MemoryMB, used.DiskMB + ask.DiskMB - capa.DiskMB}, 0}
	if asked.dyn > 0 {
		need.dyn = asked.dyn - (hi - lo + 1 - len(usedDyn))
	}
	if len(cands) == 0 || (!mustGo && need.CPU <= 0 && need.MemoryMB <= 0 && need.DiskMB <= 0 && need.dyn <= 0) {
		// Nothing to evict, or the room is there and something else
		// failed: eviction is not the answer.
		return nil, nil
	}
	for i := range cands {
		cands[i].gain = gain(cands[i].res, need)
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(-cmpBool(a.must, b.must), cmp.Compare(a.prio, b.prio), -cmpBool(a.moves, b.moves), cmp.Compare(b.gain, a.gain), cmp.Compare(a.alloc.ID, b.alloc.ID))
	})
	var freed room
	chosen := cands[:0:0]
	for _, c := range cands {
		if !c.must && covers(freed, need) {
			break
		}
		chosen = append(chosen, c)
		freed.add(c.res)
	}
	if !covers(freed, need) {
		return nil, nil
	}
	// Give back what is not needed, the most valuable first; a port's
	// holder stays chosen.
	for i := len(chosen) - 1; i >= 0; i-- {
		c := chosen[i]
		if c.must {
			continue
		}
		if less := freed.minus(c.res); covers(less, need) {
			freed = less
			chosen = slices.Delete(chosen, i, i+1)
		}
	}
	p := &preemption{node: n, victims: make([]*state.Allocation, len(chosen))}
	for i, c := range chosen {
		p.victims[i] = c.alloc
		p.maxPrio = max(p.maxPrio, c.prio)
		p.sumPrio += c.prio
	}
	return p, nil
}

// covers reports whether freed makes up for need in every dimension.
func covers(freed, need room) bool {
	return freed.CPU >= need.CPU && freed.MemoryMB >= need.MemoryMB && freed.DiskMB >= need.DiskMB && freed.dyn >= need.dyn
}

// gain is how much of what is missing res frees: the mean, over the
// dimensions short, of the part of the shortfall it covers.
func gain(res, need room) float64 {
	sum, dims := 0.0, 0
	for _, d := range [][2]int{{res.CPU, need.CPU}, {res.MemoryMB, need.MemoryMB}, {res.DiskMB, need.DiskMB}, {res.dyn, need.dyn}} {
		if d[1] > 0 {
			sum += min(float64(d[0])/float64(d[1]), 1)
			dims++
		}
	}
	if dims == 0 {
		return 0
	}
	return sum / float64(dims)
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// wouldMove reports whether an allocation is already asked to leave its
// node (migrate or reschedule): evicting it costs least.
func wouldMove(a *state.Allocation) bool {
	t := a.DesiredTransition
	return boolValue(t.Migrate) || boolValue(t.Reschedule) || boolValue(t.ForceReschedule)
}

// evict plans the eviction of victims to make room for a, records them on
// a, counts them in a's group's annotations, and adds an evaluation of
// each victim's job to the plan.
func (c *schedCore) evict(a *state.Allocation, victims []*state.Allocation) {
	ids := make([]string, len(victims))
	for i, v := range victims {
		ids[i] = v.ID
		cp := v.CopySkipJob()
		cp.DesiredStatus = state.AllocDesiredStatusEvict
		cp.DesiredDescription = fmt.Sprintf("Preempted by alloc ID %s", a.ID)
		cp.PreemptedByAllocation = a.ID
		cp.ClientStatus, cp.ClientDescription = "", ""
		c.ctx.planPreempt(cp)
		c.preemptionEval(v)
	}
	a.PreemptedAllocations = ids
	c.desiredFor(a.TaskGroup).Preemptions += uint64(len(victims))
}

// preemptionEval adds to the plan an evaluation of v's job, once per job.
func (c *schedCore) preemptionEval(v *state.Allocation) {
	for _, e := range c.plan.PreemptionEvals {
		if e.Namespace == v.Namespace && e.JobID == v.JobID {
			return
		}
	}
	now := c.ctx.now.UnixNano()
	c.plan.PreemptionEvals = append(c.plan.PreemptionEvals, &state.Evaluation{
		ID:             c.cfg.NewID(),
		Namespace:      v.Namespace,
		Priority:       v.Job.Priority,
		Type:           v.Job.Type,
		TriggeredBy:    state.EvalTriggerPreemption,
		JobID:          v.JobID,
		JobModifyIndex: v.Job.JobModifyIndex,
		Status:         state.EvalStatusPending,
		SnapshotIndex:  c.plan.SnapshotIndex,
		CreateTime:     now,
		ModifyTime:     now,
	})
}

// preemptedStubs lists a plan's evictions for its annotations, in node
// order.
func preemptedStubs(p *Plan) []*state.AllocListStub {
	var out []*state.AllocListStub
	for _, node := range sortedKeys(p.NodePreemptions) {
		for _, a := range p.NodePreemptions[node] {
			out = append(out, a.Stub())
		}
	}
	return out
}
