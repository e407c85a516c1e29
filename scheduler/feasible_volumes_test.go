package scheduler_test

import (
	"fmt"
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
)

func TestFeasibleHostVolumes(t *testing.T) {
	// n0 has "data" read-write, n1 has it read-only, n2 has none.
	vols := []map[string]*state.ClientHostVolumeConfig{
		{"data": {Name: "data", Path: "/srv/data"}},
		{"data": {Name: "data", Path: "/srv/data", ReadOnly: true}},
		nil,
	}
	for _, c := range []struct {
		name       string
		source     string
		readOnly   bool
		wantNodes  []string // where the allocations may go
		wantFilter int      // nodes filtered for the volume, per failed placement
	}{
		{"read-write only where writable", "data", false, []string{"n0"}, 2},
		{"read-only anywhere it is", "data", true, []string{"n0", "n1"}, 1},
		{"a volume no node has", "logs", false, nil, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			names := map[string]string{}
			for i, v := range vols {
				n := MockNode(fmt.Sprintf("n%d", i))
				n.HostVolumes = v
				n.ComputedClass = ComputeClass(n)
				h.UpsertNodes(n)
				names[n.ID] = n.Name
			}
			job := MockJob("vol")
			tg := job.TaskGroups[0]
			tg.Count = 4
			tg.Tasks[0].Resources.CPU = 100
			tg.Volumes = map[string]*state.VolumeRequest{"v": {Name: "v", Type: "host", Source: c.source, ReadOnly: c.readOnly}}
			ev := runEval(t, h, job)
			live := h.LiveAllocs(job.Namespace, job.ID)
			for _, a := range live {
				ok := false
				for _, w := range c.wantNodes {
					ok = ok || names[a.NodeID] == w
				}
				if !ok {
					t.Errorf("allocation placed on %s, want one of %v", names[a.NodeID], c.wantNodes)
				}
			}
			if c.wantNodes == nil {
				if len(live) != 0 {
					t.Fatalf("placed %d allocations on nodes without the volume", len(live))
				}
				m := ev.FailedTGAllocs[tg.Name]
				if m == nil || m.ConstraintFiltered["missing compatible host volumes"] != c.wantFilter {
					t.Fatalf("failed placement metrics %+v: want %d nodes filtered for %q", m, c.wantFilter, "missing compatible host volumes")
				}
				return
			}
			if len(live) != tg.Count {
				t.Fatalf("placed %d, want %d", len(live), tg.Count)
			}
		})
	}
}
