package leader

import (
	"fmt"
	"testing"
	"time"

	"github.com/schedhq/sched/scheduler"
)

// BenchmarkRuntimePlacements measures the leader pipeline alone (feed,
// broker, workers, plan applier, real schedulers) against a Raft double
// that applies without disk: 5,000 nodes, then 100 jobs of 1,000
// allocations each registered at once. It reports committed placements
// per second and the time until the last one. Run it with
//
//	go test ./scheduler/ -run '^$' -bench RuntimePlacements -benchtime 1x
func BenchmarkRuntimePlacements(b *testing.B) {
	const nodes, jobs, count = 5000, 100, 1000
	for range b.N {
		b.StopTimer()
		r := rtNewMemRaft(b)
		for i := range nodes {
			r.registerNode(b, scheduler.MockNode(fmt.Sprintf("node-%d", i)))
		}
		rt, err := NewRuntime(RuntimeConfig{Store: r.store, Raft: r, Logger: rtLog()})
		if err != nil {
			b.Fatal(err)
		}
		services := rt.Services()
		for _, s := range services {
			if err := s.Start(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := time.Now()
		for i := range jobs {
			j := scheduler.MockJob(fmt.Sprintf("job-%d", i))
			j.TaskGroups[0].Count = count
			j.TaskGroups[0].Tasks[0].Resources.CPU = 100
			j.TaskGroups[0].Tasks[0].Resources.MemoryMB = 64
			r.registerJob(b, j)
		}
		placed := func() int {
			allocs, _ := r.store.Allocs(nil, "*", "")
			return len(allocs)
		}
		rtWaitState(b, r.store, 10*time.Minute, "every allocation placed", func() bool {
			return rt.Applier.Stats().Placements >= jobs*count
		})
		elapsed := time.Since(start)
		b.StopTimer()
		if got := placed(); got != jobs*count {
			b.Fatalf("placed %d allocations, want %d", got, jobs*count)
		}
		b.ReportMetric(float64(jobs*count)/elapsed.Seconds(), "placements/s")
		b.ReportMetric(elapsed.Seconds(), "s-to-last")
		st := rt.Applier.Stats()
		b.ReportMetric(float64(st.Plans), "plans")
		for i := len(services) - 1; i >= 0; i-- {
			services[i].Stop()
		}
	}
}
