package scheduler

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/schedhq/sched/state"
)

// Score components, named in AllocMetric.Scores as "<node-id>.<component>".
// The order rank adds them in is the order state.Scores expects the
// normalized score to be the mean of (it then keeps no copy of it).
const (
	scoreBinPack         = state.ScoreBinPack
	scoreJobAntiAffinity = state.ScoreJobAntiAffinity
	scoreReschedule      = state.ScoreReschedule
	scoreAffinity        = state.ScoreAffinity
	scoreSpread          = state.ScoreSpread
	scoreNormalized      = state.ScoreNormalized
)

// Ranking limits.
const (
	// batchLimit is how many fitting nodes a batch placement compares.
	// Batch work is short-lived, so a quick good-enough choice wins.
	batchLimit = 2
	// maxSkip is how many fitting nodes with a negative score (another
	// allocation of the job is there, or the allocation just failed
	// there) are set aside while looking for better ones; they are used
	// only when too few others fit.
	maxSkip = 3
	// topScores is how many of the best nodes' scores a metric keeps.
	topScores = 5
)

// rankLimit is how many fitting nodes one placement compares before
// taking the best: for service jobs ceil(log2(n)) of the n ready nodes,
// at least 2, which keeps placement cost logarithmic in the cluster size
// while the shuffled order and bin packing still find good nodes; for
// batch jobs 2. With spreads or affinities every node is compared, since
// they only mean something measured against the whole cluster.
func rankLimit(job *state.Job, tg *state.TaskGroup, n int) int {
	if hasPreferences(job, tg) {
		return n
	}
	if job.Type == state.JobTypeBatch {
		return batchLimit
	}
	return max(2, int(math.Ceil(math.Log2(float64(max(n, 1))))))
}

// hasPreferences reports whether a group has spreads or affinities.
func hasPreferences(job *state.Job, tg *state.TaskGroup) bool {
	if len(job.Spreads)+len(tg.Spreads)+len(job.Affinities)+len(tg.Affinities) > 0 {
		return true
	}
	for _, t := range tg.Tasks {
		if len(t.Affinities) > 0 {
			return true
		}
	}
	return false
}

// scoreComponent is one named part of a node's score.
type scoreComponent struct {
	name  string
	value float64
}

// option is a node ranked for one placement, with what the allocation
// would be granted there.
type option struct {
	node       *state.Node
	score      float64
	components []scoreComponent
	// resources is what the allocation gets, filled by grant once the
	// option is chosen: ports are only picked for the node that wins.
	resources *state.AllocatedResources
	ask       groupAsk
	// preempt are the allocations to evict for the allocation to fit
	// (preempt.go); nil for an ordinary placement.
	preempt []*state.Allocation
}

// groupRanker places the allocations of one task group: it walks the
// eval's shuffled ready nodes from where the previous placement stopped,
// keeps the first rankLimit nodes that are feasible and fit, and picks the
// highest score among them.
type groupRanker struct {
	ctx       *evalContext
	job       *state.Job
	tg        *state.TaskGroup
	checker   *groupChecker
	spread    *spreadScorer
	affinity  *affinityScorer
	nodes     *nodeCursor
	limit     int
	jobAllocs []*state.Allocation
	base      state.AllocMetric
	// ask caches the group's request when no task asks for whole cores,
	// the only part that depends on the node.
	ask *groupAsk
	// scores builds each placement's scores, its room reused.
	scores state.ScoresBuilder
	// options are the options rank made, reused from one selectNode to
	// the next (usedOptions of them in use): a placement ranks some
	// fifteen nodes, and an option and its components each was a tenth
	// of the scheduler's garbage. An option selectNode returns is valid
	// until the next call.
	options     []*option
	usedOptions int
	// ranked and skipped are selectNode's lists, their room reused.
	ranked, skipped []*option
	// key is the group's groupKey, made once (rank needs it for every
	// node it ranks).
	key string
	// full remembers the nodes rank found without room for the group in
	// this evaluation, with the version of the plan on each then. Until
	// the plan changes on the node (a stop could free room, an in-place
	// update could shrink), it is full again at the next placement's walk
	// and is counted exhausted without being ranked again: once nodes fill
	// up under bin-packing, the walk passes many of them (issue 19).
	// fullSlots holds the marks of the eval's ready nodes by their number
	// (evalContext.setNodes), full those of other nodes: late in a large
	// run a walk passes a handful of full nodes for each placement, and
	// hashing each node's ID for these lookups grew with the nodes filled.
	full      map[string]fullMark
	fullSlots []fullMark
}

