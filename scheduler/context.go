package scheduler

import (
	"log/slog"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-version"

	"github.com/schedhq/sched/state"
)

// evalContext is what one scheduling attempt of an evaluation shares
// between feasibility, ranking and placement: the state it reads, the plan
// it builds, caches that keep a large cluster from being walked once per
// allocation, and the eval's seeded random source.
type evalContext struct {
	state  State
	plan   *Plan
	logger *slog.Logger
	now    time.Time
	rng    *rand.Rand

	elig *eligibility
	// checks counts feasibility evaluations that were not answered from
	// the class memo; tests use it to prove memoization works.
	checks int
	// ranks counts the nodes ranked for a placement (groupRanker.rank),
	// for tests.
	ranks int
	// planVersions counts, per node, the changes of the plan on it (a
	// placement, a stop, a stop taken back): what a node found full is
	// remembered with (groupRanker.full).
	planVersions map[string]int

	regexps  map[string]*regexp.Regexp
	versions map[string]version.Constraints
	semvers  map[string][]semverTerm
	classes  map[string]string
	nodes    map[string]*state.Node
	// reserved caches each node's parsed reserved ports.
	reserved map[string][]int
	// nodeAllocs caches the non-terminal allocations the state holds per
	// node, before the plan's changes.
	nodeAllocs map[string][]*state.Allocation
	// bases caches the usage the state has of nodes that are not among
	// the eval's ready nodes (slots).
	bases map[string]usage
	// ready are the eval's ready nodes (setNodes), numbered by their
	// place in it (in ID order, or through slots when not), and
	// slotUsage holds each one's usage as the state has it once read
	// (slotLoaded): the ranking reads a node's usage by its number,
	// without hashing its ID, and once most of the nodes are wanted,
	// reads them all in one pass (usageScanAfter).
	ready      []*state.Node
	slots      map[string]int32
	slotUsage  []usage
	slotLoaded []bool
	// slotChanged tells the slots whose node the plan has changed
	// (planChanged): on any other, the node's usage is the state's.
	slotChanged []bool
	// usageReads counts the point reads of node usage since setNodes,
	// and usageScanAfter is how many the eval makes before it reads
	// every node's usage at once instead; usageScanned tells it has.
	usageReads, usageScanAfter int
	usageScanned               bool
	// groups caches, per group key, the live allocations of that group
	// per node (groupCounts).
	groups map[string]map[string]int
	// allocByID caches the state's allocations looked up by ID.
	allocByID map[string]*state.Allocation
	// deltas holds, per node the plan changes, what its changes so far
	// make of the state's usage and group counts there (planDelta),
	// extended as the plan grows and dropped by planUnstop.
	deltas map[string]*planDelta
	// config is the scheduler configuration, read once per eval, and
	// pools the node pools of the nodes ranked so far (sched_config.go).
	config *state.SchedulerConfiguration
	pools  map[string]*state.NodePool
}

// groupKey identifies a job's task group among a node's allocations.
func groupKey(namespace, jobID, group string) string {
	return namespace + "\x00" + jobID + "\x00" + group
}

// inGroup reports whether a belongs to the group key names, that is
// whether groupKey(a.Namespace, a.JobID, a.TaskGroup) == key, without
// building the key (ranking compares every plan allocation on a node it
// looks at).
func inGroup(a *state.Allocation, key string) bool {
	ns, job, g := a.Namespace, a.JobID, a.TaskGroup
	if len(key) != len(ns)+len(job)+len(g)+2 {
		return false
	}
	j := len(ns) + 1
	k := j + len(job) + 1
	return key[:len(ns)] == ns && key[j-1] == 0 && key[j:k-1] == job && key[k-1] == 0 && key[k:] == g
}

// minUsageScan is the fewest point reads of node usage an eval makes
// before it reads every node's usage at once (usageScanAfter).
const minUsageScan = 64

