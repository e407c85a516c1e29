package store

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

func TestJobRegisterNewJob(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("web")
	sub := &state.JobSubmission{Format: state.SubmissionFormatHCL2, Source: `job "web" {}`}
	resp := stApply(t, s, 10, JobRegisterRequestType, &JobRegisterRequest{
		Job: job, Eval: stEval("e1", job), Submission: sub, Now: 777,
	}).(*JobRegisterResponse)

	want := JobRegisterResponse{JobModifyIndex: 10, EvalID: "e1", EvalCreateIndex: 10, Version: 0, Index: 10}
	if *resp != want {
		t.Errorf("response = %+v, want %+v", *resp, want)
	}
	got := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))
	if got == nil {
		t.Fatal("job not stored")
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Version", got.Version, uint64(0)},
		{"CreateIndex", got.CreateIndex, uint64(10)},
		{"ModifyIndex", got.ModifyIndex, uint64(10)},
		{"JobModifyIndex", got.JobModifyIndex, uint64(10)},
		{"SubmitTime", got.SubmitTime, int64(777)},
		{"Status", got.Status, state.JobStatusPending},
		{"Stable", got.Stable, false},
		{"config survives", got.TaskGroups[0].Tasks[0].Config["nested"], map[string]any{"key": "value"}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("job %s = %v, want %v", c.name, c.got, c.want)
		}
	}
	eval := stMust[*state.Evaluation](t)(s.EvalByID(nil, "e1"))
	if eval == nil || eval.JobModifyIndex != 10 || eval.CreateIndex != 10 || eval.ModifyIndex != 10 ||
		eval.CreateTime != 777 || eval.ModifyTime != 777 {
		t.Errorf("eval = %+v, want indexes 10 and times 777", eval)
	}
	versions := stMust[[]*state.Job](t)(s.JobVersions(nil, state.DefaultNamespace, "web"))
	if len(versions) != 1 || !reflect.DeepEqual(versions[0], got) {
		t.Errorf("versions = %v, want the current job", versions)
	}
	gotSub := stMust[*state.JobSubmission](t)(s.JobSubmission(nil, state.DefaultNamespace, "web", 0))
	wantSub := &state.JobSubmission{Format: state.SubmissionFormatHCL2, Source: `job "web" {}`, JobID: "web", Namespace: state.DefaultNamespace, JobIndex: 10}
	if !reflect.DeepEqual(gotSub, wantSub) {
		t.Errorf("submission = %+v, want %+v", gotSub, wantSub)
	}
	sum := stMust[*state.JobSummary](t)(s.JobSummaryByID(nil, state.DefaultNamespace, "web"))
	wantSum := &state.JobSummary{JobID: "web", Namespace: state.DefaultNamespace,
		Summary: map[string]state.TaskGroupSummary{"web": {}}, CreateIndex: 10, ModifyIndex: 10}
	if !reflect.DeepEqual(sum, wantSum) {
		t.Errorf("summary = %+v, want %+v", sum, wantSum)
	}
	for _, table := range []string{TableJobs, TableJobVersion, TableJobSubmission, TableJobSummary, TableEvals} {
		if got := s.Index(table); got != 10 {
			t.Errorf("Index(%s) = %d, want 10", table, got)
		}
	}
	if got := s.Index(TableAllocs); got != 0 {
		t.Errorf("Index(allocs) = %d, want 0 (not touched)", got)
	}
}

