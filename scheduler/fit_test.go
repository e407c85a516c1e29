package scheduler

import (
	"math/rand/v2"
	"testing"

	"github.com/schedhq/sched/state"
)

// fitAlloc is an allocation asking cpu, mem and disk with host ports.
func fitAlloc(id string, cpu, mem, disk int, ports ...int) *state.Allocation {
	a := &state.Allocation{
		ID:            id,
		DesiredStatus: state.AllocDesiredStatusRun,
		ClientStatus:  state.AllocClientStatusRunning,
		AllocatedResources: &state.AllocatedResources{
			Tasks:  map[string]*state.AllocatedTaskResources{"t": {CPU: cpu, MemoryMB: mem}},
			Shared: state.AllocatedSharedResources{DiskMB: disk},
		},
	}
	for _, p := range ports {
		a.AllocatedResources.Shared.Ports = append(a.AllocatedResources.Shared.Ports, state.AllocatedPort{Label: "p", Value: p})
	}
	return a
}

func TestAllocsFit(t *testing.T) {
	// MockNode offers 3900 MHz, 7936 MiB, 98304 MiB disk; port 22 reserved.
	stopped := fitAlloc("stopped", 3900, 10, 10, 8080)
	stopped.DesiredStatus = state.AllocDesiredStatusStop
	failed := fitAlloc("failed", 3900, 10, 10)
	failed.ClientStatus = state.AllocClientStatusFailed
	taskNet := fitAlloc("tasknet", 10, 10, 10)
	taskNet.AllocatedResources.Tasks["t"].Networks = []*state.NetworkResource{{DynamicPorts: []state.Port{{Label: "x", Value: 8080}}}}
	for _, c := range []struct {
		name    string
		allocs  []*state.Allocation
		fit     bool
		dim     string
		badNode bool
	}{
		{"empty", nil, true, "", false},
		{"exactly full", []*state.Allocation{fitAlloc("a", 3900, 7936, 98304)}, true, "", false},
		{"cpu", []*state.Allocation{fitAlloc("a", 2000, 10, 10), fitAlloc("b", 1901, 10, 10)}, false, DimensionCPU, false},
		{"memory", []*state.Allocation{fitAlloc("a", 10, 7937, 10)}, false, DimensionMemory, false},
		{"disk", []*state.Allocation{fitAlloc("a", 10, 10, 98305)}, false, DimensionDisk, false},
		{"cpu before memory", []*state.Allocation{fitAlloc("a", 5000, 9000, 10)}, false, DimensionCPU, false},
		{"terminal allocs are free", []*state.Allocation{stopped, failed, fitAlloc("a", 3900, 10, 10, 8080)}, true, "", false},
		{"port twice", []*state.Allocation{fitAlloc("a", 1, 1, 1, 8080), fitAlloc("b", 1, 1, 1, 8080)}, false, DimensionPortCollision, false},
		{"task port against group port", []*state.Allocation{fitAlloc("a", 1, 1, 1, 8080), taskNet}, false, DimensionPortCollision, false},
		{"reserved node port", []*state.Allocation{fitAlloc("a", 1, 1, 1, 22)}, false, DimensionPortCollision, false},
		{"distinct ports", []*state.Allocation{fitAlloc("a", 1, 1, 1, 8080), fitAlloc("b", 1, 1, 1, 8081)}, true, "", false},
		{"bad reserved spec", []*state.Allocation{fitAlloc("a", 1, 1, 1)}, false, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := MockNode("n")
			if c.badNode {
				n.ReservedResources.ReservedPorts = "22,abc"
			}
			fit, dim, err := AllocsFit(n, c.allocs)
			if c.badNode {
				if err == nil {
					t.Fatal("want an error for a malformed reserved port list")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fit != c.fit || dim != c.dim {
				t.Fatalf("AllocsFit = %v, %q; want %v, %q", fit, dim, c.fit, c.dim)
			}
		})
	}
}

func TestBinPackScore(t *testing.T) {
	capa := usage{CPU: 1000, MemoryMB: 1000}
	for _, c := range []struct {
		name         string
		fuller, less usage
	}{
		{"fuller beats emptier", usage{CPU: 800, MemoryMB: 800}, usage{CPU: 200, MemoryMB: 200}},
		{"even beats lopsided", usage{CPU: 500, MemoryMB: 500}, usage{CPU: 1000, MemoryMB: 0}},
		{"full beats almost full", usage{CPU: 1000, MemoryMB: 1000}, usage{CPU: 900, MemoryMB: 1000}},
	} {
		a, b := binPackScore(capa, c.fuller), binPackScore(capa, c.less)
		if a <= b {
			t.Errorf("%s: %v scores %.3f, not above %v at %.3f", c.name, c.fuller, a, c.less, b)
		}
	}
	if s := binPackScore(capa, usage{}); s != 0 {
		t.Errorf("empty node scores %v, want 0", s)
	}
	if s := binPackScore(capa, capa); s != 1 {
		t.Errorf("full node scores %v, want 1", s)
	}
}

func TestParsePortSpec(t *testing.T) {
	for _, c := range []struct {
		spec string
		want []int
		bad  bool
	}{
		{"", nil, false},
		{"22", []int{22}, false},
		{"22, 80,8000-8002", []int{22, 80, 8000, 8001, 8002}, false},
		{"80-79", nil, true},
		{"0", nil, true},
		{"65536", nil, true},
		{"http", nil, true},
		{"1-x", nil, true},
	} {
		got, err := ParsePortSpec(c.spec)
		if (err != nil) != c.bad {
			t.Errorf("ParsePortSpec(%q) error = %v, want error %v", c.spec, err, c.bad)
			continue
		}
		if !c.bad && !equalInts(got, c.want) {
			t.Errorf("ParsePortSpec(%q) = %v, want %v", c.spec, got, c.want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPortPicker(t *testing.T) {
	node := MockNode("n")
	node.NodeResources.MinDynamicPort, node.NodeResources.MaxDynamicPort = 30000, 30099
	existing := []*state.Allocation{fitAlloc("a", 1, 1, 1, 30000, 30001, 8080)}
	dyn := []*state.NetworkResource{{DynamicPorts: []state.Port{{Label: "a"}, {Label: "b", To: -1}}}}

	t.Run("dynamic ports are unique and in range", func(t *testing.T) {
		p := newPortPicker(node, []int{22}, existing, rand.New(rand.NewPCG(1, 2)))
		seen := map[int]bool{30000: true, 30001: true}
		for i := range 49 {
			nets, dim := p.assign(dyn)
			if dim != "" {
				t.Fatalf("assignment %d failed: %s", i, dim)
			}
			for _, port := range nets[0].DynamicPorts {
				if port.Value < 30000 || port.Value > 30099 || seen[port.Value] {
					t.Fatalf("assignment %d: port %d out of range or reused", i, port.Value)
				}
				seen[port.Value] = true
			}
			if b := nets[0].DynamicPorts[1]; b.To != b.Value {
				t.Fatalf("To -1 must map to the host port, got %+v", b)
			}
		}
		// 100 ports, 2 taken before, 98 handed out: one more pair fails.
		if _, dim := p.assign(dyn); dim != DimensionDynamicPortsFull {
			t.Fatalf("full range gave %q, want %q", dim, DimensionDynamicPortsFull)
		}
		if dyn[0].DynamicPorts[0].Value != 0 {
			t.Fatal("assign changed the job's network")
		}
	})
	t.Run("same seed, same ports", func(t *testing.T) {
		pick := func() []state.Port {
			p := newPortPicker(node, []int{22}, existing, rand.New(rand.NewPCG(7, 7)))
			nets, _ := p.assign(dyn)
			return nets[0].DynamicPorts
		}
		a, b := pick(), pick()
		if a[0] != b[0] || a[1] != b[1] {
			t.Fatalf("ports differ for one seed: %v vs %v", a, b)
		}
	})
	t.Run("reserved ports", func(t *testing.T) {
		for _, c := range []struct {
			port int
			dim  string
		}{{8080, DimensionReservedPort}, {22, DimensionReservedPort}, {9090, ""}} {
			p := newPortPicker(node, []int{22}, existing, rand.New(rand.NewPCG(1, 1)))
			_, dim := p.assign([]*state.NetworkResource{{ReservedPorts: []state.Port{{Label: "r", Value: c.port}}}})
			if dim != c.dim {
				t.Errorf("reserved %d: dimension %q, want %q", c.port, dim, c.dim)
			}
		}
	})
}
