package leader

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// rtDeployFixture is a job with a deployment of its current version and
// a running watcher, all inside a synctest bubble.
type rtDeployFixture struct {
	t     *testing.T
	r     *memRaft
	w     *DeploymentWatcher
	ids   schedtest.IDs
	stops []func()
	// writes counts the watcher's commands by type.
	writes map[store.MessageType]int
}

func rtNewDeployFixture(t *testing.T) *rtDeployFixture {
	f := &rtDeployFixture{t: t, r: rtNewMemRaft(t), writes: map[store.MessageType]int{}}
	f.r.after = func(typ store.MessageType, _ uint64) { f.writes[typ]++ }
	f.w = NewDeploymentWatcher(f.r.store, f.r, rtLog(), nil, f.ids.Next)
	return f
}

func (f *rtDeployFixture) start() {
	ctx, cancel := context.WithCancel(context.Background())
	if err := f.w.Start(ctx); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { f.w.Stop(); cancel() })
	synctest.Wait()
}

// rollout registers version 0 of job id (marked stable) and version 1
// with update u, writes version 1's deployment and n allocations of it,
// and returns the deployment's ID and the allocations' IDs.
func (f *rtDeployFixture) rollout(id string, n int, u state.UpdateStrategy) (string, []string) {
	t := f.t
	job := scheduler.MockJob(id)
	job.TaskGroups[0].Count = n
	f.r.registerJob(t, job)
	f.r.must(t, store.JobStabilityRequestType, &store.JobStabilityRequest{Namespace: "default", JobID: id, Version: 0, Stable: true})
	v1 := job.Copy()
	v1.TaskGroups[0].Tasks[0].Config = map[string]any{"run_for": "2h"}
	*v1.TaskGroups[0].Update = u
	f.r.registerJob(t, v1)
	stored, _ := f.r.store.JobByID(nil, "default", id)
	now := time.Now()
	d := &state.Deployment{
		ID: f.ids.Next(), Namespace: "default", JobID: id, JobVersion: stored.Version,
		JobModifyIndex: stored.JobModifyIndex, JobCreateIndex: stored.CreateIndex,
		Status: state.DeploymentStatusRunning,
		TaskGroups: map[string]*state.DeploymentState{"web": {
			AutoRevert: u.AutoRevert, AutoPromote: u.AutoPromote, DesiredTotal: n, DesiredCanaries: u.Canary,
			ProgressDeadline: int64(u.ProgressDeadline), RequireProgressBy: now.Add(u.ProgressDeadline),
		}},
	}
	var allocs []*state.Allocation
	var ids []string
	for i := range n {
		a := rtAlloc(f.ids.Next(), "node", 10, 10, 10)
		a.JobID, a.Job, a.Name, a.DeploymentID = id, stored, fmt.Sprintf("%s.web[%d]", id, i), d.ID
		if i < u.Canary {
			a.DeploymentStatus = &state.AllocDeploymentStatus{Canary: true}
		}
		allocs = append(allocs, a)
		ids = append(ids, a.ID)
	}
	f.r.must(t, store.AllocUpdateRequestType, &store.AllocUpdateRequest{Deployment: d, Allocs: allocs, Now: now.UnixNano()})
	return d.ID, ids
}

// health reports allocations healthy or not, as a client does.
func (f *rtDeployFixture) health(healthy bool, ids ...string) {
	var ups []*state.Allocation
	for _, id := range ids {
		h := healthy
		ups = append(ups, &state.Allocation{ID: id, ClientStatus: state.AllocClientStatusRunning,
			DeploymentStatus: &state.AllocDeploymentStatus{Healthy: &h, Timestamp: time.Now()}})
	}
	f.r.must(f.t, store.AllocClientUpdateRequestType, &store.AllocClientUpdateRequest{Allocs: ups, Now: time.Now().UnixNano()})
}

func (f *rtDeployFixture) deployment(id string) *state.Deployment {
	d, err := f.r.store.DeploymentByID(nil, id)
	if err != nil || d == nil {
		f.t.Fatalf("read deployment %s: %v", id, err)
	}
	return d
}

// watcherEvals counts the pending evaluations the watcher made for job.
func (f *rtDeployFixture) watcherEvals(job string) int {
	evals, _ := f.r.store.EvalsByJob(nil, "default", job)
	n := 0
	for _, e := range evals {
		if e.TriggeredBy == state.EvalTriggerDeploymentWatcher {
			n++
		}
	}
	return n
}

var rtUpdate = state.UpdateStrategy{MaxParallel: 1, HealthCheck: state.UpdateHealthCheckTaskStates,
	MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute, ProgressDeadline: 10 * time.Minute}