func TestJobRegisterUnchangedSpec(t *testing.T) {
	s := stStore(t, Config{})
	stRegister(t, s, 10, stJob("web"), stEval("e1", stJob("web")))
	before := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))

	// Same spec, different server-stamped fields: not a change.
	again := stJob("web")
	again.Version, again.Status, again.SubmitTime, again.JobModifyIndex = 9, "dead", 1, 3
	sub := &state.JobSubmission{Format: state.SubmissionFormatJSON, Source: "{}"}
	resp := stApply(t, s, 20, JobRegisterRequestType, &JobRegisterRequest{
		Job: again, Eval: stEval("e2", again), Submission: sub, Now: 2000,
	}).(*JobRegisterResponse)
	if resp.JobModifyIndex != 10 || resp.Version != 0 || resp.EvalID != "e2" || resp.EvalCreateIndex != 20 {
		t.Errorf("response = %+v, want existing JobModifyIndex 10, version 0, eval e2 at 20", resp)
	}
	after := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))
	if after != before {
		t.Errorf("job row rewritten: %+v", after)
	}
	if got := s.Index(TableJobs); got != 10 {
		t.Errorf("Index(jobs) = %d, want 10", got)
	}
	e2 := stMust[*state.Evaluation](t)(s.EvalByID(nil, "e2"))
	if e2 == nil || e2.JobModifyIndex != 10 {
		t.Errorf("eval = %+v, want JobModifyIndex 10", e2)
	}
	// The version had no submission: the new one is attached to it.
	gotSub := stMust[*state.JobSubmission](t)(s.JobSubmission(nil, state.DefaultNamespace, "web", 0))
	if gotSub == nil || gotSub.Format != state.SubmissionFormatJSON || gotSub.JobIndex != 10 {
		t.Errorf("submission = %+v, want the JSON one stamped with JobIndex 10", gotSub)
	}
	// Now it has one: a further submission does not replace it.
	stApply(t, s, 30, JobRegisterRequestType, &JobRegisterRequest{
		Job: stJob("web"), Submission: &state.JobSubmission{Format: state.SubmissionFormatHCL1, Source: "x"},
	})
	gotSub = stMust[*state.JobSubmission](t)(s.JobSubmission(nil, state.DefaultNamespace, "web", 0))
	if gotSub.Format != state.SubmissionFormatJSON {
		t.Errorf("submission replaced by %+v", gotSub)
	}
}

func TestJobRegisterChangedSpec(t *testing.T) {
	s := stStore(t, Config{})
	stRegister(t, s, 10, stJob("web"), stEval("e1", stJob("web")))
	changed := stJob("web")
	changed.Meta = map[string]string{"owner": "team-b"}
	resp := stRegister(t, s, 20, changed, stEval("e2", changed))
	if resp.JobModifyIndex != 20 || resp.Version != 1 {
		t.Errorf("response = %+v, want JobModifyIndex 20 and version 1", resp)
	}
	got := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))
	if got.Version != 1 || got.CreateIndex != 10 || got.ModifyIndex != 20 || got.JobModifyIndex != 20 || got.SubmitTime != 20000 {
		t.Errorf("job = v%d create %d modify %d jobmodify %d submit %d", got.Version, got.CreateIndex, got.ModifyIndex, got.JobModifyIndex, got.SubmitTime)
	}
	versions := stMust[[]*state.Job](t)(s.JobVersions(nil, state.DefaultNamespace, "web"))
	if len(versions) != 2 || versions[0].Version != 1 || versions[1].Version != 0 {
		t.Fatalf("versions = %d entries, want v1 then v0", len(versions))
	}
	old := stMust[*state.Job](t)(s.JobByIDAndVersion(nil, state.DefaultNamespace, "web", 0))
	if old == nil || old.Meta["owner"] != "team-a" {
		t.Errorf("version 0 = %+v, want the first spec", old)
	}
}

func TestJobRegisterEnforceIndex(t *testing.T) {
	tests := []struct {
		name     string
		existing bool
		index    uint64
		wantErr  bool
	}{
		{"0 on new job", false, 0, false},
		{"0 on existing job", true, 0, true},
		{"matching index", true, 10, false},
		{"stale index", true, 9, true},
		{"index on new job", false, 10, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := stStore(t, Config{})
			if tc.existing {
				stRegister(t, s, 10, stJob("web"), nil)
			}
			job := stJob("web")
			job.Priority = 70
			resp := stApplyErr(t, s, 20, JobRegisterRequestType, &JobRegisterRequest{
				Job: job, EnforceIndex: true, JobModifyIndex: tc.index,
			})
			err, isErr := resp.(error)
			if isErr != tc.wantErr {
				t.Fatalf("Apply = %v, want error: %v", resp, tc.wantErr)
			}
			if isErr && !errors.Is(err, state.ErrConflict) {
				t.Errorf("error %v is not a conflict", err)
			}
			got := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))
			if wantWritten := !tc.wantErr; (got != nil && got.Priority == 70) != wantWritten {
				t.Errorf("job written = %v, want %v", got != nil && got.Priority == 70, wantWritten)
			}
		})
	}
}