// fullOf returns the mark of node n (slot is its number among the eval's
// ready nodes, or -1), if rank found it full.
func (r *groupRanker) fullOf(n *state.Node, slot int) (fullMark, bool) {
	if slot >= 0 && slot < len(r.ctx.ready) {
		if slot < len(r.fullSlots) {
			f := r.fullSlots[slot]
			return f, f.dim != ""
		}
		return fullMark{}, false
	}
	f, ok := r.full[n.ID]
	return f, ok
}

// markFull records that rank found node n (numbered slot, or -1) full
// in dimension dim, at the plan's version on it.
func (r *groupRanker) markFull(n *state.Node, slot int, dim string) {
	f := fullMark{dim, r.ctx.planVersion(n.ID, slot)}
	if slot >= 0 && slot < len(r.ctx.ready) {
		if r.fullSlots == nil {
			r.fullSlots = make([]fullMark, len(r.ctx.ready))
		}
		r.fullSlots[slot] = f
		return
	}
	if r.full == nil {
		r.full = map[string]fullMark{}
	}
	r.full[n.ID] = f
}

// fullMark is an entry of groupRanker.full: the dimension the node ran
// out of, and the node's evalContext.planVersions when it did.
type fullMark struct {
	dim     string
	version int
}

// newMetric returns a placement's metric, started from the group's base.
// The base holds only NodesAvailable among the metric's maps, and nothing
// writes that map once the base is built (the other maps are made by the
// first inc of a placement, and stored metrics are never changed), so
// every placement of the evaluation shares it rather than copying it.
func (r *groupRanker) newMetric() *state.AllocMetric {
	m := new(state.AllocMetric)
	*m = r.base
	return m
}

// newOption returns an option for node n, reusing one of an earlier
// selectNode's.
func (r *groupRanker) newOption(n *state.Node, ask groupAsk) *option {
	if r.usedOptions < len(r.options) {
		o := r.options[r.usedOptions]
		*o = option{node: n, ask: ask, components: o.components[:0]}
		r.usedOptions++
		return o
	}
	o := &option{node: n, ask: ask, components: make([]scoreComponent, 0, 2)}
	r.options = append(r.options, o)
	r.usedOptions++
	return o
}

// nodeCursor is the eval's node order, shared by its groups, with the
// position the next walk starts from.
type nodeCursor struct {
	nodes  []*state.Node
	offset int
	// slots are the nodes' numbers among the eval's ready nodes
	// (evalContext.newCursor); nil when not known.
	slots []int32
}

// placeOptions tune one placement.
type placeOptions struct {
	// penaltyNodes are nodes the allocation being replaced failed on.
	penaltyNodes map[string]bool
}

