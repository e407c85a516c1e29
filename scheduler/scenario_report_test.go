package scheduler_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// eval processes an eval of job= (trigger=, default job-register; node=
// for a node's eval) with the scheduler of the job's type, and prints
// each plan it submitted, the eval as closed, the evals it created and
// the job's latest deployment.
func (r *scenario) eval(a args) (string, error) {
	id := a.str("job", "")
	job := r.stored(id)
	if job == nil {
		return "", fmt.Errorf("no job %q", id)
	}
	existed := map[string]bool{}
	all, err := r.h.Store.AllocsByJob(nil, state.DefaultNamespace, id, true)
	if err != nil {
		return "", err
	}
	for _, x := range all {
		existed[x.ID] = true
	}
	e := r.h.NewEval(job, a.str("trigger", state.EvalTriggerJobRegister)).Copy()
	e.AnnotatePlan = true
	if name, ok := a.get("node"); ok {
		n := r.nodeByName(name)
		if n == nil {
			return "", fmt.Errorf("no node %q", name)
		}
		e.NodeID = n.ID
	}
	plans, created := len(r.h.Plans), len(r.h.CreatedEvals)
	if err := r.h.Process(BuiltinSchedulers[job.Type], e); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range r.h.Plans[plans:] {
		r.writePlan(&b, p, existed)
	}
	if len(r.h.Plans) == plans {
		b.WriteString("no plan\n")
	}
	for _, u := range slices.Backward(r.h.UpdatedEvals) {
		if u.ID == e.ID {
			writeEval(&b, u)
			break
		}
	}
	for _, c := range r.h.CreatedEvals[created:] {
		fmt.Fprintf(&b, "created %s %s", c.TriggeredBy, c.Status)
		if !c.WaitUntil.IsZero() {
			fmt.Fprintf(&b, " wait=%s", c.WaitUntil.Sub(r.h.Clock()))
		}
		b.WriteString("\n")
	}
	if d, _ := r.h.Store.LatestDeploymentByJob(nil, state.DefaultNamespace, id); d != nil {
		writeDeployment(&b, d)
	}
	return b.String(), nil
}

// writePlan prints a plan's annotations, then per node (by name) its
// placements (+, "from" the node of the allocation replaced), in-place
// updates (~), stops (-, "lost" when the node is gone) and evictions (!,
// with the victim's job).
func (r *scenario) writePlan(b *strings.Builder, p *Plan, existed map[string]bool) {
	b.WriteString("plan")
	if p.Annotations != nil {
		for _, g := range slices.Sorted(maps.Keys(p.Annotations.DesiredTGUpdates)) {
			fmt.Fprintf(b, " %s:%s", g, updates(p.Annotations.DesiredTGUpdates[g]))
		}
	}
	b.WriteString("\n")
	lines := map[string][]string{}
	for node, list := range p.NodeAllocation {
		for _, x := range sortedByName(list) {
			switch {
			case existed[x.ID]:
				lines[node] = append(lines[node], "~"+short(x))
			case x.PreviousAllocation != "":
				prev, _ := r.h.Store.AllocByID(nil, x.PreviousAllocation)
				from := "?"
				if prev != nil {
					from = r.nodeName(prev.NodeID)
				}
				lines[node] = append(lines[node], "+"+short(x)+"(from "+from+")")
			default:
				lines[node] = append(lines[node], "+"+short(x))
			}
		}
	}
	for node, list := range p.NodeUpdate {
		for _, x := range sortedByName(list) {
			s := "-" + short(x)
			if x.ClientStatus == state.AllocClientStatusLost {
				s += "(lost)"
			}
			lines[node] = append(lines[node], s)
		}
	}
	for node, list := range p.NodePreemptions {
		// An eviction names its job: it is another job's allocation.
		for _, x := range sortedByName(list) {
			lines[node] = append(lines[node], "!"+x.Name)
		}
	}
	byName := map[string]string{}
	for node := range lines {
		byName[r.nodeName(node)] = node
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		fmt.Fprintf(b, "  %s: %s\n", name, strings.Join(lines[byName[name]], " "))
	}
}

