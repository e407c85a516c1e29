package client

import (
	"testing"

	"github.com/schedhq/sched/state"
)

// TestMemoryMaxFromTheAllocation: the task's memory_max reaches the driver
// and the environment only as the scheduler granted it in the allocation
// (memory oversubscription enabled); the job's memory_max alone is
// ignored.
func TestMemoryMaxFromTheAllocation(t *testing.T) {
	task := &state.Task{Name: "web", Resources: &state.Resources{MemoryMB: 128, MemoryMaxMB: 512}}
	j := &state.Job{ID: "shop", TaskGroups: []*state.TaskGroup{{Name: "front", Tasks: []*state.Task{task}}}}
	for _, granted := range []int{0, 512} {
		a := &state.Allocation{ID: "a1", Name: "shop.front[0]", JobID: "shop", Job: j, TaskGroup: "front",
			AllocatedResources: &state.AllocatedResources{Tasks: map[string]*state.AllocatedTaskResources{
				"web": {CPU: 100, MemoryMB: 128, MemoryMaxMB: granted}}}}
		if got := memoryMaxOf(a, task); got != granted {
			t.Errorf("granted %d: driver gets memory max %d", granted, got)
		}
		env := buildEnv(&envInput{Alloc: a, Group: j.TaskGroups[0], Task: task})
		v, ok := env["SCHED_MEMORY_MAX_LIMIT"]
		if (granted == 0) == ok || (ok && v != "512") {
			t.Errorf("granted %d: SCHED_MEMORY_MAX_LIMIT = %q (set %v)", granted, v, ok)
		}
	}
}
