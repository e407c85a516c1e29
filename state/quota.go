package state

import (
	"fmt"
	"unicode/utf8"
)

// Bounds of a quota specification.
const (
	// MaxQuotaLimits bounds the limits (regions) of one quota.
	MaxQuotaLimits = 16
	// MaxQuotaDescription bounds a quota's description, in bytes.
	MaxQuotaDescription = 1024
)

// QuotaSpec limits what the live allocations of the namespaces that name
// it (Namespace.Quota) may hold together, as Nomad Enterprise's /v1/quota
// API names it. A namespace names at most one quota; a quota may be
// shared by several namespaces, whose allocations then count together.
type QuotaSpec struct {
	Name        string
	Description string
	// Limits holds one limit per region; the limit of a job's region
	// applies to its placements, and a region without one is unlimited.
	Limits      []*QuotaLimit
	CreateIndex uint64
	ModifyIndex uint64
}

// QuotaLimit is a quota's limit in one region.
type QuotaLimit struct {
	Region string
	// RegionLimit is the limit; nil limits nothing.
	RegionLimit *QuotaResources
}

// QuotaResources is an amount of what a quota limits. In a limit, 0 means
// no limit on that dimension and -1 means none of it may be used (as in
// Nomad); in a usage, the amounts in use.
type QuotaResources struct {
	CPU         int
	MemoryMB    int
	MemoryMaxMB int
	// Allocations counts live (non-terminal) allocations.
	Allocations int
}

// QuotaUsage is what the live allocations of a quota's namespaces hold.
// Used has one entry per region of the spec's limits, keyed by region,
// with the limit beside the amount used (a cluster is one region, so
// every entry holds the cluster's usage). The store keeps it as
// allocations are written.
type QuotaUsage struct {
	Name string
	Used map[string]*QuotaUsed
	// CreateIndex and ModifyIndex are the quota spec's; the usage's own
	// index is the X-Sched-Index of its read.
	CreateIndex uint64
	ModifyIndex uint64
}

// QuotaUsed is a quota's usage in one region, beside its limit there.
type QuotaUsed struct {
	Region      string
	RegionLimit *QuotaResources
	Used        QuotaResources
}

// Add adds (sign +1) or removes (-1) what a live allocation holds;
// terminal ones hold nothing.
func (r *QuotaResources) Add(a *Allocation, sign int) {
	if a == nil || a.Terminal() {
		return
	}
	d := QuotaOfAlloc(a)
	r.CPU += sign * d.CPU
	r.MemoryMB += sign * d.MemoryMB
	r.MemoryMaxMB += sign * d.MemoryMaxMB
	r.Allocations += sign * d.Allocations
}

// Plus returns r + o.
func (r QuotaResources) Plus(o QuotaResources) QuotaResources {
	return QuotaResources{CPU: r.CPU + o.CPU, MemoryMB: r.MemoryMB + o.MemoryMB,
		MemoryMaxMB: r.MemoryMaxMB + o.MemoryMaxMB, Allocations: r.Allocations + o.Allocations}
}

// Minus returns r - o.
func (r QuotaResources) Minus(o QuotaResources) QuotaResources {
	return r.Plus(QuotaResources{CPU: -o.CPU, MemoryMB: -o.MemoryMB, MemoryMaxMB: -o.MemoryMaxMB, Allocations: -o.Allocations})
}

// QuotaOfAlloc is what one live allocation counts against a quota: its
// tasks' CPU and memory, the memory they may burst to (a task's
// MemoryMaxMB in the allocation's job, else its memory), and one
// allocation. It reads nothing but the allocation, so the store's
// incremental usage and its recomputation agree.
func QuotaOfAlloc(a *Allocation) QuotaResources {
	out := QuotaResources{Allocations: 1}
	if a.AllocatedResources == nil {
		return out
	}
	var tg *TaskGroup
	if a.Job != nil {
		tg = a.Job.LookupTaskGroup(a.TaskGroup)
	}
	for name, t := range a.AllocatedResources.Tasks {
		if t == nil {
			continue
		}
		out.CPU += t.CPU
		out.MemoryMB += t.MemoryMB
		burst := t.MemoryMB
		if tg != nil {
			for _, task := range tg.Tasks {
				if task.Name == name && task.Resources != nil && task.Resources.MemoryMaxMB > burst {
					burst = task.Resources.MemoryMaxMB
				}
			}
		}
		out.MemoryMaxMB += burst
	}
	return out
}

