package scheduler

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/schedhq/sched/state"
)

// Filter reasons counted in AllocMetric.ConstraintFiltered besides the
// string form of a failed constraint.
const (
	reasonMissingDrivers = "missing drivers"
	reasonDistinctHosts  = state.ConstraintDistinctHosts
	reasonBadNode        = "node resources invalid"
)

// readyNodes lists the nodes that may receive the job's allocations: ready
// (status ready, eligible, not draining), in the job's node pool (any pool
// for "all") and in one of its datacenters ("*" globs allowed). It also
// returns the metrics every placement of the eval starts from:
// NodesAvailable (ready nodes per datacenter) and NodesInPool (nodes of the
// pool, whatever their status), and how many nodes the state holds.
func readyNodes(st State, job *state.Job) ([]*state.Node, map[string]int, int, int, error) {
	all, err := st.Nodes(nil, "")
	if err != nil {
		return nil, nil, 0, 0, err
	}
	out := make([]*state.Node, 0, len(all))
	byDC := map[string]int{}
	inPool := 0
	for _, n := range all {
		if !poolMatches(job.NodePool, n) {
			continue
		}
		inPool++
		if !n.Ready() || !datacenterMatches(job.Datacenters, n.Datacenter) {
			continue
		}
		out = append(out, n)
		byDC[n.Datacenter]++
	}
	return out, byDC, inPool, len(all), nil
}

// poolMatches reports whether a node is in the job's pool; the pool "all"
// holds every node and an empty pool means "default".
func poolMatches(pool string, n *state.Node) bool {
	switch pool {
	case state.NodePoolAll:
		return true
	case "":
		pool = state.NodePoolDefault
	}
	np := n.NodePool
	if np == "" {
		np = state.NodePoolDefault
	}
	return np == pool
}

// datacenterMatches reports whether dc matches one of the job's
// datacenter patterns, where "*" matches any run of characters. No
// patterns means any datacenter.
func datacenterMatches(patterns []string, dc string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if globMatch(p, dc) {
			return true
		}
	}
	return false
}

// globMatch matches s against a pattern in which "*" stands for any run
// of characters (possibly empty) and every other character for itself.
// It allocates nothing: readyNodes matches every node of the cluster
// against the job's datacenters once per evaluation.
func globMatch(pattern, s string) bool {
	first, rest, found := strings.Cut(pattern, "*")
	if !found {
		return pattern == s
	}
	if !strings.HasPrefix(s, first) {
		return false
	}
	s = s[len(first):]
	for {
		mid, after, more := strings.Cut(rest, "*")
		if !more {
			return strings.HasSuffix(s, mid) // the last part
		}
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
		rest = after
	}
}

// resolveTarget returns the value a constraint target names on a node:
// ${attr.<key>} (Node.Attributes), ${meta.<key>} (Node.Meta),
// ${node.unique.id}, ${node.unique.name}, ${node.datacenter},
// ${node.class} and ${node.pool}; any other text is a literal. ok is false
// when the node does not have the value (or the ${...} is unknown).
func resolveTarget(target string, n *state.Node) (string, bool) {
	if !strings.HasPrefix(target, "${") || !strings.HasSuffix(target, "}") {
		return target, true
	}
	name := target[2 : len(target)-1]
	switch name {
	case "node.unique.id":
		return n.ID, true
	case "node.unique.name":
		return n.Name, true
	case "node.datacenter":
		return n.Datacenter, true
	case "node.class":
		return n.NodeClass, true
	case "node.pool":
		return n.NodePool, true
	}
	if key, ok := strings.CutPrefix(name, "attr."); ok {
		v, ok := n.Attributes[key]
		return v, ok
	}
	if key, ok := strings.CutPrefix(name, "meta."); ok {
		v, ok := n.Meta[key]
		return v, ok
	}
	return "", false
}

// constraintString is the form of a constraint in ConstraintFiltered and
// logs, e.g. "${attr.kernel.name} = linux".
func constraintString(c *state.Constraint) string {
	return strings.TrimSpace(strings.Join(slices.DeleteFunc([]string{c.LTarget, c.Operand, c.RTarget},
		func(s string) bool { return s == "" }), " "))
}

