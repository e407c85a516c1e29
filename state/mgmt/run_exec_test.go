package mgmt

import (
	"bytes"
	"testing"
	"time"
)

// TestNextRunStep is the executor's lifecycle as a table: for a run in a
// status, given what the executor observed, the one step it takes.
func TestNextRunStep(t *testing.T) {
	run := func(status string, mod func(*Run)) *Run {
		r := &Run{ID: "run-1", Status: status}
		if mod != nil {
			mod(r)
		}
		return r
	}
	uploaded := RunObservation{Configuration: ConfigurationUploaded}
	autoApply := func(r *Run) { r.AutoApply, r.Plan.HasChanges = true, true }
	tests := []struct {
		name string
		run  *Run
		obs  RunObservation
		want RunStep
	}{
		{"pending with an uploaded configuration starts its plan", run(RunPending, nil), uploaded, RunStep{Kind: StepStart, Phase: PhasePlan}},
		{"pending behind an earlier run waits", run(RunPending, nil), RunObservation{Blocked: true, Configuration: ConfigurationUploaded}, RunStep{}},
		{"pending while the configuration uploads waits", run(RunPending, nil), RunObservation{Configuration: ConfigurationPending}, RunStep{}},
		{"pending without a configuration errors", run(RunPending, nil), RunObservation{}, RunStep{Kind: StepFail, Message: "the run has no uploaded configuration version"}},
		{"plan queued, job placed but not running, waits", run(RunPlanQueued, nil), RunObservation{PlanJob: JobWaiting}, RunStep{}},
		{"plan queued, job running: planning", run(RunPlanQueued, nil), RunObservation{PlanJob: JobRunning}, RunStep{Kind: StepAdvance, Status: RunPlanning}},
		{"planning, job running: nothing", run(RunPlanning, nil), RunObservation{PlanJob: JobRunning}, RunStep{}},
		{"planning, job ended without a report: errored", run(RunPlanning, nil), RunObservation{PlanJob: JobDone}, RunStep{Kind: StepFail,
			Message: "the plan job ended without reporting a result (see its allocation's logs in namespace tfe-runs)"}},
		{"plan queued, job gone: errored", run(RunPlanQueued, nil), RunObservation{PlanJob: JobAbsent}, RunStep{Kind: StepFail,
			Message: "the plan job ended without reporting a result (see its allocation's logs in namespace tfe-runs)"}},
		{"planned waits for confirmation", run(RunPlanned, func(r *Run) { r.Plan.HasChanges = true }), RunObservation{PlanJob: JobDone}, RunStep{}},
		{"planned with auto-apply starts the apply", run(RunPlanned, autoApply), RunObservation{PlanJob: JobDone}, RunStep{Kind: StepStart, Phase: PhaseApply}},
		{"plan-only never applies", run(RunPlanned, func(r *Run) { autoApply(r); r.PlanOnly = true }), RunObservation{}, RunStep{}},
		{"confirmed starts the apply", run(RunConfirmed, nil), RunObservation{PlanJob: JobDone}, RunStep{Kind: StepStart, Phase: PhaseApply}},
		{"apply queued, job running: applying", run(RunApplyQueued, nil), RunObservation{ApplyJob: JobRunning}, RunStep{Kind: StepAdvance, Status: RunApplying}},
		{"applying, job failed: errored", run(RunApplying, nil), RunObservation{ApplyJob: JobDone}, RunStep{Kind: StepFail,
			Message: "the apply job ended without reporting a result (see its allocation's logs in namespace tfe-runs)"}},
		{"canceled while planning stops the plan job", run(RunCanceled, nil), RunObservation{PlanJob: JobRunning}, RunStep{Kind: StepStop, Phase: PhasePlan}},
		{"canceled while applying stops the apply job", run(RunCanceled, nil), RunObservation{PlanJob: JobDone, ApplyJob: JobWaiting}, RunStep{Kind: StepStop, Phase: PhaseApply}},
		{"applied with its jobs done: nothing", run(RunApplied, nil), RunObservation{PlanJob: JobDone, ApplyJob: JobDone}, RunStep{}},
		{"discarded: nothing", run(RunDiscarded, nil), RunObservation{PlanJob: JobDone}, RunStep{}},
	}
	for _, tc := range tests {
		if got := NextRunStep(tc.run, tc.obs); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestRunStepsAgreeWithTheLifecycle checks that every transition the
// executor and the worker's reports take is one the lifecycle allows
// (RunCanAdvance), so Apply never refuses a step NextRunStep decided.
func TestRunStepsAgreeWithTheLifecycle(t *testing.T) {
	for _, c := range []struct{ from, to string }{
		{RunPending, RunPlanQueued}, {RunPlanQueued, RunPlanning}, {RunPlanning, RunPlanned}, {RunPlanning, RunPlannedAndFinished},
		{RunPlanning, RunErrored}, {RunPlanned, RunApplyQueued}, {RunConfirmed, RunApplyQueued}, {RunApplyQueued, RunApplying},
		{RunApplying, RunApplied}, {RunApplying, RunErrored}, {RunPending, RunErrored}, {RunPlanQueued, RunErrored},
		{RunApplyQueued, RunErrored}, {RunPlanned, RunErrored}, {RunConfirmed, RunErrored},
	} {
		if !RunCanAdvance(c.from, c.to) {
			t.Errorf("the lifecycle refuses %s → %s, which the executor takes", c.from, c.to)
		}
	}
	if RunCanAdvance(RunApplied, RunPlanning) || RunCanAdvance(RunCanceled, RunApplyQueued) {
		t.Error("a final run may not move")
	}
}

func TestRunAfterPhase(t *testing.T) {
	r := &Run{}
	for _, c := range []struct {
		phase string
		run   *Run
		res   PlanResult
		want  string
	}{
		{PhasePlan, r, PlanResult{OK: true, HasChanges: true}, RunPlanned},
		{PhasePlan, r, PlanResult{OK: true}, RunPlannedAndFinished},
		{PhasePlan, &Run{RunExecution: RunExecution{PlanOnly: true}}, PlanResult{OK: true, HasChanges: true}, RunPlannedAndFinished},
		{PhasePlan, r, PlanResult{Error: "boom"}, RunErrored},
		{PhaseApply, r, PlanResult{OK: true}, RunApplied},
		{PhaseApply, r, PlanResult{}, RunErrored},
	} {
		if got := RunAfterPhase(c.run, c.phase, c.res); got != c.want {
			t.Errorf("%s %+v of %+v: %s, want %s", c.phase, c.res, c.run, got, c.want)
		}
	}
}

func TestSettlePhases(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &Run{Status: RunCanceled}
	r.Plan.SetStatus(PhaseRunning, now)
	r.SettlePhases(now)
	if r.Plan.Status != PhaseCanceled || r.Apply.Status != PhaseUnreachable {
		t.Errorf("canceled while planning: plan %s, apply %s", r.Plan.Status, r.Apply.Status)
	}
	r = &Run{Status: RunErrored}
	r.Plan.SetStatus(PhaseFinished, now)
	r.Apply.SetStatus(PhaseQueued, now)
	r.SettlePhases(now)
	if r.Plan.Status != PhaseFinished || r.Apply.Status != PhaseErrored {
		t.Errorf("errored while applying: plan %s, apply %s", r.Plan.Status, r.Apply.Status)
	}
	r = &Run{Status: RunPlanning}
	r.SettlePhases(now)
	if r.Plan.Status != "" {
		t.Errorf("a run that goes on has its phases settled: %s", r.Plan.Status)
	}
}

// TestAppendLogIsBounded: the kept log never passes MaxRunLogBytes, and
// says it was cut.
func TestAppendLogIsBounded(t *testing.T) {
	var p RunPhase
	chunk := bytes.Repeat([]byte("x"), MaxRunLogChunk)
	for range 2 * MaxRunLogBytes / MaxRunLogChunk {
		p.AppendLog(chunk)
	}
	if len(p.Log) > MaxRunLogBytes || !p.LogTruncated || !bytes.Contains(p.Log, []byte("over its limit")) {
		t.Errorf("log of %d bytes (limit %d), truncated %v", len(p.Log), MaxRunLogBytes, p.LogTruncated)
	}
	p.AppendLog([]byte("more"))
	if bytes.HasSuffix(p.Log, []byte("more")) {
		t.Error("a truncated log still grows")
	}
}

func TestPhaseIDs(t *testing.T) {
	if got := PlanID("run-abc"); got != "plan-abc" {
		t.Errorf("PlanID = %s", got)
	}
	if id, ok := RunOfPhase(ApplyID("run-abc"), PrefixApply); !ok || id != "run-abc" {
		t.Errorf("RunOfPhase(apply) = %s %v", id, ok)
	}
	if _, ok := RunOfPhase("run-abc", PrefixPlan); ok {
		t.Error("a run ID is taken as a plan ID")
	}
}

func TestDefaultToolVersion(t *testing.T) {
	vs := []*ToolVersion{{Version: "1.5.7", Enabled: true}, {Version: "1.10.0", Enabled: true}, {Version: "1.11.0", Enabled: false},
		{Version: "1.10.0-beta1", Enabled: true}, {Version: "1.9.9", Enabled: true}}
	if got := DefaultToolVersion(vs); got == nil || got.Version != "1.10.0" {
		t.Errorf("default = %+v, want 1.10.0", got)
	}
	if DefaultToolVersion([]*ToolVersion{{Version: "1.0.0"}}) != nil {
		t.Error("a disabled version is a default")
	}
}