func TestDeploymentWatcherSuccessMarksStable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := rtNewDeployFixture(t)
		dep, allocs := f.rollout("web", 2, rtUpdate)
		f.start()
		if got := f.watcherEvals("web"); got != 0 {
			t.Fatalf("%d evals after start, want none (no progress yet: its placements are in)", got)
		}
		f.health(true, allocs[0])
		time.Sleep(deploymentPace)
		synctest.Wait()
		if got := f.watcherEvals("web"); got != 1 {
			t.Fatalf("%d evals after one allocation became healthy, want 1", got)
		}
		if d := f.deployment(dep); d.Status != state.DeploymentStatusRunning {
			t.Fatalf("status %s with 1/2 healthy, want running", d.Status)
		}
		f.health(true, allocs[1])
		time.Sleep(deploymentPace)
		synctest.Wait()
		d := f.deployment(dep)
		if d.Status != state.DeploymentStatusSuccessful || d.StatusDescription != DeploymentDescSuccessful {
			t.Fatalf("deployment %s (%s), want successful", d.Status, d.StatusDescription)
		}
		job, _ := f.r.store.JobByID(nil, "default", "web")
		if !job.Stable || job.Version != 1 {
			t.Fatalf("job version %d stable=%v, want version 1 stable", job.Version, job.Stable)
		}
	})
}

func TestDeploymentWatcherProgressDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := rtNewDeployFixture(t)
		dep, allocs := f.rollout("web", 2, rtUpdate)
		f.start()
		// Progress at 5m moves the deadline to 15m.
		time.Sleep(5 * time.Minute)
		f.health(true, allocs[0])
		time.Sleep(9 * time.Minute)
		synctest.Wait()
		if d := f.deployment(dep); d.Status != state.DeploymentStatusRunning {
			t.Fatalf("at 14m: %s (%s), want running (deadline moved by the healthy allocation)", d.Status, d.StatusDescription)
		}
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		d := f.deployment(dep)
		if d.Status != state.DeploymentStatusFailed || d.StatusDescription != DeploymentDescDeadline {
			t.Fatalf("at 15m: %s (%s), want failed on the progress deadline", d.Status, d.StatusDescription)
		}
	})
}

func TestDeploymentWatcherAutoRevert(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := rtNewDeployFixture(t)
		u := rtUpdate
		u.AutoRevert = true
		dep, allocs := f.rollout("web", 2, u)
		f.start()
		f.health(false, allocs[0])
		time.Sleep(deploymentPace)
		synctest.Wait()
		d := f.deployment(dep)
		if d.Status != state.DeploymentStatusFailed || !strings.Contains(d.StatusDescription, "rolling back to job version 0") {
			t.Fatalf("deployment %s (%s), want failed, rolling back to version 0", d.Status, d.StatusDescription)
		}
		job, _ := f.r.store.JobByID(nil, "default", "web")
		v0, _ := f.r.store.JobByIDAndVersion(nil, "default", "web", 0)
		if job.Version != 2 || job.SpecChanged(v0) {
			t.Fatalf("job at version %d: want version 2 with version 0's spec", job.Version)
		}
	})
}

func TestDeploymentWatcherAutoPromote(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := rtNewDeployFixture(t)
		u := rtUpdate
		u.Canary, u.AutoPromote = 1, true
		dep, allocs := f.rollout("web", 2, u)
		f.start()
		if d := f.deployment(dep); d.TaskGroups["web"].Promoted {
			t.Fatal("promoted before the canary was healthy")
		}
		f.health(true, allocs[0]) // the canary
		time.Sleep(deploymentPace)
		synctest.Wait()
		if d := f.deployment(dep); !d.TaskGroups["web"].Promoted || d.Status != state.DeploymentStatusRunning {
			t.Fatalf("deployment %s %+v: want running and promoted", d.Status, d.TaskGroups["web"])
		}
	})
}

// TestDeploymentWatcherBatches checks that health reports of many
// deployments are answered by one command per pass.
func TestDeploymentWatcherBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := rtNewDeployFixture(t)
		var all []string
		for i := range 10 {
			_, allocs := f.rollout(fmt.Sprintf("job%d", i), 3, rtUpdate)
			all = append(all, allocs[0])
		}
		f.start()
		before := f.writes[store.DeploymentStatusUpdateRequestType]
		f.health(true, all...)
		time.Sleep(deploymentPace)
		synctest.Wait()
		if got := f.writes[store.DeploymentStatusUpdateRequestType] - before; got != 1 {
			t.Fatalf("%d watcher commands for 10 deployments progressing together, want 1", got)
		}
		for i := range 10 {
			if got := f.watcherEvals(fmt.Sprintf("job%d", i)); got != 1 {
				t.Fatalf("job%d: %d watcher evals, want 1 (for its progress)", i, got)
			}
		}
	})
}