func TestJobRegisterPreserveCounts(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("web")
	job.TaskGroups[0].Count = 5
	stRegister(t, s, 10, job, nil)

	next := stJob("web")
	next.TaskGroups[0].Count = 1
	extra := stJob("web").TaskGroups[0]
	extra.Name, extra.Count = "worker", 3
	next.TaskGroups = append(next.TaskGroups, extra)
	stApply(t, s, 20, JobRegisterRequestType, &JobRegisterRequest{Job: next, PreserveCounts: true})

	got := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))
	if c := got.LookupTaskGroup("web").Count; c != 5 {
		t.Errorf("existing group count = %d, want preserved 5", c)
	}
	if c := got.LookupTaskGroup("worker").Count; c != 3 {
		t.Errorf("new group count = %d, want 3 as given", c)
	}
	// Without PreserveCounts the given count wins.
	stApply(t, s, 30, JobRegisterRequestType, &JobRegisterRequest{Job: next})
	got = stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))
	if c := got.LookupTaskGroup("web").Count; c != 1 {
		t.Errorf("count = %d, want 1", c)
	}
}

// stVersionJob returns job "web" with a spec that differs per n.
func stVersionJob(n int) *state.Job {
	j := stJob("web")
	j.Meta = map[string]string{"n": fmt.Sprint(n)}
	return j
}

func TestJobVersionRetention(t *testing.T) {
	tests := []struct {
		name      string
		retained  int
		registers int
		stable    map[uint64]bool // versions marked stable right after their register
		want      []uint64
	}{
		{"default keeps six", 0, 10, nil, []uint64{9, 8, 7, 6, 5, 4}},
		{"fewer than the limit", 0, 3, nil, []uint64{2, 1, 0}},
		{"limit two", 2, 5, nil, []uint64{4, 3}},
		{"newest stable kept", 2, 5, map[uint64]bool{1: true}, []uint64{4, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := stStore(t, Config{JobVersionsRetained: tc.retained})
			for i := range tc.registers {
				stRegister(t, s, uint64(10+i), stVersionJob(i), nil)
				if tc.stable[uint64(i)] {
					stMarkStable(t, s, uint64(i))
				}
			}
			var got []uint64
			for _, v := range stMust[[]*state.Job](t)(s.JobVersions(nil, state.DefaultNamespace, "web")) {
				got = append(got, v.Version)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("versions = %v, want %v", got, tc.want)
			}
			cur := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))
			if cur.Version != uint64(tc.registers-1) {
				t.Errorf("current version = %d", cur.Version)
			}
		})
	}
}

// stMarkStable marks a stored version stable directly in the tables, as
// the (future) stability command will.
func stMarkStable(t *testing.T, s *Store, version uint64) {
	t.Helper()
	txn := s.writeTxn(s.LatestIndex())
	defer txn.Abort()
	v, err := first[*state.Job](nil, txn.Txn, TableJobVersion, indexID, state.DefaultNamespace, "web", version)
	if err != nil || v == nil {
		t.Fatalf("version %d: %v", version, err)
	}
	c := *v
	c.Stable = true
	if err := txn.insert(TableJobVersion, &c); err != nil {
		t.Fatal(err)
	}
	if err := txn.commit(); err != nil {
		t.Fatal(err)
	}
}

func TestJobSubmissionRetention(t *testing.T) {
	s := stStore(t, Config{})
	for i := range 9 {
		stApply(t, s, uint64(10+i), JobRegisterRequestType, &JobRegisterRequest{
			Job:        stVersionJob(i),
			Submission: &state.JobSubmission{Format: state.SubmissionFormatHCL2, Source: fmt.Sprintf("v%d", i)},
		})
	}
	for v := range uint64(9) {
		sub := stMust[*state.JobSubmission](t)(s.JobSubmission(nil, state.DefaultNamespace, "web", v))
		if kept := v >= 3; (sub != nil) != kept {
			t.Errorf("submission of version %d present = %v, want %v", v, sub != nil, kept)
		}
		if sub != nil && (sub.Source != fmt.Sprintf("v%d", v) || sub.Version != v || sub.JobIndex != 10+v) {
			t.Errorf("submission %d = %+v", v, sub)
		}
	}
}

