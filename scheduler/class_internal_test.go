package scheduler

import (
	"testing"

	"github.com/schedhq/sched/state"
)

func TestComputeClass(t *testing.T) {
	base := MockNode("a")
	for _, c := range []struct {
		name   string
		change func(n *state.Node)
		same   bool
	}{
		{"other name and ID", func(n *state.Node) { n.ID, n.Name = "other", "other" }, true},
		{"unique attribute", func(n *state.Node) { n.Attributes["unique.hostname"] = "zzz" }, true},
		{"unique meta", func(n *state.Node) { n.Meta["unique.serial"] = "42" }, true},
		{"status and eligibility", func(n *state.Node) { n.Status, n.SchedulingEligibility = "down", "ineligible" }, true},
		{"resources", func(n *state.Node) { n.NodeResources.CPU = 1 }, true},
		{"unhealthy driver added", func(n *state.Node) { n.Drivers["docker"] = &state.DriverInfo{Detected: true} }, true},
		{"datacenter", func(n *state.Node) { n.Datacenter = "dc2" }, false},
		{"pool", func(n *state.Node) { n.NodePool = "gpu" }, false},
		{"class", func(n *state.Node) { n.NodeClass = "big" }, false},
		{"attribute", func(n *state.Node) { n.Attributes["kernel.name"] = "darwin" }, false},
		{"meta", func(n *state.Node) { n.Meta["rack"] = "r2" }, false},
		{"driver unhealthy", func(n *state.Node) { n.Drivers["mock"] = &state.DriverInfo{Detected: true} }, false},
		// Keys and values must not run together: "ab"+"c" vs "a"+"bc".
		{"key/value boundary", func(n *state.Node) { n.Meta["ab"] = "c" }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := base.Copy()
			c.change(n)
			if got := ComputeClass(n) == ComputeClass(base); got != c.same {
				t.Fatalf("same class = %v, want %v", got, c.same)
			}
		})
	}
	a, b := base.Copy(), base.Copy()
	a.Meta = map[string]string{"a": "bc"}
	b.Meta = map[string]string{"ab": "c"}
	if ComputeClass(a) == ComputeClass(b) {
		t.Fatal("meta a=bc and ab=c must not share a class")
	}
}