// setNodes numbers the eval's ready nodes, and sizes the usage reads: a
// point read per node until the eval has made max(minUsageScan,
// total/16) of them, where total is every node the state holds (the
// usage table has at most that many rows), then one pass over the whole
// table when the state can (NodeUsageScanner). A c2m evaluation places
// 1,000 allocations and ranks 14 nodes for each: it reads the usage of
// nearly every one of 10,000 nodes, and a radix lookup each was a third
// of its scheduler's CPU.
//
// Node i is ready[i]. The state lists nodes in ID order, so a node's
// number is found by a binary search and the usage table, in the same
// order, is matched in one walk; ready in another order is numbered
// through a map.
//
// sorted tells ready is known to be in ID order (NodeSets checked it
// once); otherwise setNodes checks. ready is not changed.
func (c *evalContext) setNodes(ready []*state.Node, total int, sorted bool) {
	c.ready, c.slots = ready, nil
	if !sorted && !slices.IsSortedFunc(ready, func(a, b *state.Node) int { return strings.Compare(a.ID, b.ID) }) {
		c.slots = make(map[string]int32, len(ready))
		for i, n := range ready {
			c.slots[n.ID] = int32(i)
		}
	}
	c.slotUsage = make([]usage, len(ready))
	c.slotLoaded = make([]bool, len(ready))
	c.slotChanged = make([]bool, len(ready))
	for id := range c.planVersions {
		if i := c.slotOf(id); i >= 0 {
			c.slotChanged[i] = true
		}
	}
	c.usageReads, c.usageScanned = 0, false
	c.usageScanAfter = max(minUsageScan, total/16)
}

// newCursor numbers the eval's ready nodes (setNodes) and returns a
// cursor that walks them in an order shuffled by the eval's random
// source.
func (c *evalContext) newCursor(ready []*state.Node, total int, sorted bool) *nodeCursor {
	c.setNodes(ready, total, sorted)
	cur := &nodeCursor{nodes: slices.Clone(ready), slots: make([]int32, len(ready))}
	for i := range cur.slots {
		cur.slots[i] = int32(i)
	}
	c.rng.Shuffle(len(ready), func(i, j int) {
		cur.nodes[i], cur.nodes[j] = cur.nodes[j], cur.nodes[i]
		cur.slots[i], cur.slots[j] = cur.slots[j], cur.slots[i]
	})
	return cur
}

// slotOf is node nodeID's number among the eval's ready nodes, or -1.
func (c *evalContext) slotOf(nodeID string) int {
	if c.slots != nil {
		if i, ok := c.slots[nodeID]; ok {
			return int(i)
		}
		return -1
	}
	return c.seek(nodeID, 0)
}

// seek is slotOf for ready nodes in ID order, looking from number from
// on first: the next few in a walk, by a binary search of the rest
// after, and of the whole list when nodeID comes before from.
func (c *evalContext) seek(nodeID string, from int) int {
	r := c.ready
	lo, hi := 0, len(r)
	if from > 0 && from <= len(r) && r[from-1].ID < nodeID {
		// Every node before lo comes before nodeID.
		for lo = from; lo < min(from+4, len(r)); lo++ {
			if r[lo].ID >= nodeID {
				if r[lo].ID == nodeID {
					return lo
				}
				return -1
			}
		}
	}
	i := lo + sort.Search(hi-lo, func(k int) bool { return r[lo+k].ID >= nodeID })
	if i < len(r) && r[i].ID == nodeID {
		return i
	}
	return -1
}

// baseOf returns the usage the state has of the node (slot is its
// number among the eval's ready nodes, or -1 when not known), read once
// per eval from the store's node usage: constant time, however many
// allocations the node holds.
func (c *evalContext) baseOf(nodeID string, slot int) (usage, error) {
	if slot < 0 {
		slot = c.slotOf(nodeID)
	}
	if slot < 0 {
		if u, ok := c.bases[nodeID]; ok {
			return u, nil
		}
		u, err := c.readUsage(nodeID)
		if err != nil {
			return usage{}, err
		}
		c.bases[nodeID] = u
		return u, nil
	}
	if c.slotLoaded[slot] {
		return c.slotUsage[slot], nil
	}
	if sc, ok := c.state.(NodeUsageScanner); ok && !c.usageScanned && c.usageReads >= c.usageScanAfter {
		if err := c.scanUsage(sc); err != nil {
			return usage{}, err
		}
		return c.slotUsage[slot], nil
	}
	u, err := c.readUsage(nodeID)
	if err != nil {
		return usage{}, err
	}
	c.usageReads++
	c.slotUsage[slot], c.slotLoaded[slot] = u, true
	return u, nil
}

