package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

func TestReconcileTasksUpdated(t *testing.T) {
	task := func(j *state.Job) *state.Task { return j.TaskGroups[0].Tasks[0] }
	group := func(j *state.Job) *state.TaskGroup { return j.TaskGroups[0] }
	d := func(v time.Duration) *time.Duration { return &v }
	for _, c := range []struct {
		name        string
		change      func(j *state.Job)
		destructive bool
	}{
		{"nothing", func(j *state.Job) {}, false},
		{"count", func(j *state.Job) { group(j).Count = 99 }, false},
		{"update policy", func(j *state.Job) { group(j).Update.MaxParallel = 5 }, false},
		{"restart policy", func(j *state.Job) { group(j).RestartPolicy.Attempts = 9 }, false},
		{"reschedule policy", func(j *state.Job) { group(j).ReschedulePolicy.Delay = time.Hour }, false},
		{"migrate policy", func(j *state.Job) { group(j).Migrate.MaxParallel = 3 }, false},
		{"services", func(j *state.Job) { group(j).Services = []*state.Service{{Name: "x"}} }, false},
		{"priority", func(j *state.Job) { j.Priority = 90 }, false},
		{"driver", func(j *state.Job) { task(j).Driver = "raw_exec" }, true},
		{"config", func(j *state.Job) { task(j).Config = map[string]any{"run_for": "5s"} }, true},
		{"env", func(j *state.Job) { task(j).Env = map[string]string{"A": "1"} }, true},
		{"cpu", func(j *state.Job) { task(j).Resources.CPU = 1 }, true},
		{"memory", func(j *state.Job) { task(j).Resources.MemoryMB = 1 }, true},
		{"artifacts", func(j *state.Job) { task(j).Artifacts = []*state.TaskArtifact{{GetterSource: "x"}} }, true},
		{"templates", func(j *state.Job) { task(j).Templates = []*state.Template{{EmbeddedTmpl: "x"}} }, true},
		{"task constraint", func(j *state.Job) {
			task(j).Constraints = []*state.Constraint{{LTarget: "a", RTarget: "b", Operand: "="}}
		}, true},
		{"group constraint", func(j *state.Job) {
			group(j).Constraints = []*state.Constraint{{LTarget: "a", RTarget: "b", Operand: "="}}
		}, true},
		{"job constraint", func(j *state.Job) { j.Constraints = []*state.Constraint{{LTarget: "a", RTarget: "b", Operand: "="}} }, true},
		{"job affinity", func(j *state.Job) {
			j.Affinities = []*state.Affinity{{LTarget: "a", RTarget: "b", Operand: "=", Weight: 1}}
		}, true},
		{"group spread", func(j *state.Job) { group(j).Spreads = []*state.Spread{{Attribute: "a"}} }, true},
		{"ports", func(j *state.Job) { group(j).Networks[0].DynamicPorts[0].Label = "other" }, true},
		{"volumes", func(j *state.Job) { group(j).Volumes = map[string]*state.VolumeRequest{"v": {Name: "v"}} }, true},
		{"lifecycle", func(j *state.Job) { task(j).Lifecycle = &state.TaskLifecycleConfig{Hook: "prestart"} }, true},
		{"user", func(j *state.Job) { task(j).User = "nobody" }, true},
		{"task meta", func(j *state.Job) { task(j).Meta = map[string]string{"a": "b"} }, true},
		{"job meta", func(j *state.Job) { j.Meta = map[string]string{"a": "b"} }, true},
		{"kill timeout", func(j *state.Job) { task(j).KillTimeout = time.Minute }, true},
		{"kill signal", func(j *state.Job) { task(j).KillSignal = "SIGTERM" }, true},
		{"shutdown delay", func(j *state.Job) { group(j).ShutdownDelay = d(time.Second) }, true},
		{"ephemeral disk", func(j *state.Job) { group(j).EphemeralDisk.SizeMB = 1000 }, true},
		{"task added", func(j *state.Job) { group(j).Tasks = append(group(j).Tasks, &state.Task{Name: "side"}) }, true},
		{"task renamed", func(j *state.Job) { task(j).Name = "other" }, true},
		{"group renamed", func(j *state.Job) { group(j).Name = "other" }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			old := MockJob("web")
			next := old.Copy()
			c.change(next)
			if got := tasksUpdated(old, next, "web"); got != c.destructive {
				t.Fatalf("tasksUpdated = %v, want %v", got, c.destructive)
			}
		})
	}
	// nil and empty collections are the same spec.
	a, b := MockJob("web"), MockJob("web")
	a.TaskGroups[0].Tasks[0].Env, b.TaskGroups[0].Tasks[0].Env = nil, map[string]string{}
	a.Constraints, b.Constraints = nil, []*state.Constraint{}
	if tasksUpdated(a, b, "web") {
		t.Fatal("nil and empty must compare equal")
	}
}

func TestReconcileNames(t *testing.T) {
	for _, c := range []struct {
		name  string
		index int
	}{{"web.web[0]", 0}, {"a.b.c[12]", 12}, {"x[y]", -1}, {"x", -1}, {"x[-1]", -1}, {"job.grp[3]x", -1}} {
		if got := allocIndex(c.name); got != c.index {
			t.Errorf("allocIndex(%q) = %d, want %d", c.name, got, c.index)
		}
	}
	ni := newNameIndex("j", "g", []string{"j.g[0]", "j.g[2]", "j.g[5]"})
	var got []string
	for range 4 {
		got = append(got, ni.next())
	}
	want := []string{"j.g[1]", "j.g[3]", "j.g[4]", "j.g[6]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("next names %v, want %v", got, want)
	}
}

// TestReconcileDeterministic runs the reconciler twice over the same
// input in different orders and expects the same decisions.
func TestReconcileDeterministic(t *testing.T) {
	job := MockJob("web")
	job.TaskGroups[0].Count = 5
	job.JobModifyIndex = 10
	node := MockNode("n")
	var allocs []*state.Allocation
	for i := range 8 {
		allocs = append(allocs, &state.Allocation{
			ID: fmt.Sprintf("a%d", i), Name: allocName("web", "web", i), NodeID: node.ID, TaskGroup: "web",
			Job: job, JobID: "web", Namespace: "default", DesiredStatus: "run", ClientStatus: "running",
		})
	}
	run := func(list []*state.Allocation) string {
		r := &reconciler{job: job, eval: &state.Evaluation{ID: "e"}, now: testEpoch, newID: state.NewID,
			allocs: list, nodes: map[string]*state.Node{node.ID: node}}
		res := r.reconcile()
		var out []string
		for _, s := range res.stops {
			out = append(out, "stop "+s.alloc.Name)
		}
		return fmt.Sprint(out, *res.desired["web"])
	}
	forward := run(allocs)
	reversed := make([]*state.Allocation, len(allocs))
	for i, a := range allocs {
		reversed[len(allocs)-1-i] = a
	}
	if back := run(reversed); back != forward {
		t.Fatalf("order changed the result: %s vs %s", forward, back)
	}
	if want := "[stop web.web[7] stop web.web[6] stop web.web[5]] {5 0 0 3 0 0 0 0}"; forward != want {
		t.Fatalf("result %s, want %s", forward, want)
	}
}
