package scheduler

import (
	"fmt"

	"github.com/schedhq/sched/state"
)

// MockNode returns a ready, eligible node in dc1 and the default pool
// with 4000 MHz of CPU over 4 cores, 8 GiB of memory and 100 GiB of disk
// (100 MHz, 256 MiB, 4 GiB and port 22 reserved), healthy raw_exec and
// mock drivers, and a few Linux attributes. Its ID is derived from name,
// so tests read the same IDs every run; its computed class is set.
func MockNode(name string) *state.Node {
	n := &state.Node{
		ID:         mockID(name),
		Name:       name,
		Datacenter: "dc1",
		NodePool:   state.NodePoolDefault,
		Attributes: map[string]string{
			"kernel.name":     "linux",
			"cpu.arch":        "amd64",
			"os.version":      "22.04",
			"unique.hostname": name,
		},
		Meta: map[string]string{},
		NodeResources: &state.NodeResources{
			CPU: 4000, Cores: 4, MemoryMB: 8192, DiskMB: 100 * 1024,
		},
		ReservedResources: &state.NodeReservedResources{
			CPU: 100, MemoryMB: 256, DiskMB: 4 * 1024, ReservedPorts: "22",
		},
		Drivers: map[string]*state.DriverInfo{
			"raw_exec": {Detected: true, Healthy: true},
			"mock":     {Detected: true, Healthy: true},
		},
		Status:                state.NodeStatusReady,
		SchedulingEligibility: state.NodeSchedulingEligible,
	}
	n.ComputedClass = ComputeClass(n)
	return n
}

// mockID turns a name into a stable UUID-shaped ID.
func mockID(name string) string {
	h := seedOf(name)
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", uint32(h>>32), h&0xffffffffffff)
}

// MockJob returns a canonicalized service job with one group "web" of 10
// allocations of one mock task asking 500 MHz, 256 MiB and a dynamic
// port "http".
func MockJob(id string) *state.Job {
	j := &state.Job{
		ID:        id,
		Namespace: state.DefaultNamespace,
		Type:      state.JobTypeService,
		TaskGroups: []*state.TaskGroup{{
			Name:  "web",
			Count: 10,
			Networks: []*state.NetworkResource{{
				DynamicPorts: []state.Port{{Label: "http"}},
			}},
			Tasks: []*state.Task{{
				Name:      "web",
				Driver:    "mock",
				Config:    map[string]any{"run_for": "1h"},
				Resources: &state.Resources{CPU: 500, MemoryMB: 256},
			}},
		}},
	}
	j.Canonicalize()
	return j
}

// MockBatchJob returns MockJob as a batch job without ports.
func MockBatchJob(id string) *state.Job {
	j := MockJob(id)
	j.Type = state.JobTypeBatch
	j.TaskGroups[0].Networks = nil
	j.TaskGroups[0].ReschedulePolicy = nil
	j.TaskGroups[0].Migrate = nil
	j.TaskGroups[0].Update = nil
	j.Canonicalize()
	return j
}

// MockSystemJob returns MockJob as a system job without ports.
func MockSystemJob(id string) *state.Job {
	j := MockJob(id)
	j.Type = state.JobTypeSystem
	j.TaskGroups[0].Count = 1
	j.TaskGroups[0].Networks = nil
	j.TaskGroups[0].ReschedulePolicy = nil
	j.TaskGroups[0].Migrate = nil
	j.TaskGroups[0].Update = nil
	j.Canonicalize()
	return j
}