// updates prints the non-zero counts of an annotation.
func updates(u *state.DesiredUpdates) string {
	var s string
	for _, f := range []struct {
		name string
		n    uint64
	}{
		{"place", u.Place}, {"canary", u.Canary}, {"inplace", u.InPlaceUpdate},
		{"destructive", u.DestructiveUpdate}, {"migrate", u.Migrate}, {"stop", u.Stop},
		{"ignore", u.Ignore}, {"preempt", u.Preemptions},
	} {
		if f.n != 0 {
			s += fmt.Sprintf(" %s=%d", f.name, f.n)
		}
	}
	if s == "" {
		return " nothing"
	}
	return s
}

// writeEval prints the eval's status, whether it left a blocked eval,
// and per group what could not be placed and why.
func writeEval(b *strings.Builder, e *state.Evaluation) {
	fmt.Fprintf(b, "eval %s", e.Status)
	if e.BlockedEval != "" {
		b.WriteString(" blocked")
	}
	for _, g := range slices.Sorted(maps.Keys(e.FailedTGAllocs)) {
		m := e.FailedTGAllocs[g]
		fmt.Fprintf(b, " failed %s: exhausted=%d", g, m.NodesExhausted)
		for _, dim := range slices.Sorted(maps.Keys(m.DimensionExhausted)) {
			fmt.Fprintf(b, " %s=%d", dim, m.DimensionExhausted[dim])
		}
	}
	for _, g := range slices.Sorted(maps.Keys(e.QueuedAllocations)) {
		if n := e.QueuedAllocations[g]; n != 0 {
			fmt.Fprintf(b, " queued %s=%d", g, n)
		}
	}
	b.WriteString("\n")
}

// writeDeployment prints a deployment and its groups' progress.
func writeDeployment(b *strings.Builder, d *state.Deployment) {
	fmt.Fprintf(b, "deployment v%d %s", d.JobVersion, d.Status)
	if d.StatusDescription != "" {
		fmt.Fprintf(b, " %q", d.StatusDescription)
	}
	for _, g := range slices.Sorted(maps.Keys(d.TaskGroups)) {
		s := d.TaskGroups[g]
		fmt.Fprintf(b, " %s: desired=%d placed=%d healthy=%d", g, s.DesiredTotal, s.PlacedAllocs, s.HealthyAllocs)
		if s.UnhealthyAllocs != 0 {
			fmt.Fprintf(b, " unhealthy=%d", s.UnhealthyAllocs)
		}
		if s.DesiredCanaries != 0 {
			fmt.Fprintf(b, " canaries=%d/%d", len(s.PlacedCanaries), s.DesiredCanaries)
		}
		if s.Promoted {
			b.WriteString(" promoted")
		}
	}
	b.WriteString("\n")
}