// Exceeds names the first dimension in which used plus add goes over
// limit, showing what is used before add against the limit, as
// "memory 4096/4096 MB", or "" when it fits. A nil limit fits
// everything.
func (used QuotaResources) Exceeds(add QuotaResources, limit *QuotaResources) string {
	if limit == nil {
		return ""
	}
	next := used.Plus(add)
	over := func(u, l int) bool { return l < 0 && u > 0 || l > 0 && u > l }
	shown := func(l int) int { return max(l, 0) }
	switch {
	case over(next.CPU, limit.CPU):
		return fmt.Sprintf("cpu %d/%d MHz", used.CPU, shown(limit.CPU))
	case over(next.MemoryMB, limit.MemoryMB):
		return fmt.Sprintf("memory %d/%d MB", used.MemoryMB, shown(limit.MemoryMB))
	case over(next.MemoryMaxMB, limit.MemoryMaxMB):
		return fmt.Sprintf("memory_max %d/%d MB", used.MemoryMaxMB, shown(limit.MemoryMaxMB))
	case over(next.Allocations, limit.Allocations):
		return fmt.Sprintf("allocations %d/%d", used.Allocations, shown(limit.Allocations))
	}
	return ""
}

// LimitFor returns the quota's limit in region, or nil (unlimited).
func (q *QuotaSpec) LimitFor(region string) *QuotaResources {
	if q == nil {
		return nil
	}
	for _, l := range q.Limits {
		if l != nil && l.Region == region {
			return l.RegionLimit
		}
	}
	return nil
}

// Validate checks a quota specification, naming every bad field.
func (q *QuotaSpec) Validate() error {
	v := &ValidationError{}
	if q == nil {
		v.Add("", "missing quota specification")
		return v
	}
	if msg := namespaceNameProblem(q.Name); msg != "" {
		v.Add("Name", "%s", "invalid quota name: "+msg)
	}
	if len(q.Description) > MaxQuotaDescription || !utf8.ValidString(q.Description) {
		v.Add("Description", "description must be valid UTF-8 of at most %d bytes", MaxQuotaDescription)
	}
	if len(q.Limits) > MaxQuotaLimits {
		v.Add("Limits", "at most %d limits, got %d", MaxQuotaLimits, len(q.Limits))
	}
	seen := map[string]bool{}
	for i, l := range q.Limits {
		if i >= MaxQuotaLimits {
			break
		}
		if l == nil {
			v.Add(Fieldf("Limits", i, ""), "missing limit")
			continue
		}
		if l.Region == "" {
			v.Add(Fieldf("Limits", i, "Region"), "missing region")
		} else if seen[l.Region] {
			v.Add(Fieldf("Limits", i, "Region"), "region %q has two limits", l.Region)
		}
		seen[l.Region] = true
		if r := l.RegionLimit; r != nil {
			for _, d := range []struct {
				name string
				v    int
			}{{"CPU", r.CPU}, {"MemoryMB", r.MemoryMB}, {"MemoryMaxMB", r.MemoryMaxMB}, {"Allocations", r.Allocations}} {
				if d.v < -1 {
					v.Add(Fieldf("Limits", i, "RegionLimit."+d.name), "%d is not a limit: use a positive amount, 0 for no limit or -1 for none allowed", d.v)
				}
			}
		}
	}
	if len(v.Errors) > 0 {
		return v
	}
	return nil
}

// Copy returns a deep copy.
func (q *QuotaSpec) Copy() *QuotaSpec {
	if q == nil {
		return nil
	}
	c := *q
	c.Limits = make([]*QuotaLimit, len(q.Limits))
	for i, l := range q.Limits {
		if l == nil {
			continue
		}
		lc := *l
		if l.RegionLimit != nil {
			r := *l.RegionLimit
			lc.RegionLimit = &r
		}
		c.Limits[i] = &lc
	}
	return &c
}