func TestJobDeregisterStop(t *testing.T) {
	s := stStore(t, Config{})
	stRegister(t, s, 10, stJob("web"), stEval("e1", stJob("web")))
	resp := stApply(t, s, 20, JobDeregisterRequestType, &JobDeregisterRequest{
		Namespace: state.DefaultNamespace, JobID: "web", Eval: stEval("e2", stJob("web")), Now: 5,
	}).(*JobDeregisterResponse)
	if resp.JobModifyIndex != 20 || resp.EvalID != "e2" || resp.EvalCreateIndex != 20 || resp.Index != 20 {
		t.Errorf("response = %+v", resp)
	}
	got := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))
	if !got.Stop || got.Version != 1 || got.JobModifyIndex != 20 || got.CreateIndex != 10 || got.SubmitTime != 5 {
		t.Errorf("stopped job = stop %v v%d jmi %d ci %d submit %d", got.Stop, got.Version, got.JobModifyIndex, got.CreateIndex, got.SubmitTime)
	}
	if e := stMust[*state.Evaluation](t)(s.EvalByID(nil, "e2")); e.JobModifyIndex != 20 {
		t.Errorf("eval JobModifyIndex = %d, want 20", e.JobModifyIndex)
	}
	// Stopping a stopped job makes no new version.
	resp = stApply(t, s, 30, JobDeregisterRequestType, &JobDeregisterRequest{
		Namespace: state.DefaultNamespace, JobID: "web", Eval: stEval("e3", stJob("web")),
	}).(*JobDeregisterResponse)
	if resp.JobModifyIndex != 20 {
		t.Errorf("second stop JobModifyIndex = %d, want 20", resp.JobModifyIndex)
	}
	if got := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web")); got.Version != 1 {
		t.Errorf("version after second stop = %d, want 1", got.Version)
	}
}

func TestJobDeregisterNoShutdownDelay(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("web")
	stRegister(t, s, 10, job, nil)
	done := stAlloc("a-done", job, "n1")
	done.DesiredStatus = state.AllocDesiredStatusStop
	stApply(t, s, 11, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{stAlloc("a-run", job, "n1"), done}})
	running := stMust[*state.Allocation](t)(s.AllocByID(nil, "a-run"))

	stApply(t, s, 20, JobDeregisterRequestType, &JobDeregisterRequest{Namespace: state.DefaultNamespace, JobID: "web", NoShutdownDelay: true})
	got := stMust[*state.Allocation](t)(s.AllocByID(nil, "a-run"))
	if nsd := got.DesiredTransition.NoShutdownDelay; nsd == nil || !*nsd || got.ModifyIndex != 20 {
		t.Errorf("running alloc transition = %+v at %d, want NoShutdownDelay at 20", got.DesiredTransition, got.ModifyIndex)
	}
	if running.DesiredTransition.NoShutdownDelay != nil {
		t.Error("the stored allocation was mutated in place")
	}
	if got := stMust[*state.Allocation](t)(s.AllocByID(nil, "a-done")); got.DesiredTransition.NoShutdownDelay != nil {
		t.Error("terminal allocation was marked")
	}
}

