package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/schedhq/sched/state"
)

// Stats implements driver.Driver: one sample of the container's cgroup
// from the engine. Memory is the resident set (cgroup v1 "rss"; on v2,
// usage less inactive file pages), with the usage and the limit's cache
// the CPU percent is over the time since the previous Stats
// call (100 is one core), or the average since the start on the first.
func (d *Driver) Stats(taskID string) (*state.TaskResourceUsage, error) {
	t, err := d.task(taskID)
	if err != nil {
		return nil, err
	}
	if t.exit.get() != nil {
		return nil, fmt.Errorf("stats %s: task has exited", taskID)
	}
	ctx, cancel := context.WithTimeout(d.ctx, defaultAPITimeout)
	defer cancel()
	r, err := d.engine.ContainerStatsOneShot(ctx, t.containerID)
	if err != nil {
		d.engineFailed(err)
		return nil, fmt.Errorf("stats %s: %w", taskID, err)
	}
	defer r.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
		return nil, fmt.Errorf("stats %s: %w", taskID, err)
	}
	now := s.Read
	if now.IsZero() {
		now = time.Now()
	}
	total := s.CPUStats.CPUUsage.TotalUsage // nanoseconds
	t.mu.Lock()
	prevCPU, prevTime := t.lastCPU, t.lastTime
	if prevTime.IsZero() {
		prevTime = t.startedAt
		prevCPU = 0
	}
	var percent float64
	if wall := now.Sub(prevTime); wall > 0 && total >= prevCPU {
		percent = 100 * float64(total-prevCPU) / float64(wall)
	}
	t.lastCPU, t.lastTime = total, now
	t.mu.Unlock()

	ms := s.MemoryStats
	rss, ok := ms.Stats["rss"]
	if !ok {
		rss = ms.Usage
		if inactive := ms.Stats["inactive_file"]; inactive < rss {
			rss -= inactive
		}
	}
	return &state.TaskResourceUsage{
		Timestamp: now.UnixNano(),
		ResourceUsage: &state.ResourceUsage{
			MemoryStats: &state.MemoryStats{RSS: rss, Measured: []string{"RSS"}},
			CpuStats: &state.CpuStats{Percent: percent, TotalTime: time.Duration(total),
				Measured: []string{"Percent", "Total Ticks", "Total Time"}},
		},
	}, nil
}