// allocs prints job='s live allocations (all: every one) by name: node,
// job version, desired and client status, health, the allocation it
// replaced (from=) or whether it was replaced, and for a stopped one why;
// with by=, only how many live ones run per datacenter or node class.
func (r *scenario) allocs(a args) (string, error) {
	id := a.str("job", "")
	list, err := r.h.Store.AllocsByJob(nil, state.DefaultNamespace, id, true)
	if err != nil {
		return "", err
	}
	slices.SortStableFunc(list, func(x, y *state.Allocation) int {
		if c := strings.Compare(x.Name, y.Name); c != 0 {
			return c
		}
		if c := int(x.CreateIndex) - int(y.CreateIndex); c != 0 {
			return c
		}
		return strings.Compare(r.nodeName(x.NodeID), r.nodeName(y.NodeID))
	})
	if by, ok := a.get("by"); ok {
		return r.allocsBy(list, by)
	}
	var b strings.Builder
	for _, x := range list {
		if x.Terminal() && !a.flag("all") {
			continue
		}
		fmt.Fprintf(&b, "%s %s v%d %s/%s", short(x), r.nodeName(x.NodeID), x.Job.Version, x.DesiredStatus, x.ClientStatus)
		if ds := x.DeploymentStatus; ds != nil {
			if ds.Healthy != nil {
				b.WriteString(map[bool]string{true: " healthy", false: " unhealthy"}[*ds.Healthy])
			}
			if ds.Canary {
				b.WriteString(" canary")
			}
		}
		if x.PreviousAllocation != "" {
			if prev, _ := r.h.Store.AllocByID(nil, x.PreviousAllocation); prev != nil {
				fmt.Fprintf(&b, " from=%s@%s", short(prev), r.nodeName(prev.NodeID))
			}
		}
		if x.NextAllocation != "" {
			b.WriteString(" replaced")
		}
		if t := x.DesiredTransition.NoShutdownDelay; t != nil && *t {
			b.WriteString(" no-shutdown-delay")
		}
		if x.DesiredStatus != state.AllocDesiredStatusRun && x.DesiredDescription != "" {
			fmt.Fprintf(&b, " %q", x.DesiredDescription)
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

// allocsBy counts the live allocations of list per datacenter (by=dc)
// or node class (by=class) of their nodes.
func (r *scenario) allocsBy(list []*state.Allocation, by string) (string, error) {
	counts := map[string]int{}
	for _, x := range list {
		if x.Terminal() {
			continue
		}
		n, err := r.h.Store.NodeByID(nil, x.NodeID)
		if err != nil || n == nil {
			return "", fmt.Errorf("node of %s: %v", x.Name, err)
		}
		switch by {
		case "dc":
			counts[n.Datacenter]++
		case "class":
			counts[n.NodeClass]++
		default:
			return "", fmt.Errorf("by=%s: want dc or class", by)
		}
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&b, "%s: %d\n", k, counts[k])
	}
	return b.String(), nil
}

// client reports status= for job='s live allocations: all of them, or
// those named in alloc= (comma-separated), on node=, or of the latest
// deployment (deployment).
func (r *scenario) client(a args) error {
	id := a.str("job", "")
	var d *state.Deployment
	if a.flag("deployment") {
		d = r.latestDeployment(id)
	}
	names, only := a.get("alloc")
	var ups []*state.Allocation
	for _, x := range r.liveAllocs(id) {
		if only && !slices.Contains(strings.Split(names, ","), short(x)) {
			continue
		}
		if node, ok := a.get("node"); ok && r.nodeName(x.NodeID) != node {
			continue
		}
		if d != nil && x.DeploymentID != d.ID {
			continue
		}
		c := x.CopySkipJob()
		c.ClientStatus = a.str("status", state.AllocClientStatusRunning)
		ups = append(ups, c)
	}
	if len(ups) == 0 {
		return fmt.Errorf("no allocation to update")
	}
	r.h.ClientUpdate(ups...)
	return nil
}

// health reports n= allocations of job='s latest deployment whose health
// is not known yet (in name order) running and healthy, or unhealthy
// (unhealthy), or failed and unhealthy (failed).
func (r *scenario) health(a args) error {
	id := a.str("job", "")
	d := r.latestDeployment(id)
	if d == nil {
		return fmt.Errorf("no deployment")
	}
	n := a.int("n", 1)
	healthy := !a.flag("unhealthy") && !a.flag("failed")
	var ups []*state.Allocation
	for _, x := range r.liveAllocs(id) {
		if len(ups) == n {
			break
		}
		if x.DeploymentID != d.ID || (x.DeploymentStatus != nil && x.DeploymentStatus.Healthy != nil) {
			continue
		}
		c := x.CopySkipJob()
		c.ClientStatus = state.AllocClientStatusRunning
		if a.flag("failed") {
			c.ClientStatus = state.AllocClientStatusFailed
		}
		c.DeploymentStatus = &state.AllocDeploymentStatus{Healthy: &healthy, Timestamp: r.h.Clock()}
		ups = append(ups, c)
	}
	if len(ups) != n {
		return fmt.Errorf("only %d allocations await health, want %d", len(ups), n)
	}
	r.h.ClientUpdate(ups...)
	return nil
}

// settle reports every live allocation of job= running, those of the
// latest deployment healthy, and marks that deployment successful: a
// rollout a scenario is not about.
func (r *scenario) settle(a args) error {
	id := a.str("job", "")
	d := r.latestDeployment(id)
	var ups []*state.Allocation
	for _, x := range r.liveAllocs(id) {
		c := x.CopySkipJob()
		c.ClientStatus = state.AllocClientStatusRunning
		if d != nil && x.DeploymentID == d.ID && (x.DeploymentStatus == nil || x.DeploymentStatus.Healthy == nil) {
			yes := true
			c.DeploymentStatus = &state.AllocDeploymentStatus{Healthy: &yes, Timestamp: r.h.Clock()}
		}
		ups = append(ups, c)
	}
	r.h.ClientUpdate(ups...)
	if d != nil && d.Active() {
		r.setDeploymentStatus(d.ID, state.DeploymentStatusSuccessful)
	}
	return nil
}

// move puts every live allocation of job= on node=, marked to migrate
// (migrate): the allocations a drain of that node moves.
func (r *scenario) move(a args) error {
	id := a.str("job", "")
	n := r.nodeByName(a.str("node", ""))
	if n == nil {
		return fmt.Errorf("no node %q", a.str("node", ""))
	}
	var moved []*state.Allocation
	for _, x := range r.liveAllocs(id) {
		c := x.CopySkipJob()
		c.NodeID = n.ID
		if a.flag("migrate") {
			yes := true
			c.DesiredTransition.Migrate = &yes
		}
		moved = append(moved, c)
	}
	r.h.UpsertAllocs(moved...)
	return nil
}

// deployment changes job='s latest deployment (status=, promote), then
// prints each of the job's deployments, oldest first (none when it has
// none).
func (r *scenario) deployment(a args) (string, error) {
	id := a.str("job", "")
	d := r.latestDeployment(id)
	if d == nil {
		if len(a) > 1 {
			return "", fmt.Errorf("no deployment")
		}
		return "none", nil
	}
	if status, ok := a.get("status"); ok {
		r.setDeploymentStatus(d.ID, status)
	}
	if a.flag("promote") {
		r.h.Apply(store.DeploymentPromoteRequestType, &store.DeploymentPromoteRequest{DeploymentID: d.ID, All: true})
	}
	list, err := r.h.Store.DeploymentsByJob(nil, state.DefaultNamespace, id, true)
	if err != nil {
		return "", err
	}
	slices.SortFunc(list, func(x, y *state.Deployment) int { return int(x.CreateIndex) - int(y.CreateIndex) })
	var b strings.Builder
	for _, x := range list {
		writeDeployment(&b, x)
	}
	return b.String(), nil
}

func (r *scenario) latestDeployment(job string) *state.Deployment {
	d, err := r.h.Store.LatestDeploymentByJob(nil, state.DefaultNamespace, job)
	if err != nil {
		r.t.Fatal(err)
	}
	return d
}

func (r *scenario) setDeploymentStatus(id, status string) {
	r.h.Apply(store.DeploymentStatusUpdateRequestType, &store.DeploymentStatusUpdateRequest{
		Updates: []*store.DeploymentStatusUpdate{{DeploymentID: id, Status: status}},
	})
}

// short is an allocation's name without its job: web[0].
func short(a *state.Allocation) string {
	_, rest, ok := strings.Cut(a.Name, ".")
	if !ok {
		return a.Name
	}
	return rest
}

func sortedByName(list []*state.Allocation) []*state.Allocation {
	out := slices.Clone(list)
	slices.SortStableFunc(out, func(x, y *state.Allocation) int { return strings.Compare(x.Name, y.Name) })
	return out
}
