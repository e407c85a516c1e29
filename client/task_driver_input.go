package client

import (
	"github.com/schedhq/sched/state"
)

// What the task runner hands a driver beyond the environment: the
// allocation's ports (docker maps them), the task's memory_max and
// reserved cores, and a way to report progress as task events.

// taskPorts are the ports of the allocation (its group networks) and of
// the task's own networks, as the task's environment lists them.
func (ar *allocRunner) taskPorts(t *state.Task) []state.AllocatedPort {
	a := ar.alloc()
	var taskNets []*state.NetworkResource
	if res := a.AllocatedResources; res != nil {
		if tr := res.Tasks[t.Name]; tr != nil {
			taskNets = tr.Networks
		}
	}
	ps := allocPorts(a, taskNets)
	out := make([]state.AllocatedPort, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.AllocatedPort)
	}
	return out
}

// memoryMaxOf is the task's memory_max in MB as the scheduler granted it
// in the allocation (0: none). The scheduler grants it only while the
// scheduler configuration enables memory oversubscription; otherwise the
// task's memory_max is ignored, as in Nomad.
func memoryMaxOf(a *state.Allocation, t *state.Task) int {
	if a == nil || a.AllocatedResources == nil {
		return 0
	}
	if tr := a.AllocatedResources.Tasks[t.Name]; tr != nil {
		return tr.MemoryMaxMB
	}
	return 0
}

// coresOf is the task's reserved cores (0: none).
func coresOf(t *state.Task) int {
	if t.Resources == nil {
		return 0
	}
	return t.Resources.Cores
}

// driverMessage records msg from the driver as a "Driver" task event.
func (tr *taskRunner) driverMessage(msg string) {
	tr.emit(eventDriverMessage(tr.ar.c.now(), msg))
}
