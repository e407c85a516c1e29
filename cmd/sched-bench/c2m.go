package main

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The c2m scenario is C1M's machinery (the placement scenario: simulated
// nodes registered and kept alive over HTTP, jobs of -c2m-per-job
// allocations registered by -clients writers, a line per 100,000
// placements) at two million allocations on 10,000 nodes, followed by
// its targets, each met or missed:
//
//   - every allocation placed in under 4 minutes;
//   - the last 100,000 placed at 80% or more of the first 100,000's rate;
//   - the agent's RSS once settled at most 1.5 KiB per allocation;
//   - with -spawn (and -at-scale), a restart after SIGKILL serving
//     consistent reads again in under 30 s.

// placementFigures are the placement scenario's figures a target is
// judged on; zero where the run did not measure one.
type placementFigures struct {
	total               int
	took                time.Duration
	firstRate, lastRate float64
	settledRSS          int64 // bytes
	restart             time.Duration
}

// c2mTargets are the c2m scenario's targets.
type c2mTargets struct {
	took        time.Duration
	lastOfFirst float64 // the last step's rate over the first's, at least
	perAlloc    float64 // settled RSS bytes per allocation, at most
	restart     time.Duration
}

// defaultC2MTargets are the targets of issue 34.
var defaultC2MTargets = c2mTargets{took: 4 * time.Minute, lastOfFirst: 0.8, perAlloc: 1.5 * 1024, restart: 30 * time.Second}

// verdict lines, one per target: the figure, the target, and whether it
// was met ("not measured" when the run did not measure it).
func (f placementFigures) verdict(t c2mTargets) []string {
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	var out []string
	out = append(out, fmt.Sprintf("all %d placed after %v (target < %v): %s", f.total, f.took.Round(time.Millisecond), t.took, mark(f.took > 0 && f.took < t.took)))
	if f.firstRate > 0 {
		r := f.lastRate / f.firstRate
		out = append(out, fmt.Sprintf("last step at %.0f%% of the first's rate (target >= %.0f%%): %s", 100*r, 100*t.lastOfFirst, mark(r >= t.lastOfFirst)))
	} else {
		out = append(out, "last step against the first: not measured")
	}
	if f.settledRSS > 0 && f.total > 0 {
		per := float64(f.settledRSS) / float64(f.total)
		out = append(out, fmt.Sprintf("settled RSS %.2f KiB per allocation (target <= %.2f KiB): %s", per/1024, t.perAlloc/1024, mark(per <= t.perAlloc)))
	} else {
		out = append(out, "settled RSS per allocation: not measured (needs -spawn)")
	}
	if f.restart > 0 {
		out = append(out, fmt.Sprintf("restart after SIGKILL to consistent reads %v (target < %v): %s", f.restart.Round(time.Millisecond), t.restart, mark(f.restart < t.restart)))
	} else {
		out = append(out, "restart to consistent reads: not measured (needs -spawn and -at-scale)")
	}
	return out
}

// nodeChunk is how many simulated nodes registerNodesAlive registers
// before it starts keeping them alive.
const nodeChunk = 500

// registerNodesAlive registers n simulated nodes from c clients, in
// chunks of nodeChunk, and keeps each chunk alive (heartbeat) as soon as
// it is registered, until ctx ends. A node's first TTL is short (10 s for
// the first hundreds): registering 10,000 takes 10-20 s on this machine,
// so heartbeats that began only after the last registration came too late
// for the first nodes, which were marked down.
func (b *bench) registerNodesAlive(ctx context.Context, n, c int) ([]*simNode, time.Duration, error) {
	start := time.Now()
	var all []*simNode
	for _, size := range chunks(n, nodeChunk) {
		ns, _, err := b.registerNodes(size, c)
		if err != nil {
			return nil, 0, err
		}
		b.heartbeat(ctx, ns)
		all = append(all, ns...)
	}
	return all, time.Since(start), nil
}

// chunks splits n into sizes of at most size, in order.
func chunks(n, size int) []int {
	var out []int
	for n > 0 {
		k := min(n, size)
		out = append(out, k)
		n -= k
	}
	return out
}

// c2m runs the placement scenario at nodes × jobs × perJob and judges it.
func (b *bench) c2m(nodes, jobs, perJob, clients int) error {
	if nodes < 1 || jobs < 1 || perJob < 1 {
		return errors.New("c2m: -c2m-nodes, -c2m-jobs and -c2m-per-job must be positive")
	}
	if jobs*perJob > 10_000_000 {
		return fmt.Errorf("c2m: %d allocations: at most 10,000,000", jobs*perJob)
	}
	b.figures = &placementFigures{}
	if err := b.placement(nodes, jobs, perJob, clients); err != nil {
		return err
	}
	for _, line := range b.figures.verdict(defaultC2MTargets) {
		fmt.Println("c2m:", line)
	}
	return nil
}
