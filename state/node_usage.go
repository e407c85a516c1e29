package state

// NodeUsage is the sum of what the live (non-terminal) allocations on one
// node were granted. The store keeps it up to date as allocations are
// written, so the scheduler and the plan applier read a node's load in
// constant time instead of adding up every allocation on it.
type NodeUsage struct {
	NodeID   string
	CPU      int
	MemoryMB int
	DiskMB   int
	// Allocs counts the live allocations.
	Allocs int
}

// Totals is what r grants in all: its tasks' CPU and memory and the
// group's shared disk.
func (r *AllocatedResources) Totals() (cpu, memoryMB, diskMB int) {
	if r == nil {
		return 0, 0, 0
	}
	for _, t := range r.Tasks {
		if t != nil {
			cpu += t.CPU
			memoryMB += t.MemoryMB
		}
	}
	return cpu, memoryMB, r.Shared.DiskMB
}

// AddAlloc adds a live allocation's grant to u (sign +1) or removes it
// (sign -1). Terminal allocations hold nothing and change nothing.
func (u *NodeUsage) AddAlloc(a *Allocation, sign int) {
	if a == nil || a.Terminal() {
		return
	}
	cpu, mem, disk := a.AllocatedResources.Totals()
	u.CPU += sign * cpu
	u.MemoryMB += sign * mem
	u.DiskMB += sign * disk
	u.Allocs += sign
}
