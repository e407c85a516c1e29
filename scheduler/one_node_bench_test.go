package scheduler_test

import (
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
)

// BenchmarkServiceSchedule1000OnOneNode measures one eval placing a
// count=1,000 service group pinned to one node of 10 (sched-bench's
// client-path count job: 1 MHz, 10 MB, 2 MB of disk each): every
// placement ranks the node again with all the placements the plan holds
// for it so far. "ports" gives the group a dynamic port, so each
// placement also needs the ports the node's proposed allocations hold to
// pick one (evalContext.proposedPorts). The planner records the plan and
// commits nothing.
func BenchmarkServiceSchedule1000OnOneNode(b *testing.B) {
	for _, ports := range []bool{false, true} {
		name := "no-ports"
		if ports {
			name = "ports"
		}
		b.Run(name, func(b *testing.B) {
			h := schedtest.NewHarness(b)
			nodes := bigNodes(h, "node", 10)
			job := MockJob("one-node")
			job.Constraints = append(job.Constraints, &state.Constraint{LTarget: "${node.unique.id}", RTarget: nodes[3].ID, Operand: "="})
			tg := job.TaskGroups[0]
			tg.Count = 1000
			tg.EphemeralDisk = &state.EphemeralDisk{SizeMB: 2}
			tg.Tasks[0].Resources = &state.Resources{CPU: 1, MemoryMB: 10}
			if !ports {
				tg.Networks = nil
			}
			job = h.UpsertJob(job)
			eval := h.NewEval(job, state.EvalTriggerJobRegister)
			snap, err := h.Store.Snapshot()
			if err != nil {
				b.Fatal(err)
			}
			benchScheduleWhole(b, h.Config(), snap, eval, 1000)
		})
	}
}
