package scheduler_test

import (
	"fmt"
	"slices"
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// step registers job (when not nil), processes an annotated eval of the
// stored job and returns the plan's annotations for group "web".
func step(t *testing.T, h *schedtest.Harness, ns, id string, job *state.Job, trigger string) *state.DesiredUpdates {
	t.Helper()
	if job != nil {
		h.UpsertJob(job)
	}
	stored, err := h.Store.JobByID(nil, ns, id)
	if err != nil || stored == nil {
		t.Fatalf("read job: %v", err)
	}
	e := h.NewEval(stored, trigger)
	e = e.Copy()
	e.AnnotatePlan = true
	before := len(h.Plans)
	if err := h.Process(BuiltinSchedulers[stored.Type], e); err != nil {
		t.Fatalf("process: %v", err)
	}
	if len(h.Plans) == before {
		t.Fatal("no plan submitted")
	}
	ann := h.LastPlan().Annotations
	if ann == nil || ann.DesiredTGUpdates["web"] == nil {
		return &state.DesiredUpdates{}
	}
	return ann.DesiredTGUpdates["web"]
}

// clientStatus reports a client status for allocations.
func clientStatus(h *schedtest.Harness, status string, allocs ...*state.Allocation) {
	var ups []*state.Allocation
	for _, a := range allocs {
		c := a.CopySkipJob()
		c.ClientStatus = status
		ups = append(ups, c)
	}
	h.ClientUpdate(ups...)
}

func names(allocs []*state.Allocation) []string {
	var out []string
	for _, a := range allocs {
		out = append(out, a.Name)
	}
	slices.Sort(out)
	return out
}

// TestGenericScenarios runs a job to its count on three nodes, applies a
// change, and checks what the next eval does.
func TestGenericScenarios(t *testing.T) {
	type env struct {
		t   *testing.T
		h   *schedtest.Harness
		job *state.Job // as stored after the first eval
		// live are the allocations after the first eval.
		live []*state.Allocation
	}
	for _, c := range []struct {
		name   string
		batch  bool
		count  int
		change func(e *env) *state.Job
		want   state.DesiredUpdates
		check  func(e *env)
	}{
		{
			name: "nothing changed", count: 4,
			change: func(e *env) *state.Job { return nil },
			want:   state.DesiredUpdates{Ignore: 4},
		},
		{
			name: "count up", count: 4,
			change: func(e *env) *state.Job { j := e.job.Copy(); j.TaskGroups[0].Count = 6; return j },
			// A count change makes a new job version: the allocations
			// that stay take it in place.
			want: state.DesiredUpdates{Place: 2, InPlaceUpdate: 4},
			check: func(e *env) {
				got := names(e.h.LiveAllocs("default", "web"))
				want := []string{"web.web[0]", "web.web[1]", "web.web[2]", "web.web[3]", "web.web[4]", "web.web[5]"}
				if !slices.Equal(got, want) {
					e.t.Fatalf("names %v, want %v", got, want)
				}
			},
		},
		{
			name: "count down stops the highest indexes", count: 6,
			change: func(e *env) *state.Job { j := e.job.Copy(); j.TaskGroups[0].Count = 3; return j },
			want:   state.DesiredUpdates{Stop: 3, InPlaceUpdate: 3},
			check: func(e *env) {
				got := names(e.h.LiveAllocs("default", "web"))
				if want := []string{"web.web[0]", "web.web[1]", "web.web[2]"}; !slices.Equal(got, want) {
					e.t.Fatalf("names %v, want %v", got, want)
				}
			},
		},
		{
			name: "count to zero", count: 3,
			change: func(e *env) *state.Job { j := e.job.Copy(); j.TaskGroups[0].Count = 0; return j },
			want:   state.DesiredUpdates{Stop: 3},
		},
		{
			name: "in-place update", count: 4,
			change: func(e *env) *state.Job {
				j := e.job.Copy()
				j.TaskGroups[0].RestartPolicy.Attempts = 9
				j.TaskGroups[0].Services = []*state.Service{{Name: "web", PortLabel: "http"}}
				return j
			},
			want: state.DesiredUpdates{InPlaceUpdate: 4},
			check: func(e *env) {
				live := e.h.LiveAllocs("default", "web")
				for _, a := range live {
					if a.Job.Version != 1 || !slices.ContainsFunc(e.live, func(b *state.Allocation) bool { return b.ID == a.ID }) {
						e.t.Fatalf("alloc %s at version %d: want the same allocations at version 1", a.ID, a.Job.Version)
					}
				}
			},
		},
		{
			name: "destructive update", count: 4,
			change: func(e *env) *state.Job {
				j := e.job.Copy()
				j.TaskGroups[0].Tasks[0].Config = map[string]any{"run_for": "2h"}
				j.TaskGroups[0].Update.MaxParallel = 4 // the whole group in one batch
				return j
			},
			want: state.DesiredUpdates{DestructiveUpdate: 4},
			check: func(e *env) {
				live := e.h.LiveAllocs("default", "web")
				if len(live) != 4 {
					e.t.Fatalf("%d live, want 4", len(live))
				}
				for _, a := range live {
					prev, _ := e.h.Store.AllocByID(nil, a.PreviousAllocation)
					if a.Job.Version != 1 || prev == nil || prev.NextAllocation != a.ID || prev.DesiredStatus != "stop" || prev.Name != a.Name {
						e.t.Fatalf("replacement %s (%s) of %+v: want version 1, linked to its stopped predecessor of the same name", a.ID, a.Name, prev)
					}
				}
			},
		},
		{
			name: "stop job", count: 3,
			change: func(e *env) *state.Job { e.h.StopJob("default", "web", true); return nil },
			want:   state.DesiredUpdates{Stop: 3},
			check: func(e *env) {
				for _, a := range e.live {
					got, _ := e.h.Store.AllocByID(nil, a.ID)
					if got.DesiredStatus != "stop" || (got.DesiredTransition.NoShutdownDelay == nil || !*got.DesiredTransition.NoShutdownDelay) || got.DesiredDescription != DescJobStopped {
						e.t.Fatalf("alloc %+v: want stopped with NoShutdownDelay kept", got)
					}
				}
			},
		},
		{
			name: "group removed", count: 2,
			change: func(e *env) *state.Job {
				j := e.job.Copy()
				g := j.TaskGroups[0].Copy()
				g.Name = "api"
				j.TaskGroups = []*state.TaskGroup{g}
				return j
			},
			want: state.DesiredUpdates{Stop: 2},
			check: func(e *env) {
				if got := names(e.h.LiveAllocs("default", "web")); !slices.Equal(got, []string{"web.api[0]", "web.api[1]"}) {
					e.t.Fatalf("live %v, want the two api allocations", got)
				}
			},
		},
		{
			name: "lost node", count: 6,
			change: func(e *env) *state.Job {
				e.h.SetNodeStatus(e.live[0].NodeID, state.NodeStatusDown)
				return nil
			},
			check: func(e *env) {
				down := e.live[0].NodeID
				var lost int
				for _, a := range e.live {
					if a.NodeID != down {
						continue
					}
					lost++
					got, _ := e.h.Store.AllocByID(nil, a.ID)
					if got.ClientStatus != state.AllocClientStatusLost || got.DesiredStatus != "stop" || got.NextAllocation == "" {
						e.t.Fatalf("alloc on the down node: %+v, want lost, stopped and replaced", got)
					}
					next, _ := e.h.Store.AllocByID(nil, got.NextAllocation)
					if next.NodeID == down || next.Name != a.Name || next.PreviousAllocation != a.ID {
						e.t.Fatalf("replacement %+v: want another node, the same name, linked back", next)
					}
				}
				du := e.h.LastPlan().Annotations.DesiredTGUpdates["web"]
				if lost == 0 || du.Place != uint64(lost) || du.Stop != uint64(lost) || len(e.h.LiveAllocs("default", "web")) != 6 {
					e.t.Fatalf("%d lost, annotations %+v: want each stopped and replaced", lost, du)
				}
			},
		},
		{
			name: "service alloc that exits is replaced", count: 3,
			change: func(e *env) *state.Job {
				clientStatus(e.h, state.AllocClientStatusComplete, e.live[1])
				return nil
			},
			want: state.DesiredUpdates{Place: 1, Ignore: 2},
			check: func(e *env) {
				if got := names(e.h.LiveAllocs("default", "web")); !slices.Equal(got, []string{"web.web[0]", "web.web[1]", "web.web[2]"}) {
					e.t.Fatalf("live %v: the replacement must reuse the free name", got)
				}
			},
		},
		{
			name: "batch completion is never re-run", batch: true, count: 3,
			change: func(e *env) *state.Job {
				clientStatus(e.h, state.AllocClientStatusComplete, e.live...)
				return nil
			},
			want: state.DesiredUpdates{Ignore: 3},
		},
		{
			name: "batch job update leaves completed allocs alone", batch: true, count: 2,
			change: func(e *env) *state.Job {
				clientStatus(e.h, state.AllocClientStatusComplete, e.live[0])
				j := e.job.Copy()
				j.TaskGroups[0].Tasks[0].Env = map[string]string{"X": "1"}
				return j
			},
			want: state.DesiredUpdates{Ignore: 1, DestructiveUpdate: 1},
		},
		{
			name: "drain migrates max_parallel at a time", count: 6,
			change: func(e *env) *state.Job {
				// Put every allocation on one node, then drain it.
				node := e.live[0].NodeID
				n, _ := e.h.Store.NodeByID(nil, node)
				yes := true
				var moved []*state.Allocation
				for _, a := range e.live {
					c := a.CopySkipJob()
					c.NodeID = node
					c.DesiredTransition.Migrate = &yes
					moved = append(moved, c)
				}
				e.h.UpsertAllocs(moved...)
				dn := n.Copy()
				dn.Drain = true
				dn.SchedulingEligibility = state.NodeSchedulingIneligible
				e.h.Apply(store.NodeDeregisterRequestType, &store.NodeDeregisterRequest{NodeIDs: []string{node}})
				e.h.UpsertNodes(dn)
				j := e.job.Copy()
				j.TaskGroups[0].Migrate.MaxParallel = 2
				return j
			},
			want: state.DesiredUpdates{Migrate: 2, InPlaceUpdate: 4},
			check: func(e *env) {
				var migrated int
				for _, a := range e.h.LiveAllocs("default", "web") {
					if a.NodeID != e.live[0].NodeID {
						migrated++
					}
				}
				if migrated != 2 {
					e.t.Fatalf("%d allocations left the draining node, want 2", migrated)
				}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			for i := range 3 {
				h.UpsertNodes(MockNode(fmt.Sprintf("n%d", i)))
			}
			job := MockJob("web")
			if c.batch {
				job = MockBatchJob("web")
			}
			job.TaskGroups[0].Count = c.count
			first := step(t, h, "default", "web", job, state.EvalTriggerJobRegister)
			if first.Place != uint64(c.count) {
				t.Fatalf("first eval placed %d, want %d", first.Place, c.count)
			}
			stored, _ := h.Store.JobByID(nil, "default", "web")
			e := &env{t: t, h: h, job: stored, live: h.LiveAllocs("default", "web")}
			next := c.change(e)
			got := step(t, h, "default", "web", next, state.EvalTriggerJobRegister)
			if c.check == nil || c.want != (state.DesiredUpdates{}) {
				if *got != c.want {
					t.Errorf("annotations %+v, want %+v", *got, c.want)
				}
			}
			if c.check != nil {
				c.check(e)
			}
			if ev := h.LastEval(); ev.Status != state.EvalStatusComplete {
				t.Errorf("eval status %q, want complete", ev.Status)
			}
		})
	}
}