// readUsage reads one node's usage from the state.
func (c *evalContext) readUsage(nodeID string) (usage, error) {
	u, err := c.state.NodeUsage(nil, nodeID)
	if err != nil {
		return usage{}, err
	}
	return usage{CPU: u.CPU, MemoryMB: u.MemoryMB, DiskMB: u.DiskMB}, nil
}

// scanUsage reads the usage of every ready node in one pass of sc. A
// slot read before gets the same figures again (the state is the
// same).
func (c *evalContext) scanUsage(sc NodeUsageScanner) error {
	clear(c.slotUsage)
	next := 0
	err := sc.EachNodeUsage(func(u *state.NodeUsage) {
		var i int
		if c.slots != nil {
			i = c.slotOf(u.NodeID)
		} else {
			// The table is in ID order too: each row is found a step
			// or two after the previous one.
			i = c.seek(u.NodeID, next)
		}
		if i < 0 {
			return
		}
		next = i + 1
		s := &c.slotUsage[i]
		s.CPU += u.CPU
		s.MemoryMB += u.MemoryMB
		s.DiskMB += u.DiskMB
	})
	if err != nil {
		return err
	}
	for i := range c.slotLoaded {
		c.slotLoaded[i] = true
	}
	c.usageScanned = true
	return nil
}

// groupCounts returns, for the group key, how many of its live
// allocations each node holds in the state: read once per eval from the
// job's allocations.
func (c *evalContext) groupCounts(namespace, jobID, key string) (map[string]int, error) {
	if m, ok := c.groups[key]; ok {
		return m, nil
	}
	// all: an earlier job of the same ID still has allocations there.
	allocs, err := c.state.AllocsByJob(nil, namespace, jobID, true)
	if err != nil {
		return nil, err
	}
	m := map[string]int{}
	for _, a := range allocs {
		if !a.Terminal() && inGroup(a, key) {
			m[a.NodeID]++
		}
	}
	c.groups[key] = m
	return m, nil
}

// stateAlloc is the state's version of an allocation, looked up once per
// eval.
func (c *evalContext) stateAlloc(id string) (*state.Allocation, error) {
	if a, ok := c.allocByID[id]; ok {
		return a, nil
	}
	a, err := c.state.AllocByID(nil, id)
	if err != nil {
		return nil, err
	}
	c.allocByID[id] = a
	return a, nil
}

// proposedUsage is what proposedAllocs would sum to — the grant of the
// allocations on the node once the plan applies — and how many of them
// belong to the group key (of the job's namespace and ID), computed from
// the node's usage and the plan's changes to that node alone. slot is
// the node's number among the eval's ready nodes, or -1 (baseOf).
//
// The plan's changes are folded into the node's planDelta as they come
// (deltaOf), so a call costs what the plan added since the last one, not
// all it holds for the node: placing a count=1,000 group on one node
// ranked it 1,000 times, each walking every placement made so far.
func (c *evalContext) proposedUsage(nodeID string, slot int, namespace, jobID, key string) (usage, int, error) {
	if slot < 0 {
		slot = c.slotOf(nodeID)
	}
	used, err := c.baseOf(nodeID, slot)
	if err != nil {
		return usage{}, 0, err
	}
	counts, err := c.groupCounts(namespace, jobID, key)
	if err != nil {
		return usage{}, 0, err
	}
	n := counts[nodeID]
	if slot >= 0 && !c.slotChanged[slot] {
		// The plan has not changed the node.
		return used, n, nil
	}
	d, err := c.deltaOf(nodeID, key)
	if err != nil {
		return usage{}, 0, err
	}
	used.CPU += d.used.CPU
	used.MemoryMB += d.used.MemoryMB
	used.DiskMB += d.used.DiskMB
	k, _ := d.group(key)
	return used, n + k, nil
}