// TestDeploymentWatcherRebuiltAfterFailover stops the watcher (leadership
// lost) while a rollout progresses and starts a new one (the next
// leader): it evaluates the job once, finishes the rollout and still
// enforces the progress deadline of another, from state alone.
func TestDeploymentWatcherRebuiltAfterFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := rtNewDeployFixture(t)
		dep, allocs := f.rollout("web", 2, rtUpdate)
		slow, _ := f.rollout("api", 1, rtUpdate)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if err := f.w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		f.w.Stop()
		// Meanwhile, without a leader, the allocations became healthy.
		f.health(true, allocs...)
		next := NewDeploymentWatcher(f.r.store, f.r, rtLog(), nil, f.ids.Next)
		if err := next.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer next.Stop()
		synctest.Wait()
		if d := f.deployment(dep); d.Status != state.DeploymentStatusSuccessful {
			t.Fatalf("after failover: %s, want successful", d.Status)
		}
		if got := f.watcherEvals("api"); got != 0 {
			t.Fatalf("%d evals of the job without progress, want none (its placements are in)", got)
		}
		time.Sleep(rtUpdate.ProgressDeadline)
		synctest.Wait()
		if d := f.deployment(slow); d.Status != state.DeploymentStatusFailed {
			t.Fatalf("past its deadline after failover: %s, want failed", d.Status)
		}
	})
}

// The watcher recounts a deployment only when its job's allocations
// changed: a write elsewhere reuses the counts, a health report on the
// job is counted at once.
func TestDeploymentWatcherRecountsOnlyChangedJobs(t *testing.T) {
	f := rtNewDeployFixture(t)
	f.w.counted = map[string]*countedDeployment{}
	depA, idsA := f.rollout("a", 2, rtUpdate)
	depB, _ := f.rollout("b", 2, rtUpdate)
	count := func(id string) (map[string]groupCounts, *countedDeployment) {
		t.Helper()
		c, err := f.w.count(f.deployment(id))
		if err != nil {
			t.Fatal(err)
		}
		return c, f.w.counted[id]
	}
	_, firstA := count(depA)
	_, firstB := count(depB)
	if _, again := count(depA); again != firstA {
		t.Fatal("an unchanged deployment was counted again")
	}
	f.health(true, idsA[0])
	counts, afterA := count(depA)
	if afterA == firstA || counts["web"].healthy != 1 {
		t.Fatalf("after a health report on a: recounted %v, counts %+v", afterA != firstA, counts)
	}
	if _, afterB := count(depB); afterB != firstB {
		t.Error("a report on job a made the watcher recount job b")
	}
}

// TestDeploymentWatcherCountsJudgedAllocations: a deployment none of whose
// allocations was judged yet counts nothing (without reading them); once
// some are judged, the count is of the allocations, healthy and not.
func TestDeploymentWatcherCountsJudgedAllocations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := rtNewDeployFixture(t)
		dep, allocs := f.rollout("web", 3, rtUpdate)
		if c, err := f.w.count(f.deployment(dep)); err != nil || len(c) != 0 {
			t.Fatalf("counts %v (%v) before any judgement, want none", c, err)
		}
		f.health(true, allocs[0], allocs[1])
		f.health(false, allocs[2])
		c, err := f.w.count(f.deployment(dep))
		if err != nil || c["web"].healthy != 2 || c["web"].unhealthy != 1 {
			t.Fatalf("counts %v (%v), want 2 healthy and 1 unhealthy", c, err)
		}
	})
}

// A deployment failing while its job has an evaluation held by the broker
// (a node churn's) gets no evaluation of its own: the held one reads the
// failure when it is delivered. Without one, the failure's evaluation is
// written.
func TestDeploymentWatcherFailureJoinsHeldEval(t *testing.T) {
	for _, held := range []bool{true, false} {
		t.Run(fmt.Sprintf("held=%v", held), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := rtNewDeployFixture(t)
				dep, allocs := f.rollout("web", 2, rtUpdate)
				if held {
					e := rtEval("held", "web", 50)
					e.TriggeredBy, e.WaitUntil = state.EvalTriggerNodeUpdate, time.Now().Add(time.Minute)
					f.r.putEvals(t, e)
				}
				f.start()
				f.health(false, allocs[0])
				time.Sleep(deploymentPace)
				synctest.Wait()
				if d := f.deployment(dep); d.Status != state.DeploymentStatusFailed {
					t.Fatalf("deployment %s, want failed", d.Status)
				}
				want := 1
				if held {
					want = 0
				}
				if got := f.watcherEvals("web"); got != want {
					t.Fatalf("%d evaluations of the failure, want %d", got, want)
				}
			})
		})
	}
}
