package command

import (
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

const schedConfigPath = "/v1/operator/scheduler/configuration"

func schedConfigReply() state.SchedulerConfigurationResponse {
	return state.SchedulerConfigurationResponse{Index: 12, SchedulerConfig: &state.SchedulerConfiguration{
		SchedulerAlgorithm: "binpack", PreemptionConfig: state.PreemptionConfig{SystemSchedulerEnabled: true},
		ModifyIndex: 12, CreateIndex: 5,
	}}
}

func TestOperatorSchedulerGetConfig(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", schedConfigPath, reply(12, schedConfigReply()))
	r := runCLI(t, f, runOpts{}, "operator", "scheduler", "get-config")
	r.check(t, 0, lines(
		`Scheduler Algorithm     = binpack`,
		`Memory Oversubscription = false`,
		`Reject Job Registration = false`,
		`Pause Eval Broker       = false`,
		``,
		`Preemption Config`,
		`System Scheduler Enabled   = true`,
		`SysBatch Scheduler Enabled = false`,
		`Service Scheduler Enabled  = false`,
		`Batch Scheduler Enabled    = false`,
	), "")
}

func TestOperatorSchedulerSetConfig(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", schedConfigPath, reply(12, schedConfigReply()))
	f.on("PUT", schedConfigPath, reply(13, state.SchedulerSetConfigurationResponse{Updated: true, Index: 13}))
	r := runCLI(t, f, runOpts{}, "operator", "scheduler", "set-config", "-scheduler-algorithm=spread",
		"-preempt-service-scheduler=true", "-memory-oversubscription=true", "-check-index=12")
	r.check(t, 0, "Scheduler configuration updated!\n", "")
	put := f.only("PUT " + schedConfigPath)
	if put.Query.Get("cas") != "12" {
		t.Errorf("cas = %q, want 12", put.Query.Get("cas"))
	}
	var sent state.SchedulerConfiguration
	decodeBody(t, put, &sent)
	// Flags given change; the others keep the current values.
	if sent.SchedulerAlgorithm != "spread" || !sent.PreemptionConfig.ServiceSchedulerEnabled || !sent.MemoryOversubscriptionEnabled ||
		!sent.PreemptionConfig.SystemSchedulerEnabled || sent.PauseEvalBroker {
		t.Errorf("sent %+v", sent)
	}
}

func TestOperatorSchedulerSetConfigErrors(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", schedConfigPath, reply(12, schedConfigReply()))
	f.on("PUT", schedConfigPath, reply(13, state.SchedulerSetConfigurationResponse{Updated: false, Index: 13}))
	r := runCLI(t, f, runOpts{}, "operator", "scheduler", "set-config", "-pause-eval-broker=true", "-check-index=3")
	if r.code != 1 || !strings.Contains(r.stderr, "could not be atomically updated") {
		t.Errorf("stale check-index: code %d, stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, f, runOpts{}, "operator", "scheduler", "set-config", "-scheduler-algorithm=random")
	if r.code != 1 || !strings.Contains(r.stderr, "-scheduler-algorithm") {
		t.Errorf("bad algorithm: code %d, stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, f, runOpts{}, "operator", "scheduler", "set-config", "-pause-eval-broker=maybe")
	if r.code == 0 {
		t.Errorf("bad boolean accepted: stderr %q", r.stderr)
	}
	if n := len(f.requests("PUT " + schedConfigPath)); n != 1 {
		t.Errorf("%d writes, want only the stale CAS's", n)
	}
}

func TestJobPlanShowsPreemptions(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/job/web/plan", reply(9, state.JobPlanResponse{
		Index: 9, JobModifyIndex: 0,
		Annotations: &state.PlanAnnotations{
			DesiredTGUpdates: map[string]*state.DesiredUpdates{"web": {Place: 1, Preemptions: 2}},
			PreemptedAllocs: []*state.AllocListStub{
				{ID: "a1", JobID: "low", TaskGroup: "g", Namespace: "default"},
				{ID: "a2", JobID: "low", TaskGroup: "g", Namespace: "default"},
			},
		},
	}))
	path := writeFile(t, "web.json", `{"ID":"web"}`)
	r := runCLI(t, f, runOpts{}, "job", "plan", "-diff=false", path)
	if r.code != 1 || !strings.Contains(r.stdout, "Preemptions:\n\nAlloc ID  Job ID  Task Group  Namespace\na1        low     g           default\na2") {
		t.Errorf("code %d, stdout:\n%s", r.code, r.stdout)
	}
}
