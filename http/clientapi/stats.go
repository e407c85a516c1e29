package clientapi

import (
	"context"
	"maps"
	"slices"

	"github.com/schedhq/sched/state"
)

// Stats asks c for the allocation's use (GET
// /v1/client/allocation/:alloc_id/stats: CPU and memory per running task)
// and fills in the total.
func Stats(ctx context.Context, c Client, allocID string) (*state.AllocResourceUsage, error) {
	u, err := c.AllocStats(ctx, allocID)
	if err != nil {
		return nil, err
	}
	if u == nil {
		u = &state.AllocResourceUsage{}
	}
	if u.Tasks == nil {
		u.Tasks = map[string]*state.TaskResourceUsage{}
	}
	if u.ResourceUsage == nil {
		u.ResourceUsage = SumResourceUsage(u.Tasks)
	}
	if u.Timestamp == 0 {
		for _, t := range u.Tasks {
			u.Timestamp = max(u.Timestamp, t.Timestamp)
		}
	}
	return u, nil
}

// SumResourceUsage adds up the tasks' use: RSS, CPU percent, MHz and CPU
// time. A field is Measured in the total when some task measured it.
func SumResourceUsage(tasks map[string]*state.TaskResourceUsage) *state.ResourceUsage {
	sum := &state.ResourceUsage{MemoryStats: &state.MemoryStats{Measured: []string{}}, CpuStats: &state.CpuStats{Measured: []string{}}}
	for _, name := range slices.Sorted(maps.Keys(tasks)) {
		t := tasks[name]
		if t == nil || t.ResourceUsage == nil {
			continue
		}
		if m := t.ResourceUsage.MemoryStats; m != nil {
			sum.MemoryStats.RSS += m.RSS
			sum.MemoryStats.Measured = mergeMeasured(sum.MemoryStats.Measured, m.Measured)
		}
		if c := t.ResourceUsage.CpuStats; c != nil {
			sum.CpuStats.Percent += c.Percent
			sum.CpuStats.TotalTicks += c.TotalTicks
			sum.CpuStats.TotalTime += c.TotalTime
			sum.CpuStats.Measured = mergeMeasured(sum.CpuStats.Measured, c.Measured)
		}
	}
	return sum
}

func mergeMeasured(into, more []string) []string {
	for _, m := range more {
		found := false
		for _, have := range into {
			found = found || have == m
		}
		if !found {
			into = append(into, m)
		}
	}
	return into
}
