package apitest

import (
	"fmt"
	"strings"

	"github.com/schedhq/sched/state"
)

// NodeID is a deterministic node UUID.
func NodeID(i int) string { return fmt.Sprintf("10000000-0000-4000-8000-%012d", i) }

// AllocID is a deterministic allocation UUID.
func AllocID(i int) string { return fmt.Sprintf("a0000000-0000-4000-8000-%012d", i) }

// SourceID is the n-th ID of a harness's ID source.
func SourceID(n int64) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// TestNode is a ready-to-register node in dc1 with one healthy driver.
func TestNode(i int) *state.Node {
	return &state.Node{
		ID:         NodeID(i),
		Name:       fmt.Sprintf("node-%d", i),
		Datacenter: "dc1",
		HTTPAddr:   fmt.Sprintf("10.0.0.%d:4646", i),
		Attributes: map[string]string{"kernel.name": "linux", "unique.hostname": fmt.Sprintf("host-%d", i)},
		NodeResources: &state.NodeResources{
			CPU: 4000, MemoryMB: 8192, DiskMB: 100 << 10,
		},
		Drivers: map[string]*state.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
	}
}

// TestJob is a minimal valid service job: one group "web" of Count 2 with
// one task "server".
func TestJob(id string) *state.Job {
	return &state.Job{
		ID:          id,
		Type:        state.JobTypeService,
		Datacenters: []string{"dc1"},
		Meta:        map[string]string{"owner": "team-" + id},
		TaskGroups: []*state.TaskGroup{{
			Name:  "web",
			Count: 2,
			Tasks: []*state.Task{{
				Name:      "server",
				Driver:    "raw_exec",
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{"60"}},
				Resources: &state.Resources{CPU: 100, MemoryMB: 64},
			}},
		}},
	}
}

// BatchJob is TestJob as a batch job.
func BatchJob(id string) *state.Job {
	j := TestJob(id)
	j.Type = state.JobTypeBatch
	return j
}

// SystemJob is a system job with one group of one task.
func SystemJob(id string) *state.Job {
	j := TestJob(id)
	j.Type = state.JobTypeSystem
	j.TaskGroups[0].Count = 1
	return j
}

// PeriodicJob is a batch job launched every minute.
func PeriodicJob(id string) *state.Job {
	j := BatchJob(id)
	j.Periodic = &state.PeriodicConfig{Enabled: true, Spec: "* * * * *"}
	return j
}

// ParameterizedJob is a batch job instantiated by dispatch.
func ParameterizedJob(id string) *state.Job {
	j := BatchJob(id)
	j.ParameterizedJob = &state.ParameterizedJobConfig{Payload: state.DispatchPayloadOptional}
	return j
}

// RulesText writes policy rules: capabilities in namespace "*" (or ns),
// and node, agent and operator levels ("" for no rule).
func RulesText(ns string, caps []string, node, agent, operator string) string {
	var b strings.Builder
	if len(caps) > 0 {
		fmt.Fprintf(&b, "namespace %q {\n  capabilities = [%s]\n}\n", ns, QuoteAll(caps))
	}
	for _, lv := range [][2]string{{"node", node}, {"agent", agent}, {"operator", operator}} {
		if lv[1] != "" {
			fmt.Fprintf(&b, "%s { policy = %q }\n", lv[0], lv[1])
		}
	}
	return b.String()
}

// QuoteAll quotes every one of list and joins them with ", ".
func QuoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// SvcReg is a service registration as a client sends it.
func SvcReg(id, name, alloc string, port int, tags ...string) map[string]any {
	return map[string]any{"ID": id, "ServiceName": name, "AllocID": alloc, "Address": "10.0.0.1", "Port": port, "Tags": tags}
}
