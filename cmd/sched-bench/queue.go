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

// The queue scenario (issue: a real job queue): queue-order latency on a
// full cluster. Every simulated node (16,000 MHz) holds queueFill
// priority-50 batch allocations of preemptCPU MHz, so nothing more fits;
// blocked one-allocation priority-50 jobs wait; then, round after round,
// a one-allocation priority-90 job is registered and blocks, and one
// filler allocation is reported complete. Each round times the report
// until the priority-90 job's allocation is placed (the scheduler's part
// of "room frees → the highest-priority job running": a client starts it
// on its next blocking query). Batch fillers are not replaced when they
// complete, so the freed room goes to the queue. The scenario checks that
// no priority-50 job took the room.
const (
	queueFill     = 10
	queueLowPrio  = 50
	queueHighPrio = 90
)

// queueJob is a batch job of count allocations of preemptCPU MHz at prio,
// on the simulated nodes only.
func queueJob(id string, prio, count int) []byte {
	body, _ := json.Marshal(map[string]any{"Job": map[string]any{
		"ID": id, "Type": "batch", "Priority": prio, "Datacenters": []string{"dc1"},
		"Constraints": []any{map[string]any{"LTarget": "${node.class}", "RTarget": "^class-", "Operand": "regexp"}},
		"TaskGroups": []any{map[string]any{"Name": "g", "Count": count,
			"ReschedulePolicy": map[string]any{"Attempts": 0, "Unlimited": false},
			"Tasks": []any{map[string]any{
				"Name": "t", "Driver": "mock", "Config": map[string]any{"run_for": "1h"},
				"Resources": map[string]any{"CPU": preemptCPU, "MemoryMB": 16},
			}}}},
	}})
	return body
}

// postJob registers a job body and returns its evaluation's ID.
func (b *bench) postJob(body []byte) (string, error) {
	resp, err := b.do(http.MethodPost, "/v1/jobs", body)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("register: %s", resp.Status)
	}
	var reg struct{ EvalID string }
	err = json.NewDecoder(resp.Body).Decode(&reg)
	return reg.EvalID, err
}

// evalOutcome is what the waits on an evaluation read of it.
type evalOutcome struct {
	Status         string
	BlockedEval    string
	FailedTGAllocs map[string]any
}

// waitEvalComplete blocks on an evaluation until it is complete, within
// limit, and returns it; an evaluation that failed or was cancelled is an
// error.
func (b *bench) waitEvalComplete(id string, limit time.Duration) (evalOutcome, error) {
	deadline := time.Now().Add(limit)
	index := "0"
	for time.Now().Before(deadline) {
		resp, err := b.do(http.MethodGet, "/v1/evaluation/"+id+"?wait=5s&index="+index, nil)
		if err != nil {
			return evalOutcome{}, err
		}
		var e evalOutcome
		err = json.NewDecoder(resp.Body).Decode(&e)
		index = resp.Header.Get("X-Sched-Index")
		resp.Body.Close()
		if err != nil {
			return evalOutcome{}, err
		}
		switch e.Status {
		case "complete":
			return e, nil
		case "failed", "canceled":
			return e, fmt.Errorf("evaluation %s %s", id, e.Status)
		}
	}
	return evalOutcome{}, fmt.Errorf("evaluation %s not complete after %v", id, limit)
}

// evalBlocked blocks on an evaluation until it is complete with a blocked
// evaluation left, within limit.
func (b *bench) evalBlocked(id string, limit time.Duration) error {
	e, err := b.waitEvalComplete(id, limit)
	if err != nil {
		return err
	}
	if e.BlockedEval == "" {
		return fmt.Errorf("evaluation %s placed everything: the cluster is not full", id)
	}
	return nil
}

// brokerIdle waits until the broker holds nothing ready, delivered or
// waiting, within limit.
func (b *bench) brokerIdle(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		st, err := b.sampleChurn()
		if err != nil {
			return err
		}
		if st.depth == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("broker not idle after %v", limit)
}

// jobAllocs lists a job's allocations' IDs, nodes and statuses, blocking
// past index when it is not "".
func (b *bench) jobAllocs(job, index string) (allocs []struct{ ID, NodeID, ClientStatus, DesiredStatus string }, next string, err error) {
	path := "/v1/job/" + job + "/allocations"
	if index != "" {
		path += "?wait=5s&index=" + index
	}
	resp, err := b.do(http.MethodGet, path, nil)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&allocs)
	return allocs, resp.Header.Get("X-Sched-Index"), err
}

