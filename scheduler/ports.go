package scheduler

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/schedhq/sched/state"
)

// Dynamic port range used when a node does not state its own.
const (
	DefaultMinDynamicPort = 20000
	DefaultMaxDynamicPort = 32000
)

// maxPort is the highest valid port number.
const maxPort = 65535

// portSet is a set of host ports on one node.
type portSet map[int]struct{}

func (s portSet) has(p int) bool { _, ok := s[p]; return ok }
func (s portSet) add(p int)      { s[p] = struct{}{} }

// nodeReservedPorts returns the ports a node keeps for itself: its
// ReservedResources.ReservedPorts and the reserved ports of its host
// networks.
func nodeReservedPorts(n *state.Node) (portSet, error) {
	ports := portSet{}
	add := func(spec, where string) error {
		ps, err := ParsePortSpec(spec)
		if err != nil {
			return fmt.Errorf("node %s: %s: %w", n.ID, where, err)
		}
		for _, p := range ps {
			ports.add(p)
		}
		return nil
	}
	if r := n.ReservedResources; r != nil && r.ReservedPorts != "" {
		if err := add(r.ReservedPorts, "ReservedResources.ReservedPorts"); err != nil {
			return nil, err
		}
	}
	for name, hn := range n.HostNetworks {
		if hn != nil && hn.ReservedPorts != "" {
			if err := add(hn.ReservedPorts, "HostNetworks["+name+"].ReservedPorts"); err != nil {
				return nil, err
			}
		}
	}
	return ports, nil
}

// ParsePortSpec parses a port list such as "22,80,8000-8100" into the
// ports it names, in order. Spaces around items are allowed; an empty
// spec names no port.
func ParsePortSpec(spec string) ([]int, error) {
	var out []int
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := parsePort(lo)
		if err != nil {
			return nil, fmt.Errorf("port %q: %w", item, err)
		}
		b := a
		if isRange {
			if b, err = parsePort(hi); err != nil {
				return nil, fmt.Errorf("port range %q: %w", item, err)
			}
			if b < a {
				return nil, fmt.Errorf("port range %q ends before it starts", item)
			}
		}
		for p := a; p <= b; p++ {
			out = append(out, p)
		}
	}
	return out, nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || p < 1 || p > maxPort {
		return 0, fmt.Errorf("not a port number from 1 to %d", maxPort)
	}
	return p, nil
}

// portPicker grants the ports of one new allocation on one node: it knows
// every port already taken there and draws dynamic ports from the node's
// range with the eval's seeded source, so a run is reproducible.
type portPicker struct {
	used portSet
	// base, when set, holds more taken ports (proposedPorts), shared
	// with the eval and not changed: picks go to used.
	base     portCounts
	min, max int
	rng      *rand.Rand
}

// newPortPicker returns a picker for node with the node's reserved ports
// and every port of allocs (those that will be on the node) taken.
func newPortPicker(node *state.Node, reserved []int, allocs []*state.Allocation, rng *rand.Rand) *portPicker {
	used := make(portSet, len(reserved)+len(allocs))
	for _, p := range reserved {
		used.add(p)
	}
	for _, a := range allocs {
		if a.Terminal() {
			continue
		}
		for _, p := range allocPorts(a.AllocatedResources) {
			used.add(p)
		}
	}
	lo, hi := dynamicRange(node)
	return &portPicker{used: used, min: lo, max: hi, rng: rng}
}

// dynamicRange is the node's range of dynamic ports, both ends included.
func dynamicRange(node *state.Node) (lo, hi int) {
	lo, hi = DefaultMinDynamicPort, DefaultMaxDynamicPort
	if r := node.NodeResources; r != nil {
		if r.MinDynamicPort > 0 {
			lo = r.MinDynamicPort
		}
		if r.MaxDynamicPort > 0 {
			hi = r.MaxDynamicPort
		}
	}
	return lo, min(hi, maxPort)
}

// assign returns copies of nets with every port given a host value:
// reserved ports keep theirs, which must be free; dynamic ports get a free
// one from the range. A dynamic port whose To is -1 maps to the same port
// inside the task. On failure it returns the exhausted dimension.
func (p *portPicker) assign(nets []*state.NetworkResource) ([]*state.NetworkResource, string) {
	if len(nets) == 0 {
		return nil, ""
	}
	out := make([]*state.NetworkResource, 0, len(nets))
	for _, n := range nets {
		if n == nil {
			continue
		}
		c := n.Copy()
		for i := range c.ReservedPorts {
			v := c.ReservedPorts[i].Value
			if p.taken(v) {
				return nil, DimensionReservedPort
			}
			p.used.add(v)
		}
		for i := range c.DynamicPorts {
			v, ok := p.pick()
			if !ok {
				return nil, DimensionDynamicPortsFull
			}
			c.DynamicPorts[i].Value = v
			if c.DynamicPorts[i].To == -1 {
				c.DynamicPorts[i].To = v
			}
		}
		out = append(out, c)
	}
	return out, ""
}

// pickTries is how many random draws pick makes before scanning the range:
// on a lightly used node a draw almost always succeeds at once.
const pickTries = 16

// taken reports whether port v is taken on the node.
func (p *portPicker) taken(v int) bool {
	return p.used.has(v) || p.base != nil && p.base.has(v)
}

// pick takes a free port from the dynamic range.
func (p *portPicker) pick() (int, bool) {
	span := p.max - p.min + 1
	if span <= 0 {
		return 0, false
	}
	for range pickTries {
		v := p.min + p.rng.IntN(span)
		if !p.taken(v) {
			p.used.add(v)
			return v, true
		}
	}
	start := p.rng.IntN(span)
	for i := range span {
		v := p.min + (start+i)%span
		if !p.taken(v) {
			p.used.add(v)
			return v, true
		}
	}
	return 0, false
}

// flattenPorts lists the ports of group networks as AllocatedPorts, the
// form clients read (SCHED_PORT_<label>).
func flattenPorts(nets []*state.NetworkResource) []state.AllocatedPort {
	var out []state.AllocatedPort
	for _, n := range nets {
		for _, ps := range [][]state.Port{n.ReservedPorts, n.DynamicPorts} {
			for _, p := range ps {
				out = append(out, state.AllocatedPort{Label: p.Label, Value: p.Value, To: p.To, HostIP: n.IP})
			}
		}
	}
	return out
}