// meets reports whether a node satisfies "l op r" for the operands that
// compare values; distinct_hosts and distinct_property are checked against
// placements elsewhere, and an unknown operand never holds.
func (c *evalContext) meets(op, l, r string, n *state.Node) bool {
	lv, lok := resolveTarget(l, n)
	rv, rok := resolveTarget(r, n)
	switch op {
	case "=", "==", "is":
		return lok && rok && lv == rv
	case "!=", "not":
		return lok != rok || lv != rv
	case "<", "<=", ">", ">=":
		return lok && rok && compareOrdered(op, lv, rv)
	case state.ConstraintRegex:
		if !lok || !rok {
			return false
		}
		re, err := c.regexp(rv)
		return err == nil && re.MatchString(lv)
	case state.ConstraintSetContains, state.ConstraintSetContainsAll:
		return lok && rok && setContains(lv, rv, true)
	case state.ConstraintSetContainsAny:
		return lok && rok && setContains(lv, rv, false)
	case state.ConstraintVersion:
		return lok && rok && c.versionMatches(lv, rv)
	case state.ConstraintSemver:
		return lok && rok && c.semverMatches(lv, rv)
	case state.ConstraintAttributeIsSet:
		return lok
	case state.ConstraintAttributeNotSet:
		return !lok
	}
	return false
}

// compareOrdered compares two values numerically when both are numbers,
// else lexically.
func compareOrdered(op, l, r string) bool {
	var c int
	lf, lerr := strconv.ParseFloat(l, 64)
	rf, rerr := strconv.ParseFloat(r, 64)
	if lerr == nil && rerr == nil {
		c = cmp.Compare(lf, rf)
	} else {
		c = strings.Compare(l, r)
	}
	switch op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	}
	return c >= 0
}

// setContains reports whether the comma-separated set have contains all
// (or, with all false, any) of the comma-separated set want.
func setContains(have, want string, all bool) bool {
	set := map[string]bool{}
	for _, v := range strings.Split(have, ",") {
		set[strings.TrimSpace(v)] = true
	}
	for _, v := range strings.Split(want, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if set[v] != all {
			return !all
		}
	}
	return all
}

// groupChecker decides whether a node may run an allocation of one task
// group of a job. Checks that depend only on a node's computed class
// (constraints, drivers) are remembered per class for the eval; checks on
// unique properties run per node; distinct_hosts and distinct_property
// look at the allocations proposed so far.
type groupChecker struct {
	ctx *evalContext
	job *state.Job
	tg  *state.TaskGroup

	jobCons, jobEscaped []*state.Constraint
	cons, escaped       []*state.Constraint
	drivers             []string

	distinctHostsJob, distinctHostsGroup bool
	props                                []*distinctProperty

	// okSlots marks, by their number among the eval's ready nodes, the
	// nodes found feasible (feasibleAt).
	okSlots []bool
}

// distinctProperty is a distinct_property constraint with its running
// count of allocations per property value.
type distinctProperty struct {
	c        *state.Constraint
	jobLevel bool
	limit    int
	counts   map[string]int
}

func newGroupChecker(ctx *evalContext, job *state.Job, tg *state.TaskGroup) *groupChecker {
	g := &groupChecker{ctx: ctx, job: job, tg: tg}
	split := func(cs []*state.Constraint, jobLevel bool, memo, escaped *[]*state.Constraint) {
		for _, c := range cs {
			switch {
			case c == nil:
			case c.Operand == state.ConstraintDistinctHosts:
				if jobLevel {
					g.distinctHostsJob = true
				} else {
					g.distinctHostsGroup = true
				}
			case c.Operand == state.ConstraintDistinctProperty:
				limit := 1
				if n, err := strconv.Atoi(c.RTarget); err == nil && n > 0 {
					limit = n
				}
				g.props = append(g.props, &distinctProperty{c: c, jobLevel: jobLevel, limit: limit})
			case escapes(c.LTarget, c.RTarget):
				*escaped = append(*escaped, c)
			default:
				*memo = append(*memo, c)
			}
		}
	}
	split(job.Constraints, true, &g.jobCons, &g.jobEscaped)
	split(tg.Constraints, false, &g.cons, &g.escaped)
	seen := map[string]bool{}
	for _, t := range tg.Tasks {
		split(t.Constraints, false, &g.cons, &g.escaped)
		if t.Driver != "" && !seen[t.Driver] {
			seen[t.Driver] = true
			g.drivers = append(g.drivers, t.Driver)
		}
	}
	slices.Sort(g.drivers)
	if len(g.jobEscaped)+len(g.escaped) > 0 || requestsHostVolumes(tg) {
		ctx.elig.escaped = true
	}
	return g
}

// prepare recounts the distinct_property values over the allocations
// proposed so far; it runs before each placement of the group.
func (g *groupChecker) prepare(jobAllocs []*state.Allocation) error {
	if len(g.props) == 0 {
		return nil
	}
	live, err := g.ctx.liveJobAllocs(jobAllocs)
	if err != nil {
		return err
	}
	for _, p := range g.props {
		p.counts = map[string]int{}
		for _, a := range live {
			if !p.jobLevel && a.TaskGroup != g.tg.Name {
				continue
			}
			n, err := g.ctx.node(a.NodeID)
			if err != nil {
				return err
			}
			if n == nil {
				continue
			}
			if v, ok := resolveTarget(p.c.LTarget, n); ok {
				p.counts[v]++
			}
		}
	}
	return nil
}