// planDelta is what the plan's changes to one node make of the state's
// allocations there, as of the first stops, preempts and places entries
// of the node's NodeUpdate, NodePreemptions and NodeAllocation lists:
//
//   - what the plan stops, evicts or replaces leaves the node, once per
//     ID whichever lists name it (left), when the state holds it live
//     there: its grant is taken off used, and it is taken off the count
//     of each group key in groups it belongs to;
//   - each placement that is not terminal adds its grant to used, and 1
//     to the count of its group key.
//
// The plan only grows through planPlace, planStop and planPreempt, which
// append: a planDelta is brought up to date by folding in the entries
// past the ones it counted (deltaOf). planUnstop takes an entry out of
// the middle of a list: it drops the node's planDelta (forget), and the
// next call folds the node's lists again from the start. The state's
// allocations do not change within an eval (the context is made anew for
// each attempt, on its snapshot), so what left once stays counted.
type planDelta struct {
	stops, preempts, places int
	// left holds each ID the plan's changes take off the node, with the
	// state's allocation that leaves, or nil when the state holds none
	// live there (a new allocation, one on another node, a terminal
	// one). leftIndex indexes it by ID once it holds more than
	// maxLeftScan: most nodes a plan changes get an entry or two, and
	// a map for each would cost more than the walk it saves.
	left      []leftAlloc
	leftIndex map[string]struct{}
	used      usage
	// groups holds the change of the count of each group key asked for
	// so far (a key first asked is counted over what is folded, then
	// kept up to date); an eval asks for few, one per group it places.
	groups []groupDelta
	// ports counts, once asked for (proposedPorts), how many of the
	// node's proposed allocations hold each host port: the state's live
	// ones that do not leave and the plan's placements that are not
	// terminal, as proposedAllocs lists them. It is made with the
	// first port counted: nil while none is (most nodes hold none).
	ports      portCounts
	portsKnown bool

	// The first entries of left and groups, in the planDelta's own
	// allocation.
	leftBuf   [2]leftAlloc
	groupsBuf [1]groupDelta
}

// leftAlloc is an ID that leaves a node, and the state's allocation that
// leaves with it (nil: none).
type leftAlloc struct {
	id    string
	alloc *state.Allocation
}

// maxLeftScan is how many IDs a planDelta looks through without an
// index.
const maxLeftScan = 8

// hasLeft reports whether the ID is among those that left.
func (d *planDelta) hasLeft(id string) bool {
	if d.leftIndex != nil {
		_, ok := d.leftIndex[id]
		return ok
	}
	for _, l := range d.left {
		if l.id == id {
			return true
		}
	}
	return false
}

// addLeft records that the ID left, with the state's allocation e.
func (d *planDelta) addLeft(id string, e *state.Allocation) {
	d.left = append(d.left, leftAlloc{id, e})
	switch {
	case d.leftIndex != nil:
		d.leftIndex[id] = struct{}{}
	case len(d.left) > maxLeftScan:
		d.leftIndex = make(map[string]struct{}, 2*len(d.left))
		for _, l := range d.left {
			d.leftIndex[l.id] = struct{}{}
		}
	}
}

// groupDelta is the change the plan makes to the count of a group key's
// allocations on a node.
type groupDelta struct {
	key string
	n   int
}

// group returns the change of key's count, and whether key is counted.
func (d *planDelta) group(key string) (int, bool) {
	for _, g := range d.groups {
		if g.key == key {
			return g.n, true
		}
	}
	return 0, false
}

