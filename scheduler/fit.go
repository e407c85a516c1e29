package scheduler

import (
	"github.com/schedhq/sched/state"
)

// Exhaustion dimensions: what AllocsFit and the ranker name when a node
// has no room, reported in AllocMetric.DimensionExhausted.
const (
	DimensionCPU              = "cpu"
	DimensionMemory           = "memory"
	DimensionDisk             = "disk"
	DimensionPortCollision    = "network: port collision"
	DimensionReservedPort     = "network: reserved port collision"
	DimensionDynamicPortsFull = "network: dynamic port selection failed"
)

// usage is the sum of what allocations take on a node.
type usage struct {
	CPU      int
	MemoryMB int
	DiskMB   int
}

// add adds an allocation's grant to u.
func (u *usage) add(r *state.AllocatedResources) {
	cpu, mem, disk := r.Totals()
	u.CPU += cpu
	u.MemoryMB += mem
	u.DiskMB += disk
}

// sub removes an allocation's grant from u.
func (u *usage) sub(r *state.AllocatedResources) {
	var g usage
	g.add(r)
	u.CPU -= g.CPU
	u.MemoryMB -= g.MemoryMB
	u.DiskMB -= g.DiskMB
}

// capacity is what a node offers to allocations: its resources minus what
// it reserves for itself. A node that reports no resources offers nothing.
func capacity(n *state.Node) usage {
	var c usage
	if r := n.NodeResources; r != nil {
		c = usage{CPU: r.CPU, MemoryMB: r.MemoryMB, DiskMB: r.DiskMB}
	}
	if r := n.ReservedResources; r != nil {
		c.CPU -= r.CPU
		c.MemoryMB -= r.MemoryMB
		c.DiskMB -= r.DiskMB
	}
	return c
}

// exceeds returns the first dimension, in the order cpu, memory, disk, in
// which u is over c, or "" when it fits.
func (u usage) exceeds(c usage) string {
	switch {
	case u.CPU > c.CPU:
		return DimensionCPU
	case u.MemoryMB > c.MemoryMB:
		return DimensionMemory
	case u.DiskMB > c.DiskMB:
		return DimensionDisk
	}
	return ""
}

// AllocsFit reports whether allocs fit on node together: the summed
// AllocatedResources of the allocations that are not terminal must not
// exceed the node's resources minus its reserved resources in CPU, memory
// or disk, and no port may be granted twice, nor collide with the node's
// reserved ports. When they do not fit, dimension names the first
// exhausted one ("cpu", "memory", "disk" or "network: port collision").
//
// It is pure, and it is the one check both the scheduler (while ranking)
// and the plan applier (before committing) use, so the two never disagree
// about what fits. The caller passes every allocation that will be on the
// node: those already there that the plan does not stop, and the plan's.
// An error means the node's reserved port specification is malformed.
//
// Ports are one namespace per node: host networks and addresses are not
// told apart, so two allocations never share a port number on a node.
// Network bandwidth (MBits) is not a scheduling dimension.
func AllocsFit(node *state.Node, allocs []*state.Allocation) (fit bool, dimension string, err error) {
	var used usage
	for _, a := range allocs {
		if a != nil && !a.Terminal() {
			used.add(a.AllocatedResources)
		}
	}
	if dim := used.exceeds(capacity(node)); dim != "" {
		return false, dim, nil
	}
	ports, err := nodeReservedPorts(node)
	if err != nil {
		return false, "", err
	}
	for _, a := range allocs {
		if a == nil || a.Terminal() {
			continue
		}
		for _, p := range allocPorts(a.AllocatedResources) {
			if ports.has(p) {
				return false, DimensionPortCollision, nil
			}
			ports.add(p)
		}
	}
	return true, "", nil
}

// allocPorts lists the distinct host ports an allocation was granted: its
// group ports and networks and its tasks' networks.
func allocPorts(r *state.AllocatedResources) []int {
	if r == nil {
		return nil
	}
	var out []int
	seen := map[int]bool{}
	addPort := func(v int) {
		if v > 0 && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	addNets := func(nets []*state.NetworkResource) {
		for _, n := range nets {
			if n == nil {
				continue
			}
			for _, p := range n.ReservedPorts {
				addPort(p.Value)
			}
			for _, p := range n.DynamicPorts {
				addPort(p.Value)
			}
		}
	}
	for _, p := range r.Shared.Ports {
		addPort(p.Value)
	}
	addNets(r.Shared.Networks)
	for _, t := range r.Tasks {
		if t != nil {
			addNets(t.Networks)
		}
	}
	return out
}

// groupAsk is what one allocation of a task group asks of a node, before
// ports are chosen.
type groupAsk struct {
	usage
	// tasks holds each task's CPU and memory.
	tasks map[string]usage
}

// askOf sums a group's request. Whole cores (Resources.Cores) are counted
// as that share of the node's CPU, so they use the same dimension as MHz;
// sched does not pin cores.
func askOf(tg *state.TaskGroup, node *state.Node) groupAsk {
	ask := groupAsk{tasks: make(map[string]usage, len(tg.Tasks))}
	if tg.EphemeralDisk != nil {
		ask.DiskMB = tg.EphemeralDisk.SizeMB
	}
	for _, t := range tg.Tasks {
		var tu usage
		if r := t.Resources; r != nil {
			tu.CPU = r.CPU
			if r.Cores > 0 {
				tu.CPU += r.Cores * mhzPerCore(node)
			}
			tu.MemoryMB = r.MemoryMB
		}
		ask.tasks[t.Name] = tu
		ask.CPU += tu.CPU
		ask.MemoryMB += tu.MemoryMB
	}
	return ask
}

// mhzPerCore is a node's CPU share per core; a node that does not report
// its cores counts as one core.
func mhzPerCore(n *state.Node) int {
	if n.NodeResources == nil {
		return 0
	}
	cores := max(n.NodeResources.Cores, 1)
	return n.NodeResources.CPU / cores
}

// binPackScore scores how well a node is used once the candidate is on it,
// from 0 (the node stays empty) to 1 (CPU and memory are full): fuller
// nodes score higher, so placements pack onto fewer nodes and keep whole
// nodes free for large allocations.
//
// The score is 1 - (freeCPU² + freeMem²)/2, with free* the fraction of
// the dimension still free. Squaring the free fractions makes a node that
// is lopsided (full in one dimension, empty in the other) score below one
// that is evenly half full, so the leftover capacity stays usable.
func binPackScore(capa, used usage) float64 {
	free := func(u, c int) float64 {
		if c <= 0 {
			return 0
		}
		f := 1 - float64(u)/float64(c)
		return min(max(f, 0), 1)
	}
	fc, fm := free(used.CPU, capa.CPU), free(used.MemoryMB, capa.MemoryMB)
	return 1 - (fc*fc+fm*fm)/2
}