func (b *bench) queueScenario(nodes, blocked, rounds, clients int) error {
	ns, dur, err := b.registerNodes(nodes, clients)
	if err != nil {
		return err
	}
	fmt.Printf("queue: %d nodes registered in %v\n", nodes, dur.Round(time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.heartbeat(ctx, ns)

	total := nodes * queueFill
	fill := "queue-fill-" + b.run + "-"
	start := time.Now()
	var fillers []string
	for i := 0; i*preemptPerJob < total; i++ {
		id := fill + strconv.Itoa(i)
		if _, err := b.postJob(queueJob(id, queueLowPrio, min(preemptPerJob, total-i*preemptPerJob))); err != nil {
			return err
		}
		fillers = append(fillers, id)
	}
	if _, err := b.waitCounts(fill, 30*time.Minute, time.Second, func(placed, _ int) bool { return placed >= total }); err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	fmt.Printf("queue: %d priority-%d allocations fill the nodes after %v\n", total, queueLowPrio, time.Since(start).Round(time.Millisecond))

	low := "queue-low-" + b.run + "-"
	var last string
	for i := range blocked {
		if last, err = b.postJob(queueJob(low+strconv.Itoa(i), queueLowPrio, 1)); err != nil {
			return err
		}
	}
	if blocked > 0 {
		if err := b.evalBlocked(last, 10*time.Minute); err != nil {
			return err
		}
	}
	if err := b.brokerIdle(10 * time.Minute); err != nil {
		return err
	}
	fmt.Printf("queue: %d priority-%d jobs blocked\n", blocked, queueLowPrio)

	// The fillers' allocations, to complete one per round.
	var victims []struct{ ID, NodeID string }
	for _, f := range fillers {
		allocs, _, err := b.jobAllocs(f, "")
		if err != nil {
			return err
		}
		for _, a := range allocs {
			victims = append(victims, struct{ ID, NodeID string }{a.ID, a.NodeID})
		}
		if len(victims) >= rounds {
			break
		}
	}
	if len(victims) < rounds {
		return fmt.Errorf("%d filler allocations for %d rounds", len(victims), rounds)
	}
	var lat []time.Duration
	for i := range rounds {
		id := "queue-high-" + b.run + "-" + strconv.Itoa(i)
		evalID, err := b.postJob(queueJob(id, queueHighPrio, 1))
		if err != nil {
			return err
		}
		if err := b.evalBlocked(evalID, time.Minute); err != nil {
			return err
		}
		if err := b.brokerIdle(time.Minute); err != nil {
			return err
		}
		_, index, err := b.jobAllocs(id, "")
		if err != nil {
			return err
		}
		v := victims[i]
		body, _ := json.Marshal(map[string]any{"Allocs": []map[string]string{{"ID": v.ID, "ClientStatus": "complete"}}})
		t0 := time.Now()
		resp, err := b.do(http.MethodPost, "/v1/node/"+v.NodeID+"/allocations", body)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("complete %s: %s", v.ID, resp.Status)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			allocs, next, err := b.jobAllocs(id, index)
			if err != nil {
				return err
			}
			if len(allocs) > 0 {
				lat = append(lat, time.Since(t0))
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("round %d: %s not placed a minute after room freed", i, id)
			}
			index = next
		}
	}
	if err := b.brokerIdle(time.Minute); err != nil {
		return err
	}
	placed, _, _, err := b.jobCounts(low, "")
	if err != nil {
		return err
	}
	if placed != 0 {
		return fmt.Errorf("%d priority-%d jobs took freed room before the priority-%d ones", placed, queueLowPrio, queueHighPrio)
	}
	slices.Sort(lat)
	fmt.Printf("queue: %d rounds on %d full nodes with %d blocked priority-%d jobs; room freed to the priority-%d job placed: p50 %v, p99 %v, max %v; none of the blocked jobs placed\n",
		rounds, nodes, blocked, queueLowPrio, queueHighPrio, pct(lat, 50).Round(time.Microsecond), pct(lat, 99).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	return nil
}
