package scheduler

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/schedhq/sched/state"
)

// ComputeClass returns a node's computed class: a stable hash of what
// feasibility checks can look at, other than what is unique to the node.
// Nodes with the same computed class pass or fail the same constraints, so
// the scheduler checks one node per class and remembers the answer for
// the rest, and blocked evaluations wait for capacity of the classes they
// could use.
//
// It covers the datacenter, the node pool, the node class, the attributes
// and meta whose keys do not contain "unique.", and the names of the
// drivers that are detected and healthy. Map order does not matter.
// Servers store it in Node.ComputedClass on register; the scheduler
// computes it for a node that has none.
func ComputeClass(n *state.Node) string {
	h := fnv.New64a()
	write := func(s string) {
		var l [8]byte
		binary.LittleEndian.PutUint64(l[:], uint64(len(s)))
		h.Write(l[:])
		h.Write([]byte(s))
	}
	write(n.Datacenter)
	write(n.NodePool)
	write(n.NodeClass)
	for _, m := range []map[string]string{n.Attributes, n.Meta} {
		keys := make([]string, 0, len(m))
		for k := range m {
			if !strings.Contains(k, uniquePrefix) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		write(fmt.Sprint(len(keys)))
		for _, k := range keys {
			write(k)
			write(m[k])
		}
	}
	var drivers []string
	for name, d := range n.Drivers {
		if d != nil && d.Detected && d.Healthy {
			drivers = append(drivers, name)
		}
	}
	slices.Sort(drivers)
	write(fmt.Sprint(len(drivers)))
	for _, d := range drivers {
		write(d)
	}
	return fmt.Sprintf("v1:%016x", h.Sum64())
}

// uniquePrefix marks node properties that differ from node to node: a
// constraint on one escapes class memoization.
const uniquePrefix = "unique."

// escapes reports whether a constraint looks at something unique to a
// node, so that its result cannot be remembered per computed class.
func escapes(l, r string) bool {
	return strings.Contains(l, uniquePrefix) || strings.Contains(r, uniquePrefix)
}

// classResult is the remembered outcome of a class's feasibility checks.
type classResult struct {
	ok bool
	// reason is the filter reason of a failed check, counted again in
	// ConstraintFiltered for every node of the class.
	reason string
}

// eligibility remembers, for one evaluation, which computed classes pass
// the job's checks and each task group's checks. It also records whether
// any check escaped memoization, which blocked evaluations need to know:
// such an eval cannot tell from a class alone whether a node helps.
type eligibility struct {
	job    map[string]classResult
	groups map[string]map[string]classResult
	// escaped is set when some constraint looked at a unique property.
	escaped bool
}

func newEligibility() *eligibility {
	return &eligibility{job: map[string]classResult{}, groups: map[string]map[string]classResult{}}
}

// group returns the remembered results of one task group.
func (e *eligibility) group(name string) map[string]classResult {
	m := e.groups[name]
	if m == nil {
		m = map[string]classResult{}
		e.groups[name] = m
	}
	return m
}

// classEligibility is the ClassEligibility of a blocked evaluation: a
// class is eligible when it passed the job's checks and those of at least
// one task group, and ineligible when it failed the job's checks or those
// of every task group it was checked for.
func (e *eligibility) classEligibility() map[string]bool {
	out := map[string]bool{}
	for class, r := range e.job {
		out[class] = false
		if !r.ok {
			continue
		}
		for _, g := range e.groups {
			if gr, ok := g[class]; ok && gr.ok {
				out[class] = true
				break
			}
		}
	}
	return out
}