// deltaOf returns the node's planDelta, counting key among its groups
// (none: ""), with every change the plan now holds for the node folded
// in. On an error the node's delta is dropped, to be folded again from
// the start.
func (c *evalContext) deltaOf(nodeID, key string) (*planDelta, error) {
	d := c.deltas[nodeID]
	if d == nil {
		if c.deltas == nil {
			c.deltas = map[string]*planDelta{}
		}
		d = &planDelta{}
		d.left, d.groups = d.leftBuf[:0], d.groupsBuf[:0]
		c.deltas[nodeID] = d
	}
	stops := c.plan.NodeUpdate[nodeID]
	preempts := c.plan.NodePreemptions[nodeID]
	places := c.plan.NodeAllocation[nodeID]
	if _, ok := d.group(key); !ok && key != "" {
		k := 0
		for _, l := range d.left {
			if l.alloc != nil && inGroup(l.alloc, key) {
				k--
			}
		}
		for _, a := range places[:d.places] {
			if !a.Terminal() && inGroup(a, key) {
				k++
			}
		}
		d.groups = append(d.groups, groupDelta{key, k})
	}
	for ; d.stops < len(stops); d.stops++ {
		if err := c.leave(d, nodeID, stops[d.stops].ID); err != nil {
			return nil, err
		}
	}
	for ; d.preempts < len(preempts); d.preempts++ {
		if err := c.leave(d, nodeID, preempts[d.preempts].ID); err != nil {
			return nil, err
		}
	}
	for ; d.places < len(places); d.places++ {
		a := places[d.places]
		if err := c.leave(d, nodeID, a.ID); err != nil {
			return nil, err
		}
		if a.Terminal() {
			continue
		}
		d.used.add(a.AllocatedResources)
		if d.portsKnown {
			d.addPorts(a.AllocatedResources, 1)
		}
		for i := range d.groups {
			if inGroup(a, d.groups[i].key) {
				d.groups[i].n++
			}
		}
	}
	return d, nil
}

// leave folds into d that the plan takes allocation id off the node: the
// state's version of it leaves, the first time the ID is named, when it
// is live there.
func (c *evalContext) leave(d *planDelta, nodeID, id string) error {
	if d.hasLeft(id) {
		return nil
	}
	e, err := c.stateAlloc(id)
	if err != nil {
		c.forget(nodeID)
		return err
	}
	if e != nil && (e.NodeID != nodeID || e.Terminal()) {
		e = nil
	}
	d.addLeft(id, e)
	if e == nil {
		return nil
	}
	d.used.sub(e.AllocatedResources)
	if d.portsKnown {
		d.addPorts(e.AllocatedResources, -1)
	}
	for i := range d.groups {
		if inGroup(e, d.groups[i].key) {
			d.groups[i].n--
		}
	}
	return nil
}

// portCounts counts, per host port, the allocations that hold it.
type portCounts map[int]int32

// has reports whether an allocation holds port p.
func (pc portCounts) has(p int) bool { return pc[p] > 0 }

// addPorts counts the ports of a grant (sign 1) in d.ports, or takes
// them off (-1).
func (d *planDelta) addPorts(r *state.AllocatedResources, sign int32) {
	for _, p := range allocPorts(r) {
		if d.ports == nil {
			d.ports = portCounts{}
		}
		d.ports[p] += sign
	}
}

// proposedPorts returns the host ports the allocations proposedAllocs
// would list for the node hold, counted per port: what a port picker
// there starts from. It is built once per node from the state's
// allocations and then kept up to date with the plan (planDelta), so
// granting ports to a count=1,000 group on one node no longer walks
// every allocation placed there so far for each one. The caller must not
// change it.
func (c *evalContext) proposedPorts(nodeID string) (portCounts, error) {
	d, err := c.deltaOf(nodeID, "")
	if err != nil {
		return nil, err
	}
	if d.portsKnown {
		return d.ports, nil
	}
	existing, err := c.existingAllocs(nodeID)
	if err != nil {
		return nil, err
	}
	for _, a := range existing {
		d.addPorts(a.AllocatedResources, 1)
	}
	for _, l := range d.left {
		if l.alloc != nil {
			d.addPorts(l.alloc.AllocatedResources, -1)
		}
	}
	for _, a := range c.plan.NodeAllocation[nodeID][:d.places] {
		if !a.Terminal() {
			d.addPorts(a.AllocatedResources, 1)
		}
	}
	d.portsKnown = true
	return d.ports, nil
}