// selectNode picks a node for one allocation of the group. It returns nil
// and a metric explaining why when no node is feasible and fits.
func (r *groupRanker) selectNode(opts placeOptions) (*option, *state.AllocMetric, error) {
	start := time.Now()
	r.usedOptions = 0
	m := r.newMetric()
	if err := r.checker.prepare(r.jobAllocs); err != nil {
		return nil, nil, err
	}
	if r.spread != nil {
		if err := r.spread.prepare(r.jobAllocs); err != nil {
			return nil, nil, err
		}
	}
	cur := r.nodes
	for seen := 0; seen < len(cur.nodes); {
		ranked, skipped := r.ranked[:0], r.skipped[:0]
		for ; seen < len(cur.nodes) && len(ranked) < r.limit; seen++ {
			at := cur.offset % len(cur.nodes)
			n, slot := cur.nodes[at], -1
			if cur.slots != nil {
				slot = int(cur.slots[at])
			}
			cur.offset++
			m.NodesEvaluated++
			if !r.checker.feasibleAt(n, slot, m) {
				continue
			}
			if f, ok := r.fullOf(n, slot); ok && f.version == r.ctx.planVersion(n.ID, slot) {
				exhausted(m, n, f.dim)
				continue
			}
			o, dim, err := r.rank(n, slot, opts)
			if err != nil {
				return nil, nil, err
			}
			if dim != "" {
				r.markFull(n, slot, dim)
				exhausted(m, n, dim)
				continue
			}
			if o.score < 0 && len(skipped) < maxSkip {
				skipped = append(skipped, o)
				continue
			}
			ranked = append(ranked, o)
		}
		for _, o := range skipped {
			if len(ranked) >= r.limit {
				break
			}
			ranked = append(ranked, o)
		}
		// Best first; ports are granted on the way down, and a node
		// whose ports are taken counts as exhausted. When none can
		// grant them, the walk goes on.
		r.ranked, r.skipped = ranked, skipped
		slices.SortStableFunc(ranked, func(a, b *option) int { return cmp.Compare(b.score, a.score) })
		for _, o := range ranked {
			ok, err := r.grant(o, m)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				recordScores(&r.scores, m, ranked)
				m.AllocationTime = time.Since(start)
				return o, m, nil
			}
		}
	}
	m.AllocationTime = time.Since(start)
	return nil, m, nil
}

// exhausted records that n had no room in dimension dim.
func exhausted(m *state.AllocMetric, n *state.Node, dim string) {
	m.NodesExhausted++
	if n.NodeClass != "" {
		inc(&m.ClassExhausted, n.NodeClass)
	}
	inc(&m.DimensionExhausted, dim)
}

// recordScores keeps the components of the best few options, ranked
// best first, in m.Scores, built with b.
func recordScores(b *state.ScoresBuilder, m *state.AllocMetric, ranked []*option) {
	top := ranked
	if len(top) > topScores {
		top = top[:topScores]
	}
	b.Grow(len(top) * 3)
	for _, o := range top {
		for _, c := range o.components {
			b.Add(o.node.ID, c.name, c.value)
		}
		b.Add(o.node.ID, scoreNormalized, o.score)
	}
	m.Scores = b.Scores()
}

// rank fits the group onto node n with the allocations proposed there and
// scores the result. It returns the exhausted dimension when the group
// does not fit. slot is n's number among the eval's ready nodes
// (evalContext.setNodes), or -1 when the caller does not know it.
func (r *groupRanker) rank(n *state.Node, slot int, opts placeOptions) (*option, string, error) {
	r.ctx.ranks++
	if r.key == "" {
		r.key = groupKey(r.job.Namespace, r.job.ID, r.tg.Name)
	}
	used, collisions, err := r.ctx.proposedUsage(n.ID, slot, r.job.Namespace, r.job.ID, r.key)
	if err != nil {
		return nil, "", err
	}
	ask := r.askOn(n)
	total := used
	total.CPU += ask.CPU
	total.MemoryMB += ask.MemoryMB
	total.DiskMB += ask.DiskMB
	capa := capacity(n)
	if dim := total.exceeds(capa); dim != "" {
		return nil, dim, nil
	}
	o := r.newOption(n, ask)
	fit := binPackScore(capa, total)
	if r.ctx.spreadOn(n) {
		fit = 1 - fit // the spread algorithm: emptier nodes score higher
	}
	o.components = append(o.components, scoreComponent{scoreBinPack, fit})
	if collisions > 0 {
		penalty := -float64(collisions) / float64(max(r.tg.Count, 1))
		o.components = append(o.components, scoreComponent{scoreJobAntiAffinity, max(penalty, -1)})
	}
	if opts.penaltyNodes[n.ID] {
		o.components = append(o.components, scoreComponent{scoreReschedule, -1})
	}
	if r.affinity != nil {
		o.components = append(o.components, scoreComponent{scoreAffinity, r.affinity.score(n)})
	}
	if r.spread != nil {
		o.components = append(o.components, scoreComponent{scoreSpread, r.spread.score(n)})
	}
	sum := 0.0
	for _, c := range o.components {
		sum += c.value
	}
	o.score = sum / float64(len(o.components))
	return o, "", nil
}