// feasible reports whether node may run an allocation of the group,
// recording why not in m.
func (g *groupChecker) feasible(n *state.Node, m *state.AllocMetric) bool {
	ctx := g.ctx
	class := ctx.classOf(n)
	r, ok := ctx.elig.job[class]
	if !ok {
		ctx.checks++
		r = g.checkAll(n, g.jobCons, nil)
		ctx.elig.job[class] = r
	}
	if !r.ok {
		return filtered(m, n, r.reason)
	}
	if r := g.checkAll(n, g.jobEscaped, nil); !r.ok {
		return filtered(m, n, r.reason)
	}
	memo := ctx.elig.group(g.tg.Name)
	r, ok = memo[class]
	if !ok {
		ctx.checks++
		r = g.checkAll(n, g.cons, g.drivers)
		memo[class] = r
	}
	if !r.ok {
		return filtered(m, n, r.reason)
	}
	if r := g.checkAll(n, g.escaped, nil); !r.ok {
		return filtered(m, n, r.reason)
	}
	if !hostVolumesFit(n, g.tg) {
		return filtered(m, n, reasonHostVolumes)
	}
	if g.distinctHostsJob || g.distinctHostsGroup {
		proposed, err := ctx.proposedAllocs(n.ID)
		if err != nil {
			return filtered(m, n, err.Error())
		}
		for _, a := range proposed {
			if a.Namespace == g.job.Namespace && a.JobID == g.job.ID &&
				(g.distinctHostsJob || a.TaskGroup == g.tg.Name) {
				return filtered(m, n, reasonDistinctHosts)
			}
		}
	}
	for _, p := range g.props {
		v, ok := resolveTarget(p.c.LTarget, n)
		if !ok || p.counts[v] >= p.limit {
			return filtered(m, n, constraintString(p.c))
		}
	}
	return true
}

// feasibleAt is feasible for node n numbered slot among the eval's ready
// nodes (or -1), answered without a look at the node once it was found
// feasible, when the answer cannot change during the evaluation: no
// distinct_hosts or distinct_property constraint, whose answer depends on
// the plan; every other check reads only the node. A placement's walk
// visits some fifteen nodes, more once nodes fill, and each visit read
// the node's class and looked its memo up by the class's string twice.
func (g *groupChecker) feasibleAt(n *state.Node, slot int, m *state.AllocMetric) bool {
	if slot < 0 || slot >= len(g.ctx.ready) || g.distinctHostsJob || g.distinctHostsGroup || len(g.props) > 0 {
		return g.feasible(n, m)
	}
	if g.okSlots != nil && g.okSlots[slot] {
		return true
	}
	if !g.feasible(n, m) {
		return false
	}
	if g.okSlots == nil {
		g.okSlots = make([]bool, len(g.ctx.ready))
	}
	g.okSlots[slot] = true
	return true
}

// checkAll checks drivers, then constraints, returning the first failure.
func (g *groupChecker) checkAll(n *state.Node, cons []*state.Constraint, drivers []string) classResult {
	for _, d := range drivers {
		info := n.Drivers[d]
		if info == nil || !info.Detected || !info.Healthy {
			return classResult{reason: reasonMissingDrivers}
		}
	}
	for _, c := range cons {
		if !g.ctx.meets(c.Operand, c.LTarget, c.RTarget, n) {
			return classResult{reason: constraintString(c)}
		}
	}
	return classResult{ok: true}
}

// filtered records that n was filtered out for reason and returns false.
func filtered(m *state.AllocMetric, n *state.Node, reason string) bool {
	m.NodesFiltered++
	if n.NodeClass != "" {
		inc(&m.ClassFiltered, n.NodeClass)
	}
	inc(&m.ConstraintFiltered, reason)
	return false
}

// inc adds one to a metric map, making it when nil.
func inc(m *map[string]int, key string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[key]++
}

// liveJobAllocs returns the job's allocations that will be live once the
// plan so far commits: the state's non-terminal ones the plan does not
// stop or update, and the plan's non-terminal ones.
func (c *evalContext) liveJobAllocs(jobAllocs []*state.Allocation) ([]*state.Allocation, error) {
	replaced := map[string]bool{}
	var out []*state.Allocation
	for _, list := range c.plan.NodeUpdate {
		for _, a := range list {
			replaced[a.ID] = true
		}
	}
	for _, list := range c.plan.NodeAllocation {
		for _, a := range list {
			replaced[a.ID] = true
			if !a.Terminal() {
				out = append(out, a)
			}
		}
	}
	for _, a := range jobAllocs {
		if !a.Terminal() && !replaced[a.ID] {
			out = append(out, a)
		}
	}
	return out, nil
}
