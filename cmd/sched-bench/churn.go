package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The churn scenario (issue: no evaluation storms): nodes simulated
// nodes run jobs × perJob allocations; half the nodes stop heartbeating
// and are marked down by the leader, then heartbeat again. It reports the
// evaluations created in each phase against the jobs affected, how long
// until every job is whole again after the last node went down, and the
// peak depth of the broker (ready, delivered and waiting evaluations).

// churnStats is what the scenario samples from the agent.
type churnStats struct {
	evals int // rows of the evaluations table
	depth int // broker: ready + unacked + pending
}

// sampleChurn reads the agent's metrics.
func (b *bench) sampleChurn() (churnStats, error) {
	resp, err := b.do(http.MethodGet, "/v1/metrics", nil)
	if err != nil {
		return churnStats{}, err
	}
	defer resp.Body.Close()
	var m struct {
		Gauges []struct {
			Name   string
			Value  float64
			Labels map[string]string
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return churnStats{}, err
	}
	var st churnStats
	for _, g := range m.Gauges {
		switch g.Name {
		case "sched_state_table_objects":
			if g.Labels["table"] == "evals" {
				st.evals = int(g.Value)
			}
		case "sched_broker_ready", "sched_broker_unacked", "sched_broker_pending":
			st.depth += int(g.Value)
		}
	}
	return st, nil
}

// liveOnReady counts the allocations of the jobs with prefix that are
// meant to run, not finished and on a node that is not down: a job is
// whole again when its allocations on the nodes that went down were
// replaced, not merely before the scheduler marked them lost.
func (b *bench) liveOnReady(prefix string) (int, error) {
	resp, err := b.do(http.MethodGet, "/v1/nodes", nil)
	if err != nil {
		return 0, err
	}
	var nodes []struct{ ID, Status string }
	err = json.NewDecoder(resp.Body).Decode(&nodes)
	resp.Body.Close()
	if err != nil {
		return 0, err
	}
	down := map[string]bool{}
	for _, n := range nodes {
		if n.Status == "down" {
			down[n.ID] = true
		}
	}
	resp, err = b.do(http.MethodGet, "/v1/allocations?prefix=", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var list []struct{ JobID, NodeID, ClientStatus, DesiredStatus string }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return 0, err
	}
	live := 0
	for _, a := range list {
		switch {
		case len(a.JobID) < len(prefix) || a.JobID[:len(prefix)] != prefix, a.DesiredStatus != "run", down[a.NodeID]:
		case a.ClientStatus == "complete", a.ClientStatus == "failed", a.ClientStatus == "lost":
		default:
			live++
		}
	}
	return live, nil
}

// nodesDown counts the nodes marked down.
func (b *bench) nodesDown() (int, error) {
	resp, err := b.do(http.MethodGet, "/v1/nodes", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var list []struct{ Status string }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return 0, err
	}
	down := 0
	for _, n := range list {
		if n.Status == "down" {
			down++
		}
	}
	return down, nil
}

// affectedJobs counts the jobs with a live allocation on one of nodes.
func (b *bench) affectedJobs(prefix string, nodes map[string]bool) (int, error) {
	resp, err := b.do(http.MethodGet, "/v1/allocations?prefix=", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var list []struct{ JobID, NodeID, ClientStatus, DesiredStatus string }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return 0, err
	}
	jobs := map[string]bool{}
	for _, a := range list {
		if nodes[a.NodeID] && a.DesiredStatus == "run" && len(a.JobID) >= len(prefix) && a.JobID[:len(prefix)] == prefix {
			jobs[a.JobID] = true
		}
	}
	return len(jobs), nil
}

// evalTriggers counts, by TriggeredBy, the evaluations created after
// index (0: every one), and returns the evaluations table's index.
func (b *bench) evalTriggers(after uint64) (map[string]int, uint64, error) {
	resp, err := b.do(http.MethodGet, "/v1/evaluations", nil)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	var list []struct {
		TriggeredBy string
		CreateIndex uint64
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, 0, err
	}
	out := map[string]int{}
	for _, e := range list {
		if e.CreateIndex > after {
			out[e.TriggeredBy]++
		}
	}
	index, _ := strconv.ParseUint(resp.Header.Get("X-Sched-Index"), 10, 64)
	return out, index, nil
}

// churnPhase waits until done holds, sampling the broker's depth every
// interval, and returns the peak depth and when done first held.
func (b *bench) churnPhase(limit time.Duration, done func() (bool, error)) (peak int, at time.Time, err error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		st, err := b.sampleChurn()
		if err != nil {
			return 0, time.Time{}, err
		}
		peak = max(peak, st.depth)
		ok, err := done()
		if err != nil {
			return 0, time.Time{}, err
		}
		if ok {
			return peak, time.Now(), nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return peak, time.Time{}, fmt.Errorf("not done after %v", limit)
}

func (b *bench) churn(nodes, jobs, perJob, clients int) error {
	sims, _, err := b.registerNodes(nodes, clients)
	if err != nil {
		return err
	}
	stayCtx, stopStay := context.WithCancel(context.Background())
	defer stopStay()
	goneCtx, stopGone := context.WithCancel(context.Background())
	defer stopGone()
	half := len(sims) / 2
	b.heartbeat(stayCtx, sims[half:])
	b.heartbeat(goneCtx, sims[:half])

	prefix := fmt.Sprintf("churn-%s-", b.run)
	bodies := make([][]byte, jobs)
	for i := range bodies {
		bodies[i] = b.serviceJob(fmt.Sprintf("%s%05d", prefix, i), perJob)
	}
	if err := b.registerChurnJobs(bodies, clients); err != nil {
		return err
	}
	total := jobs * perJob
	if _, err := b.waitCounts(prefix, 10*time.Minute, time.Second, func(placed, _ int) bool { return placed >= total }); err != nil {
		return err
	}
	gone := map[string]bool{}
	for _, n := range sims[:half] {
		gone[n.ID] = true
	}
	affected, err := b.affectedJobs(prefix, gone)
	if err != nil {
		return err
	}
	before, err := b.sampleChurn()
	if err != nil {
		return err
	}
	fmt.Printf("churn: %d nodes, %d jobs × %d allocations placed; %d jobs have allocations on the %d nodes that go down\n", nodes, jobs, perJob, affected, half)
	_, startIndex, err := b.evalTriggers(0)
	if err != nil {
		return err
	}

	// Down: half the nodes stop heartbeating.
	stopGone()
	stopped := time.Now()
	var allDown time.Time
	peakDown, whole, err := b.churnPhase(15*time.Minute, func() (bool, error) {
		if allDown.IsZero() {
			down, err := b.nodesDown()
			if err != nil || down < half {
				return false, err
			}
			allDown = time.Now()
		}
		live, err := b.liveOnReady(prefix)
		return live >= total, err
	})
	if err != nil {
		return err
	}
	afterDown, err := b.sampleChurn()
	if err != nil {
		return err
	}
	fmt.Printf("churn down: %d nodes marked down %v after their heartbeats stopped; every job whole again %v after the last one; %d evaluations created (%.2f per affected job); peak broker depth %d\n",
		half, allDown.Sub(stopped).Round(time.Second), whole.Sub(allDown).Round(100*time.Millisecond),
		afterDown.evals-before.evals, float64(afterDown.evals-before.evals)/float64(max(affected, 1)), peakDown)

	downTriggers, downIndex, err := b.evalTriggers(startIndex)
	if err != nil {
		return err
	}
	fmt.Printf("churn down: evaluations created by trigger: %v\n", downTriggers)

	// Back: the nodes heartbeat again and become ready.
	backCtx, stopBack := context.WithCancel(context.Background())
	defer stopBack()
	b.heartbeat(backCtx, sims[:half])
	back := time.Now()
	peakBack, ready, err := b.churnPhase(15*time.Minute, func() (bool, error) {
		down, err := b.nodesDown()
		return down == 0, err
	})
	if err != nil {
		return err
	}
	afterBack, err := b.sampleChurn()
	if err != nil {
		return err
	}
	fmt.Printf("churn back: %d nodes ready again %v after they resumed heartbeats; %d evaluations created; peak broker depth %d\n",
		half, ready.Sub(back).Round(time.Second), afterBack.evals-afterDown.evals, peakBack)
	if backTriggers, _, err := b.evalTriggers(downIndex); err == nil {
		fmt.Printf("churn back: evaluations created by trigger: %v\n", backTriggers)
	}
	return nil
}

// registerChurnJobs registers job bodies from clients concurrent clients.
func (b *bench) registerChurnJobs(bodies [][]byte, clients int) error {
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range max(clients, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) {
					return
				}
				resp, err := b.do(http.MethodPost, "/v1/jobs", bodies[i])
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					firstErr.CompareAndSwap(nil, fmt.Errorf("register: %s", resp.Status))
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return err
	}
	return nil
}