// askOn returns the group's request on node n.
func (r *groupRanker) askOn(n *state.Node) groupAsk {
	if r.ask != nil {
		return *r.ask
	}
	ask := askOf(r.tg, n)
	for _, t := range r.tg.Tasks {
		if t.Resources != nil && t.Resources.Cores > 0 {
			return ask
		}
	}
	r.ask = &ask
	return ask
}

// grant fills o.resources: each task's CPU and memory, the group's disk,
// and its networks with every port chosen. It reports false, recording
// the exhausted dimension in m, when the ports cannot be granted.
func (r *groupRanker) grant(o *option, m *state.AllocMetric) (bool, error) {
	// Only the chosen node needs the ports its allocations hold, and
	// only for a group that asks for some: kept per node by the eval
	// (proposedPorts), not listed anew for each placement.
	var taken portCounts
	if r.needsPorts() {
		var err error
		if taken, err = r.ctx.proposedPorts(o.node.ID); err != nil {
			return false, err
		}
	}
	res, dim := r.resourcesOn(o.node, nil, taken, o.ask)
	if dim != "" {
		exhausted(m, o.node, dim)
		return false, nil
	}
	o.resources = res
	return true, nil
}

// needsPorts reports whether the group or one of its tasks asks for a
// network (and so for host ports).
func (r *groupRanker) needsPorts() bool {
	if len(r.tg.Networks) > 0 {
		return true
	}
	for _, t := range r.tg.Tasks {
		if t.Resources != nil && len(t.Resources.Networks) > 0 {
			return true
		}
	}
	return false
}

// resourcesOn builds the grant on n, or names the exhausted dimension.
// The ports taken there are those of the allocations proposed and those
// counted in taken (either may be empty).
func (r *groupRanker) resourcesOn(n *state.Node, proposed []*state.Allocation, taken portCounts, ask groupAsk) (*state.AllocatedResources, string) {
	res := &state.AllocatedResources{
		Tasks:  make(map[string]*state.AllocatedTaskResources, len(r.tg.Tasks)),
		Shared: state.AllocatedSharedResources{DiskMB: ask.DiskMB},
	}
	var picker *portPicker
	if r.needsPorts() {
		reserved, err := r.ctx.reservedPorts(n)
		if err != nil {
			// A node with a malformed reserved-port list cannot be
			// checked for collisions, so nothing is placed there.
			r.ctx.logger.Warn("node has invalid reserved ports", "node", n.ID, "error", err)
			return nil, reasonBadNode
		}
		picker = newPortPicker(n, reserved, proposed, r.ctx.rng)
		picker.base = taken
		nets, dim := picker.assign(r.tg.Networks)
		if dim != "" {
			return nil, dim
		}
		res.Shared.Networks = nets
		res.Shared.Ports = flattenPorts(nets)
	}
	for _, t := range r.tg.Tasks {
		tu := ask.tasks[t.Name]
		tr := &state.AllocatedTaskResources{CPU: tu.CPU, MemoryMB: tu.MemoryMB}
		if t.Resources != nil && t.Resources.MemoryMaxMB > tu.MemoryMB && r.ctx.memoryOversubscriptionOn(n) {
			tr.MemoryMaxMB = t.Resources.MemoryMaxMB // sched_config.go; only MemoryMB is counted
		}
		if picker != nil && t.Resources != nil && len(t.Resources.Networks) > 0 {
			nets, dim := picker.assign(t.Resources.Networks)
			if dim != "" {
				return nil, dim
			}
			tr.Networks = nets
		}
		res.Tasks[t.Name] = tr
	}
	return res, ""
}
