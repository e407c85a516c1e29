package leader

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
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

// BenchmarkRuntimeSmallEvals measures the leader pipeline on many small
// evaluations, where an evaluation's cost is its wait on Raft: 2,000
// one-allocation jobs registered by 16 clients at once on 50 nodes,
// against a Raft double whose every command waits diskWrite first,
// concurrently with the others (a disk that writes in groups). It reports
// evaluations per second until the last one completes and the Raft
// entries written per evaluation besides its job's register, for a few
// worker counts. Run it with
//
//	go test ./scheduler/leader/ -run '^$' -bench RuntimeSmallEvals -benchtime 1x
func BenchmarkRuntimeSmallEvals(b *testing.B) {
	const nodes, jobs, clients = 50, 2000, 16
	const diskWrite = time.Millisecond
	for _, workers := range []int{2, 8, 16} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				r := rtNewMemRaft(b)
				for i := range nodes {
					r.registerNode(b, scheduler.MockNode(fmt.Sprintf("node-%d", i)))
				}
				r.before = func(store.MessageType) { time.Sleep(diskWrite) }
				var entries atomic.Int64
				r.after = func(typ store.MessageType, _ uint64) {
					if typ != store.JobRegisterRequestType {
						entries.Add(1)
					}
				}
				rt, err := NewRuntime(RuntimeConfig{Store: r.store, Raft: r, Logger: rtLog(), Workers: workers})
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
				ids := make([]string, jobs)
				var next atomic.Int64
				var wg sync.WaitGroup
				for range clients {
					wg.Go(func() {
						for i := int(next.Add(1)) - 1; i < jobs; i = int(next.Add(1)) - 1 {
							j := scheduler.MockJob(fmt.Sprintf("job-%d", i))
							j.TaskGroups[0].Count = 1
							j.TaskGroups[0].Networks = nil
							j.TaskGroups[0].Tasks[0].Resources.CPU = 10
							j.TaskGroups[0].Tasks[0].Resources.MemoryMB = 10
							ids[i] = fmt.Sprintf("eval-%d", i)
							now := time.Now().UnixNano()
							_, _, err := r.Apply(b.Context(), store.JobRegisterRequestType, &store.JobRegisterRequest{Job: j,
								Eval: &state.Evaluation{ID: ids[i], Namespace: j.Namespace, Priority: j.Priority, Type: j.Type,
									TriggeredBy: state.EvalTriggerJobRegister, JobID: j.ID, Status: state.EvalStatusPending,
									CreateTime: now, ModifyTime: now},
								Now: now})
							if err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				registered := time.Since(start)
				done := 0 // evaluations of ids[:done] are complete
				rtWaitState(b, r.store, time.Minute, "every evaluation complete", func() bool {
					for done < jobs {
						e, _ := r.store.EvalByID(nil, ids[done])
						if e == nil || e.Status != state.EvalStatusComplete {
							return false
						}
						done++
					}
					return true
				})
				elapsed := time.Since(start)
				b.StopTimer()
				b.ReportMetric(float64(jobs)/registered.Seconds(), "registers/s")
				b.ReportMetric(float64(jobs)/elapsed.Seconds(), "evals/s")
				b.ReportMetric(float64(entries.Load())/jobs, "entries/eval")
				for i := len(services) - 1; i >= 0; i-- {
					services[i].Stop()
				}
			}
		})
	}
}