func TestJobPurgeAndReregister(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("web")
	stApply(t, s, 10, JobRegisterRequestType, &JobRegisterRequest{Job: job, Eval: stEval("e1", job),
		Submission: &state.JobSubmission{Source: "x"}})
	stApply(t, s, 11, AllocUpdateRequestType, &AllocUpdateRequest{
		Allocs:     []*state.Allocation{stAlloc("a-old", job, "n1")},
		Deployment: &state.Deployment{ID: "d-old", Namespace: state.DefaultNamespace, JobID: "web", JobCreateIndex: 10, Status: state.DeploymentStatusRunning},
	})
	changed := stVersionJob(1)
	stRegister(t, s, 12, changed, nil)

	stApply(t, s, 20, JobDeregisterRequestType, &JobDeregisterRequest{Namespace: state.DefaultNamespace, JobID: "web", Purge: true, Eval: stEval("e2", job)})
	if j := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web")); j != nil {
		t.Fatalf("purged job still readable: %+v", j)
	}
	if v := stMust[[]*state.Job](t)(s.JobVersions(nil, state.DefaultNamespace, "web")); len(v) != 0 {
		t.Errorf("%d versions left after purge", len(v))
	}
	if sub := stMust[*state.JobSubmission](t)(s.JobSubmission(nil, state.DefaultNamespace, "web", 0)); sub != nil {
		t.Error("submission left after purge")
	}
	if sum := stMust[*state.JobSummary](t)(s.JobSummaryByID(nil, state.DefaultNamespace, "web")); sum != nil {
		t.Error("summary left after purge")
	}
	if a := stMust[*state.Allocation](t)(s.AllocByID(nil, "a-old")); a == nil {
		t.Error("purge deleted an allocation")
	}
	if e := stMust[*state.Evaluation](t)(s.EvalByID(nil, "e2")); e == nil || e.JobModifyIndex != 20 {
		t.Errorf("purge eval = %+v, want JobModifyIndex 20", e)
	}

	resp := stRegister(t, s, 30, stJob("web"), stEval("e3", job))
	if resp.Version != 0 {
		t.Errorf("re-registered version = %d, want 0", resp.Version)
	}
	stApply(t, s, 31, AllocUpdateRequestType, &AllocUpdateRequest{
		Allocs:     []*state.Allocation{stAlloc("a-new", stJob("web"), "n1")},
		Deployment: &state.Deployment{ID: "d-new", Namespace: state.DefaultNamespace, JobID: "web", JobCreateIndex: 30, Status: state.DeploymentStatusRunning},
	})
	allocIDs := func(all bool) []string {
		var ids []string
		for _, a := range stMust[[]*state.Allocation](t)(s.AllocsByJob(nil, state.DefaultNamespace, "web", all)) {
			ids = append(ids, a.ID)
		}
		return ids
	}
	deployIDs := func(all bool) []string {
		var ids []string
		for _, d := range stMust[[]*state.Deployment](t)(s.DeploymentsByJob(nil, state.DefaultNamespace, "web", all)) {
			ids = append(ids, d.ID)
		}
		return ids
	}
	tests := []struct {
		name      string
		got, want []string
	}{
		{"allocs current", allocIDs(false), []string{"a-new"}},
		{"allocs all", allocIDs(true), []string{"a-new", "a-old"}},
		{"deployments current", deployIDs(false), []string{"d-new"}},
		{"deployments all", deployIDs(true), []string{"d-new", "d-old"}},
	}
	for _, tc := range tests {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	latest := stMust[*state.Deployment](t)(s.LatestDeploymentByJob(nil, state.DefaultNamespace, "web"))
	if latest == nil || latest.ID != "d-new" {
		t.Errorf("latest deployment = %+v, want d-new", latest)
	}
	sum := stMust[*state.JobSummary](t)(s.JobSummaryByID(nil, state.DefaultNamespace, "web"))
	if sum.Summary["web"].Starting != 1 || sum.CreateIndex != 30 {
		t.Errorf("summary after re-register = %+v, want only the new alloc counted", sum)
	}
}

func TestJobStatus(t *testing.T) {
	periodic := func(j *state.Job) { j.Periodic = &state.PeriodicConfig{Enabled: true, Spec: "* * * * *"} }
	tests := []struct {
		name   string
		mutate func(*state.Job)
		stop   bool
		eval   string // status of the eval registered with the job, "" for none
		allocs []string
		want   string
	}{
		{"new without eval", nil, false, "", nil, state.JobStatusPending},
		{"pending eval", nil, false, state.EvalStatusPending, nil, state.JobStatusPending},
		{"blocked eval", nil, false, state.EvalStatusBlocked, nil, state.JobStatusPending},
		{"complete eval only", nil, false, state.EvalStatusComplete, nil, state.JobStatusDead},
		{"running alloc", nil, false, state.EvalStatusComplete, []string{state.AllocClientStatusRunning}, state.JobStatusRunning},
		{"pending alloc", nil, false, state.EvalStatusComplete, []string{state.AllocClientStatusPending}, state.JobStatusRunning},
		{"finished allocs", nil, false, state.EvalStatusComplete, []string{state.AllocClientStatusComplete, state.AllocClientStatusFailed}, state.JobStatusDead},
		{"stopped without anything", nil, true, "", nil, state.JobStatusDead},
		{"system", func(j *state.Job) { j.Type = state.JobTypeSystem }, false, state.EvalStatusComplete, nil, state.JobStatusRunning},
		{"system stopped", func(j *state.Job) { j.Type = state.JobTypeSystem }, true, "", nil, state.JobStatusDead},
		{"periodic", periodic, false, "", nil, state.JobStatusRunning},
		{"periodic stopped", periodic, true, "", nil, state.JobStatusDead},
		{"parameterized", func(j *state.Job) { j.ParameterizedJob = &state.ParameterizedJobConfig{} }, false, "", nil, state.JobStatusRunning},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := stStore(t, Config{})
			job := stJob("j")
			if tc.mutate != nil {
				tc.mutate(job)
			}
			job.Stop = tc.stop
			var eval *state.Evaluation
			if tc.eval != "" {
				eval = stEval("e", job)
				eval.Status = tc.eval
			}
			stRegister(t, s, 10, job, eval)
			var allocs []*state.Allocation
			for i, status := range tc.allocs {
				a := stAlloc(fmt.Sprintf("a%d", i), job, "n1")
				a.ClientStatus = status
				allocs = append(allocs, a)
			}
			if len(allocs) > 0 {
				stApply(t, s, 11, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: allocs})
			}
			got := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "j"))
			if got.Status != tc.want {
				t.Errorf("status = %q, want %q", got.Status, tc.want)
			}
			if v := stMust[*state.Job](t)(s.JobByIDAndVersion(nil, state.DefaultNamespace, "j", got.Version)); v.Status != got.Status {
				t.Errorf("current version row status = %q, job status %q", v.Status, got.Status)
			}
		})
	}
}