// forget drops what is folded of the plan's changes to the node
// (planDelta): a change other than an append (planUnstop), or a fold an
// error cut short.
func (c *evalContext) forget(nodeID string) {
	delete(c.deltas, nodeID)
}

func newEvalContext(st State, plan *Plan, logger *slog.Logger, now time.Time, seed uint64) *evalContext {
	return &evalContext{
		state:      st,
		plan:       plan,
		logger:     logger,
		now:        now,
		rng:        rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		elig:       newEligibility(),
		regexps:    map[string]*regexp.Regexp{},
		versions:   map[string]version.Constraints{},
		semvers:    map[string][]semverTerm{},
		classes:    map[string]string{},
		nodes:      map[string]*state.Node{},
		nodeAllocs: map[string][]*state.Allocation{},
		bases:      map[string]usage{},
		groups:     map[string]map[string]int{},
		allocByID:  map[string]*state.Allocation{},
		reserved:   map[string][]int{},
	}
}

// classOf returns a node's computed class: the stored one, or one computed
// (once per eval) for a node registered without it.
func (c *evalContext) classOf(n *state.Node) string {
	if n.ComputedClass != "" {
		return n.ComputedClass
	}
	cc, ok := c.classes[n.ID]
	if !ok {
		cc = ComputeClass(n)
		c.classes[n.ID] = cc
	}
	return cc
}

// node returns a node by ID, cached for the eval; nil when it is gone.
func (c *evalContext) node(id string) (*state.Node, error) {
	if n, ok := c.nodes[id]; ok {
		return n, nil
	}
	n, err := c.state.NodeByID(nil, id)
	if err != nil {
		return nil, err
	}
	c.nodes[id] = n
	return n, nil
}

// existingAllocs returns the non-terminal allocations the state holds on
// a node.
func (c *evalContext) existingAllocs(nodeID string) ([]*state.Allocation, error) {
	if as, ok := c.nodeAllocs[nodeID]; ok {
		return as, nil
	}
	all, err := c.state.AllocsByNode(nil, nodeID)
	if err != nil {
		return nil, err
	}
	live := make([]*state.Allocation, 0, len(all))
	for _, a := range all {
		if !a.Terminal() {
			live = append(live, a)
		}
	}
	c.nodeAllocs[nodeID] = live
	return live, nil
}

// proposedAllocs returns the allocations that will be on a node once the
// plan so far is committed: those the state holds that the plan does not
// stop or replace, and the plan's own for the node.
//
// It builds the list anew on each call, walking every change the plan
// holds for the node. Its callers are off the per-placement path: the
// distinct_hosts check (which stops at the group's first allocation on a
// node) and preemption (which weighs every allocation on a node anyway);
// granting ports, which asked for it on each placement, reads the
// incremental proposedPorts instead.
func (c *evalContext) proposedAllocs(nodeID string) ([]*state.Allocation, error) {
	existing, err := c.existingAllocs(nodeID)
	if err != nil {
		return nil, err
	}
	stops, places := c.plan.NodeUpdate[nodeID], c.plan.NodeAllocation[nodeID]
	if c.plan.NodePreemptions != nil {
		stops = append(stops[:len(stops):len(stops)], c.plan.NodePreemptions[nodeID]...)
	}
	if len(stops) == 0 && len(places) == 0 {
		return existing, nil
	}
	drop := make(map[string]bool, len(stops)+len(places))
	for _, a := range stops {
		drop[a.ID] = true
	}
	for _, a := range places {
		drop[a.ID] = true
	}
	out := make([]*state.Allocation, 0, len(existing)+len(places))
	for _, a := range existing {
		if !drop[a.ID] {
			out = append(out, a)
		}
	}
	for _, a := range places {
		if !a.Terminal() {
			out = append(out, a)
		}
	}
	return out, nil
}

