package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// rollout measures a deployment: on nodes simulated clients that report
// every new allocation running and healthy at once (and stopped ones
// complete), a service job of count allocations is placed (its first
// deployment), then updated destructively with update.max_parallel =
// maxParallel. It reports the time from each register to the deployment
// being successful, and the raft entries the update wrote per allocation
// replaced (from the indexes of a write just before and just after).
func (b *bench) rollout(nodes, count, maxParallel, clients int) error {
	ns, _, err := b.registerNodes(nodes, clients)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.heartbeat(ctx, ns)
	for _, n := range ns {
		go b.simulateHealthyClient(ctx, n)
	}
	id := "rollout-" + b.run
	first := time.Now()
	if _, err := b.registerRollout(id, count, maxParallel, "1h"); err != nil {
		return err
	}
	if err := b.waitDeployment(id, 0, 10*time.Minute); err != nil {
		return err
	}
	placed := time.Since(first)

	start := time.Now()
	before, err := b.registerRollout(id, count, maxParallel, "2h")
	if err != nil {
		return err
	}
	if err := b.waitDeployment(id, 1, 10*time.Minute); err != nil {
		return err
	}
	took := time.Since(start)
	after, err := b.markerWrite()
	if err != nil {
		return err
	}
	entries := after - before - 1
	fmt.Printf("rollout: count=%d max_parallel=%d on %d simulated nodes: first placement to deployment successful %v; update to deployment successful %v; %d raft entries, %.2f per allocation replaced\n",
		count, maxParallel, nodes, placed.Round(time.Millisecond), took.Round(time.Millisecond), entries, float64(entries)/float64(count))
	return nil
}

// registerRollout registers the rollout job with the task's run_for as
// its version marker and returns the register's raft index.
func (b *bench) registerRollout(id string, count, maxParallel int, runFor string) (uint64, error) {
	body, _ := json.Marshal(map[string]any{"Job": map[string]any{
		"ID": id, "Type": "service", "Datacenters": []string{"dc1"},
		// Only on the simulated nodes: the dev agent's own client would
		// report health after its min_healthy_time.
		"Constraints": []any{map[string]any{"LTarget": "${node.unique.name}", "RTarget": "^sim-", "Operand": "regexp"}},
		"TaskGroups": []any{map[string]any{
			"Name": "g", "Count": count,
			"Update": map[string]any{"MaxParallel": maxParallel, "HealthCheck": "task_states",
				"MinHealthyTime": 0, "HealthyDeadline": int64(time.Minute), "ProgressDeadline": int64(10 * time.Minute)},
			"Tasks": []any{map[string]any{
				"Name": "t", "Driver": "mock", "Config": map[string]any{"run_for": runFor},
				"Resources": map[string]any{"CPU": 20, "MemoryMB": 16},
			}},
		}},
	}})
	resp, err := b.do(http.MethodPost, "/v1/jobs", body)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return strconv.ParseUint(resp.Header.Get("X-Sched-Index"), 10, 64)
}

// markerWrite makes one small write and returns its raft index.
func (b *bench) markerWrite() (uint64, error) {
	resp, err := b.do(http.MethodPut, "/v1/namespace/bench-marker-"+b.run, []byte(`{"Description":"marker"}`))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return strconv.ParseUint(resp.Header.Get("X-Sched-Index"), 10, 64)
}

// waitDeployment blocks until the job's latest deployment is of version
// and successful (an error when it ends otherwise).
func (b *bench) waitDeployment(id string, version uint64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	index := "0"
	for time.Now().Before(deadline) {
		resp, err := b.do(http.MethodGet, "/v1/job/"+id+"/deployment?wait=5s&index="+index, nil)
		if err != nil {
			return err
		}
		var d *struct {
			JobVersion        uint64
			Status            string
			StatusDescription string
		}
		json.NewDecoder(resp.Body).Decode(&d)
		resp.Body.Close()
		index = resp.Header.Get("X-Sched-Index")
		if d == nil || d.JobVersion != version {
			continue
		}
		switch d.Status {
		case "successful":
			return nil
		case "failed", "cancelled":
			return fmt.Errorf("deployment of version %d %s: %s", version, d.Status, d.StatusDescription)
		}
	}
	return fmt.Errorf("deployment of version %d not successful after %v", version, limit)
}

// simulateHealthyClient is simulateClient that also reports each new
// allocation of a deployment healthy, and each stopped one complete.
func (b *bench) simulateHealthyClient(ctx context.Context, n *simNode) {
	index := "0"
	reported := map[string]string{}
	for ctx.Err() == nil {
		resp, err := b.do(http.MethodGet, "/v1/node/"+n.ID+"/allocations/changes?server_changes=true&stale=true&wait=30s&index="+index+"&since="+index, nil)
		if err != nil {
			return
		}
		var changes struct {
			Changed []struct{ ID, DesiredStatus, ClientStatus, DeploymentID string }
		}
		json.NewDecoder(resp.Body).Decode(&changes)
		resp.Body.Close()
		index = resp.Header.Get("X-Sched-Index")
		var updates []map[string]any
		for _, a := range changes.Changed {
			switch {
			case a.DesiredStatus == "run" && a.ClientStatus == "pending" && reported[a.ID] == "":
				reported[a.ID] = "running"
				u := map[string]any{"ID": a.ID, "ClientStatus": "running"}
				if a.DeploymentID != "" {
					u["DeploymentStatus"] = map[string]any{"Healthy": true, "Timestamp": time.Now()}
				}
				updates = append(updates, u)
			case a.DesiredStatus != "run" && a.ClientStatus == "running" && reported[a.ID] != "complete":
				reported[a.ID] = "complete"
				updates = append(updates, map[string]any{"ID": a.ID, "ClientStatus": "complete"})
			}
		}
		if len(updates) == 0 {
			continue
		}
		body, _ := json.Marshal(map[string]any{"Allocs": updates})
		if r, err := b.do(http.MethodPost, "/v1/node/"+n.ID+"/allocations", body); err == nil {
			r.Body.Close()
		}
	}
}
