package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Preempt scenario sizes: every simulated node (16,000 MHz) is filled
// with preemptFill allocations of priority-20 jobs, each a tenth of the
// node, so any further allocation of that size fits only by evicting one.
const (
	preemptFill    = 10
	preemptCPU     = 1600
	preemptPerJob  = 1000
	preemptLowPrio = 20
	preemptHigh    = 80
)

// preemptJob is a service job of count mock allocations of preemptCPU MHz
// at priority prio.
func preemptJob(id string, prio, count int) []byte {
	body, _ := json.Marshal(map[string]any{"Job": map[string]any{
		"ID": id, "Type": "service", "Priority": prio, "Datacenters": []string{"dc1"},
		// Only the simulated nodes (their classes), not the agent's own.
		"Constraints": []any{map[string]any{"LTarget": "${node.class}", "RTarget": "^class-", "Operand": "regexp"}},
		"TaskGroups": []any{map[string]any{"Name": "g", "Count": count, "Tasks": []any{map[string]any{
			"Name": "t", "Driver": "mock", "Config": map[string]any{"run_for": "1h"},
			"Resources": map[string]any{"CPU": preemptCPU, "MemoryMB": 16},
		}}}},
	}})
	return body
}

// preempt measures the latency of preempting evaluations: nodes full of
// priority-20 allocations, service preemption enabled, then evals
// one-allocation priority-80 jobs registered one after the other, each
// timed from its register until its evaluation is complete with the
// allocation placed (an eviction made room).
func (b *bench) preempt(nodes, evals, clients int) error {
	ns, dur, err := b.registerNodes(nodes, clients)
	if err != nil {
		return err
	}
	fmt.Printf("preempt: %d nodes registered in %v\n", nodes, dur.Round(time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.heartbeat(ctx, ns)

	total := nodes * preemptFill
	prefix := "preempt-low-" + b.run + "-"
	start := time.Now()
	for i := 0; i*preemptPerJob < total; i++ {
		resp, err := b.do(http.MethodPost, "/v1/jobs", preemptJob(prefix+strconv.Itoa(i), preemptLowPrio, min(preemptPerJob, total-i*preemptPerJob)))
		if err != nil {
			return err
		}
		resp.Body.Close()
	}
	if _, err := b.waitCounts(prefix, 30*time.Minute, time.Second, func(placed, _ int) bool { return placed >= total }); err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	fmt.Printf("preempt: %d priority-%d allocations fill the nodes after %v\n", total, preemptLowPrio, time.Since(start).Round(time.Millisecond))

	cfg, _ := json.Marshal(map[string]any{"SchedulerAlgorithm": "binpack", "PreemptionConfig": map[string]any{
		"SystemSchedulerEnabled": true, "ServiceSchedulerEnabled": true}})
	resp, err := b.do(http.MethodPut, "/v1/operator/scheduler/configuration", cfg)
	if err != nil {
		return err
	}
	resp.Body.Close()

	var lat []time.Duration
	for i := range evals {
		id := "preempt-high-" + b.run + "-" + strconv.Itoa(i)
		t0 := time.Now()
		resp, err := b.do(http.MethodPost, "/v1/jobs", preemptJob(id, preemptHigh, 1))
		if err != nil {
			return err
		}
		var reg struct{ EvalID string }
		json.NewDecoder(resp.Body).Decode(&reg)
		resp.Body.Close()
		if err := b.waitEvalPlaced(reg.EvalID, time.Minute); err != nil {
			return fmt.Errorf("job %s: %w", id, err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	preempting := 0
	for i := range evals {
		n, err := b.preemptedBy("preempt-high-" + b.run + "-" + strconv.Itoa(i))
		if err != nil {
			return err
		}
		if n > 0 {
			preempting++
		}
	}
	fmt.Printf("preempt: %d evaluations on %d full nodes (%d placed by evicting), register to placed: p50 %v, p99 %v, max %v\n",
		evals, nodes, preempting, pct(lat, 50).Round(time.Microsecond), pct(lat, 99).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	return nil
}

// preemptedBy counts the allocations the job's allocations evicted.
func (b *bench) preemptedBy(job string) (int, error) {
	resp, err := b.do(http.MethodGet, "/v1/job/"+job+"/allocations", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var allocs []struct{ PreemptedAllocations []string }
	if err := json.NewDecoder(resp.Body).Decode(&allocs); err != nil {
		return 0, err
	}
	n := 0
	for _, a := range allocs {
		n += len(a.PreemptedAllocations)
	}
	return n, nil
}

// waitEvalPlaced blocks on the evaluation until it is complete, and fails
// when it left placements undone.
func (b *bench) waitEvalPlaced(id string, limit time.Duration) error {
	e, err := b.waitEvalComplete(id, limit)
	if err != nil {
		return err
	}
	if len(e.FailedTGAllocs) > 0 {
		return fmt.Errorf("evaluation %s complete with failed placements", id)
	}
	return nil
}