// reservedPorts returns a node's reserved ports, parsed once per eval.
func (c *evalContext) reservedPorts(n *state.Node) ([]int, error) {
	if ps, ok := c.reserved[n.ID]; ok {
		return ps, nil
	}
	set, err := nodeReservedPorts(n)
	if err != nil {
		return nil, err
	}
	ps := make([]int, 0, len(set))
	for p := range set {
		ps = append(ps, p)
	}
	c.reserved[n.ID] = ps
	return ps, nil
}

// regexp returns the compiled pattern, compiling it once per eval.
func (c *evalContext) regexp(pattern string) (*regexp.Regexp, error) {
	if re, ok := c.regexps[pattern]; ok {
		return re, nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	c.regexps[pattern] = re
	return re, nil
}

// versionConstraint returns the parsed constraint, parsing it once per
// eval.
func (c *evalContext) versionConstraint(s string) (version.Constraints, error) {
	if vc, ok := c.versions[s]; ok {
		return vc, nil
	}
	vc, err := version.NewConstraint(s)
	if err != nil {
		return nil, err
	}
	c.versions[s] = vc
	return vc, nil
}

// semverConstraint returns the parsed semver constraint, once per eval.
func (c *evalContext) semverConstraint(s string) ([]semverTerm, error) {
	if t, ok := c.semvers[s]; ok {
		return t, nil
	}
	t, err := parseSemverConstraint(s)
	if err != nil {
		return nil, err
	}
	c.semvers[s] = t
	return t, nil
}

// planChanged counts a change of the plan on a node (planVersions).
func (c *evalContext) planChanged(nodeID string) {
	if c.planVersions == nil {
		c.planVersions = map[string]int{}
	}
	c.planVersions[nodeID]++
	if i := c.slotOf(nodeID); i >= 0 {
		c.slotChanged[i] = true
	}
}

// planVersion is planVersions[nodeID] (slot is the node's number among
// the eval's ready nodes, or -1), without hashing the ID when the plan
// has not changed the node (slotChanged).
func (c *evalContext) planVersion(nodeID string, slot int) int {
	if slot >= 0 && slot < len(c.slotChanged) && !c.slotChanged[slot] {
		return 0
	}
	return c.planVersions[nodeID]
}

// planPlace adds a new or updated allocation to the plan.
func (c *evalContext) planPlace(a *state.Allocation) {
	c.planChanged(a.NodeID)
	if c.plan.NodeAllocation == nil {
		c.plan.NodeAllocation = map[string][]*state.Allocation{}
	}
	c.plan.NodeAllocation[a.NodeID] = append(c.plan.NodeAllocation[a.NodeID], a)
}

// planStop adds a stop to the plan.
func (c *evalContext) planStop(a *state.Allocation) {
	c.planChanged(a.NodeID)
	if c.plan.NodeUpdate == nil {
		c.plan.NodeUpdate = map[string][]*state.Allocation{}
	}
	c.plan.NodeUpdate[a.NodeID] = append(c.plan.NodeUpdate[a.NodeID], a)
}

// planPreempt adds an eviction to the plan.
func (c *evalContext) planPreempt(a *state.Allocation) {
	c.planChanged(a.NodeID)
	if c.plan.NodePreemptions == nil {
		c.plan.NodePreemptions = map[string][]*state.Allocation{}
	}
	c.plan.NodePreemptions[a.NodeID] = append(c.plan.NodePreemptions[a.NodeID], a)
}

// planUnstop takes back the last stop added for a node, when the
// placement it made room for failed.
func (c *evalContext) planUnstop(a *state.Allocation) {
	c.planChanged(a.NodeID)
	// The list loses an entry, maybe one deltas folded: the node's
	// changes are folded again from the start when next asked.
	c.forget(a.NodeID)
	list := c.plan.NodeUpdate[a.NodeID]
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].ID == a.ID {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(c.plan.NodeUpdate, a.NodeID)
	} else {
		c.plan.NodeUpdate[a.NodeID] = list
	}
}
