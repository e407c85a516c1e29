package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// dispatch registers simulated client nodes and one parameterized mock
// job, dispatches it n times from clients concurrent writers, and reports
// dispatches per second, the time until the last child runs (with nodes;
// with none the children's evaluations block, which measures dispatch
// alone), and the agent's memory after them (with -spawn).
func (b *bench) dispatch(nodes, n, clients, pid int) error {
	ns, _, err := b.registerNodes(nodes, clients)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.heartbeat(ctx, ns)
	for _, node := range ns {
		go b.simulateClient(ctx, node, newRunTally())
	}

	parent := "disp-" + b.run
	body, _ := json.Marshal(map[string]any{"Job": map[string]any{
		"ID": parent, "Type": "batch", "Datacenters": []string{"dc1"},
		"ParameterizedJob": map[string]any{"Payload": "optional"},
		"TaskGroups": []any{map[string]any{"Name": "g", "Count": 1, "Tasks": []any{map[string]any{
			"Name": "t", "Driver": "mock", "Config": map[string]any{"run_for": "1h"},
			"Resources": map[string]any{"CPU": 20, "MemoryMB": 16},
		}}}},
	}})
	resp, err := b.do(http.MethodPost, "/v1/jobs", body)
	if err != nil {
		return err
	}
	resp.Body.Close()

	payload, _ := json.Marshal(map[string]any{"Payload": []byte("bench payload")})
	start := time.Now()
	var wg sync.WaitGroup
	var next, failed atomic.Int64
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for int(next.Add(1)) <= n {
				resp, err := b.do(http.MethodPost, "/v1/job/"+parent+"/dispatch", payload)
				if err != nil {
					fmt.Fprintln(os.Stderr, "dispatch:", err)
					failed.Add(1)
					continue
				}
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	dispatched := time.Since(start)
	fmt.Printf("dispatch: %d dispatches of one parameterized mock job from %d clients (%d failed): %.0f dispatches/s (%v)\n",
		n, clients, failed.Load(), float64(n)/dispatched.Seconds(), dispatched.Round(time.Millisecond))
	if nodes > 0 {
		last, err := b.waitCounts(parent+"/", 10*time.Minute, 20*time.Millisecond, func(_, running int) bool { return running >= n })
		if err != nil {
			return err
		}
		fmt.Printf("dispatch: last child running after %v, on %d simulated nodes\n", last.Sub(start).Round(time.Millisecond), nodes)
	}
	if pid != 0 {
		rss, err := rssOf(pid)
		if err != nil {
			return err
		}
		fmt.Printf("dispatch: agent RSS after them %.1f MiB\n", float64(rss)/(1<<20))
	}
	return nil
}