func TestJobStatusFollowsAllocsWithoutMutatingStoredJob(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("web")
	stRegister(t, s, 10, job, stEval("e1", job))
	pending := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))

	stApply(t, s, 11, AllocUpdateRequestType, &AllocUpdateRequest{
		Allocs: []*state.Allocation{stAlloc("a1", job, "n1")},
		Evals:  []*state.Evaluation{func() *state.Evaluation { e := stEval("e1", job); e.Status = state.EvalStatusComplete; return e }()},
	})
	running := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))
	if running.Status != state.JobStatusRunning || running.ModifyIndex != 11 || running.JobModifyIndex != 10 {
		t.Errorf("job = %s modify %d jobmodify %d, want running 11 10", running.Status, running.ModifyIndex, running.JobModifyIndex)
	}
	if pending.Status != state.JobStatusPending || pending.ModifyIndex != 10 {
		t.Errorf("the previously read job changed: %s %d", pending.Status, pending.ModifyIndex)
	}
	stApply(t, s, 12, AllocClientUpdateRequestType, &AllocClientUpdateRequest{
		Allocs: []*state.Allocation{{ID: "a1", ClientStatus: state.AllocClientStatusComplete}},
	})
	if got := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web")); got.Status != state.JobStatusDead || got.ModifyIndex != 12 {
		t.Errorf("job after alloc completed = %s at %d, want dead at 12", got.Status, got.ModifyIndex)
	}
	// GC of everything leaves a stopped-looking job: no evals, no allocs.
	stApply(t, s, 13, EvalDeleteRequestType, &EvalDeleteRequest{Evals: []string{"e1"}, Allocs: []string{"a1"}})
	if got := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web")); got.Status != state.JobStatusPending {
		t.Errorf("job after GC = %s, want pending", got.Status)
	}
}

func TestJobSummaryFollowsGroups(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("web")
	stRegister(t, s, 10, job, nil)
	stApply(t, s, 11, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{stAlloc("a1", job, "n1")}})

	next := stJob("web")
	next.TaskGroups[0].Name = "api"
	stRegister(t, s, 20, next, nil)
	sum := stMust[*state.JobSummary](t)(s.JobSummaryByID(nil, state.DefaultNamespace, "web"))
	want := map[string]state.TaskGroupSummary{"api": {}}
	if !reflect.DeepEqual(sum.Summary, want) || sum.ModifyIndex != 20 || sum.CreateIndex != 10 {
		t.Errorf("summary = %+v, want groups %v at 20", sum, want)
	}
	if sum.Children != nil {
		t.Errorf("Children = %+v for a job without children", sum.Children)
	}
	stApply(t, s, 30, JobSummaryUpsertRequestType, &JobSummaryUpsertRequest{Namespace: state.DefaultNamespace, JobID: "web", Queued: map[string]int{"api": 4}})
	sum = stMust[*state.JobSummary](t)(s.JobSummaryByID(nil, state.DefaultNamespace, "web"))
	if sum.Summary["api"].Queued != 4 || sum.ModifyIndex != 30 {
		t.Errorf("queued = %+v", sum)
	}
}

func TestParentChildrenSummary(t *testing.T) {
	s := stStore(t, Config{})
	parent := stJob("batch")
	parent.Type = state.JobTypeBatch
	parent.ParameterizedJob = &state.ParameterizedJobConfig{Payload: state.DispatchPayloadOptional}
	stRegister(t, s, 10, parent, nil)
	if sum := stMust[*state.JobSummary](t)(s.JobSummaryByID(nil, state.DefaultNamespace, "batch")); sum.Children == nil || *sum.Children != (state.JobChildrenSummary{}) {
		t.Fatalf("parent summary children = %+v, want zeros", sum.Children)
	}
	children := func() state.JobChildrenSummary {
		return *stMust[*state.JobSummary](t)(s.JobSummaryByID(nil, state.DefaultNamespace, "batch")).Children
	}
	child := stJob("batch/dispatch-1")
	child.Type = state.JobTypeBatch
	child.ParentID = "batch"
	child.Dispatched = true
	stRegister(t, s, 20, child, stEval("ce", child))
	if got := children(); got != (state.JobChildrenSummary{Pending: 1}) {
		t.Errorf("children after dispatch = %+v", got)
	}
	// A new version of the child is still the same one child.
	child.Priority = 60
	stRegister(t, s, 21, child, nil)
	if got := children(); got != (state.JobChildrenSummary{Pending: 1}) {
		t.Errorf("children after updating the child = %+v", got)
	}
	stApply(t, s, 22, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{stAlloc("ca", child, "n1")}})
	if got := children(); got != (state.JobChildrenSummary{Running: 1}) {
		t.Errorf("children with a running child = %+v", got)
	}
	stApply(t, s, 23, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{{ID: "ca", ClientStatus: state.AllocClientStatusComplete}}})
	stApply(t, s, 24, EvalUpdateRequestType, &EvalUpdateRequest{Evals: []*state.Evaluation{func() *state.Evaluation { e := stEval("ce", child); e.Status = state.EvalStatusComplete; return e }()}})
	if got := children(); got != (state.JobChildrenSummary{Dead: 1}) {
		t.Errorf("children with a finished child = %+v", got)
	}
	stApply(t, s, 25, JobDeregisterRequestType, &JobDeregisterRequest{Namespace: state.DefaultNamespace, JobID: child.ID, Purge: true})
	if got := children(); got != (state.JobChildrenSummary{}) {
		t.Errorf("children after purge = %+v", got)
	}
}

func TestSpecChanged(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*state.Job)
		want   bool
	}{
		{"identical", func(*state.Job) {}, false},
		{"version", func(j *state.Job) { j.Version = 3 }, false},
		{"status", func(j *state.Job) { j.Status, j.StatusDescription = state.JobStatusDead, "x" }, false},
		{"stable", func(j *state.Job) { j.Stable = true }, false},
		{"submit time", func(j *state.Job) { j.SubmitTime = 99 }, false},
		{"indexes", func(j *state.Job) { j.CreateIndex, j.ModifyIndex, j.JobModifyIndex = 1, 2, 3 }, false},
		{"stop", func(j *state.Job) { j.Stop = true }, true},
		{"priority", func(j *state.Job) { j.Priority = 10 }, true},
		{"meta", func(j *state.Job) { j.Meta["owner"] = "b" }, true},
		{"count", func(j *state.Job) { j.TaskGroups[0].Count = 9 }, true},
		{"task config", func(j *state.Job) { j.TaskGroups[0].Tasks[0].Config["port"] = int64(1) }, true},
		{"kill timeout", func(j *state.Job) { j.TaskGroups[0].Tasks[0].KillTimeout = time.Minute }, true},
	}
	for _, tc := range tests {
		a, b := stJob("web"), stJob("web")
		tc.mutate(b)
		if got := a.SpecChanged(b); got != tc.want {
			t.Errorf("%s: SpecChanged = %v, want %v", tc.name, got, tc.want)
		}
		if got := b.SpecChanged(a); got != tc.want {
			t.Errorf("%s (reversed): SpecChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func BenchmarkApplyJobRegister(b *testing.B) {
	s := stStore(b, Config{})
	entries := make([][]byte, 64)
	for i := range entries {
		job := stJob(fmt.Sprintf("job-%d", i%16))
		job.Meta = map[string]string{"n": fmt.Sprint(i)}
		data, err := Encode(JobRegisterRequestType, &JobRegisterRequest{Job: job, Eval: stEval(fmt.Sprintf("e-%d", i), job)})
		if err != nil {
			b.Fatal(err)
		}
		entries[i] = data
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err, ok := s.Apply(uint64(i+10), entries[i%len(entries)]).(error); ok {
			b.Fatal(err)
		}
	}
}
