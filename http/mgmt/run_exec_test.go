package mgmt

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tfe "github.com/hashicorp/go-tfe"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// startPhase applies what the run executor proposes to start a run's
// phase (package agent/runexec), with secret as the worker's.
func startPhase(m *apiHarness, runID, phase, secret string) {
	m.T.Helper()
	id := mgmt.PhaseJobID(runID, phase)
	job := &state.Job{ID: id, Name: id, Namespace: mgmt.RunNamespace, Type: state.JobTypeBatch, Datacenters: []string{"*"},
		TaskGroups: []*state.TaskGroup{{Name: "terraform", Count: 1, Tasks: []*state.Task{{Name: "terraform", Driver: "raw_exec",
			Config: map[string]any{"command": "sched", "args": []any{"tfe-worker"}}, Resources: &state.Resources{CPU: 100, MemoryMB: 64}}}}}}
	job.Canonicalize()
	m.Apply(store.RunPhaseStartRequestType, &store.RunPhaseStartRequest{RunID: runID, Phase: phase,
		Namespace: &state.Namespace{Name: mgmt.RunNamespace}, Job: job,
		Eval: &state.Evaluation{ID: "eval-" + id, Namespace: mgmt.RunNamespace, JobID: id, Type: state.JobTypeBatch, Priority: 50,
			TriggeredBy: state.EvalTriggerJobRegister, Status: state.EvalStatusPending},
		TerraformVersion: "1.5.7", WorkerSecret: secret, Now: m.clock.Now()})
}

// worker sends a worker's request for run with secret.
func worker(t *testing.T, ts *httptest.Server, run, secret, method, endpoint string, body []byte) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+mgmt.WorkerPath(run, endpoint), bytes.NewReader(body))
	if secret != "" {
		req.Header.Set(mgmt.WorkerSecretHeader, secret)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// TestMgmtGoTFERunExecution drives a run through go-tfe (create, read,
// plans, applies, their logs through go-tfe's log reader, apply, run
// events) while a worker answers through the worker endpoints, as the
// executor's jobs do: the plan's report, the apply's new state saved as
// the workspace's next state version.
func TestMgmtGoTFERunExecution(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	ts := httptest.NewServer(neutralNames(m.srv.Handler()))
	defer ts.Close()
	ctx := context.Background()
	c := tfeClient(t, ts, w.owner)
	ws := m.workspace(w.owner, "acme", "infra", w.appProject, nil).ID

	cv, err := c.ConfigurationVersions.Create(ctx, ws, tfe.ConfigurationVersionCreateOptions{AutoQueueRuns: tfePtr(false)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`resource "terraform_data" "x" {}`), 0o600)
	if err := c.ConfigurationVersions.Upload(ctx, cv.UploadURL, dir); err != nil {
		t.Fatal(err)
	}
	run, err := c.Runs.Create(ctx, tfe.RunCreateOptions{Workspace: &tfe.Workspace{ID: ws}, ConfigurationVersion: cv, Message: tfePtr("go"),
		Variables: []*tfe.RunVariable{{Key: "message", Value: `"two"`}}})
	if err != nil {
		t.Fatalf("Runs.Create: %v", err)
	}
	if run.Status != tfe.RunPending || run.Plan == nil || run.Apply == nil || run.ConfigurationVersion == nil || run.ConfigurationVersion.ID != cv.ID {
		t.Fatalf("created run = %+v", run)
	}
	plan, err := c.Plans.Read(ctx, run.Plan.ID)
	if err != nil || plan.Status != tfe.PlanPending || plan.LogReadURL != "" {
		t.Fatalf("pending plan = %+v, %v", plan, err)
	}
	if _, err := c.Plans.Logs(ctx, run.Plan.ID); err == nil {
		t.Error("a plan that has not started has a log URL")
	}

	// The executor starts the plan; its worker reports.
	startPhase(m, run.ID, mgmt.PhasePlan, "sekrit")
	if code, _ := worker(t, ts, run.ID, "wrong", "GET", "configuration", nil); code != 404 {
		t.Errorf("a wrong secret: %d, want 404", code)
	}
	if code, _ := worker(t, ts, run.ID, "", "GET", "configuration", nil); code != 404 {
		t.Errorf("no secret: %d, want 404", code)
	}
	if code, body := worker(t, ts, run.ID, "sekrit", "GET", "configuration", nil); code != 200 || len(body) == 0 {
		t.Errorf("configuration: %d, %d bytes", code, len(body))
	}
	if code, body := worker(t, ts, run.ID, "sekrit", "GET", "variables", nil); code != 200 || string(body) != `[{"Key":"message","Value":"\"two\""}]` {
		t.Errorf("variables: %d %s", code, body)
	}
	if code, body := worker(t, ts, run.ID, "sekrit", "GET", "state", nil); code != 204 || len(body) != 0 {
		t.Errorf("state of a new workspace: %d %q", code, body)
	}
	if code, _ := worker(t, ts, run.ID, "sekrit", "POST", "log?phase=plan", []byte("Plan: 1 to add, 0 to change, 0 to destroy.\n")); code != 204 {
		t.Errorf("log: %d", code)
	}
	if code, _ := worker(t, ts, run.ID, "sekrit", "POST", "log?phase=plan", bytes.Repeat([]byte("x"), mgmt.MaxRunLogChunk+1)); code != 413 {
		t.Errorf("an oversized log chunk: %d, want 413", code)
	}
	if code, _ := worker(t, ts, run.ID, "sekrit", "POST", "result?phase=plan", []byte(`{"OK":true,"Additions":-1}`)); code != 422 {
		t.Errorf("negative counts: %d, want 422", code)
	}
	if code, body := worker(t, ts, run.ID, "sekrit", "POST", "result?phase=plan", []byte(`{"OK":true,"Additions":1,"HasChanges":true}`)); code != 204 {
		t.Errorf("result: %d %s", code, body)
	}
	run, err = c.Runs.Read(ctx, run.ID)
	if err != nil || run.Status != tfe.RunPlanned || !run.HasChanges || !run.Actions.IsConfirmable || !run.Actions.IsDiscardable {
		t.Fatalf("planned run = %+v, %v", run, err)
	}
	plan, err = c.Plans.Read(ctx, run.Plan.ID)
	if err != nil || plan.Status != tfe.PlanFinished || plan.ResourceAdditions != 1 || !plan.HasChanges || plan.LogReadURL == "" {
		t.Fatalf("finished plan = %+v, %v", plan, err)
	}
	logs, err := c.Plans.Logs(ctx, run.Plan.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(logs)
	if err != nil || string(got) != "Plan: 1 to add, 0 to change, 0 to destroy.\n" {
		t.Errorf("plan log through go-tfe = %q, %v", got, err)
	}
	// The signed URL answers without a token; a tampered one does not.
	if resp, err := http.Get(plan.LogReadURL + "?offset=1&limit=4"); err != nil || resp.StatusCode != 200 {
		t.Errorf("signed log URL: %v %v", resp, err)
	} else if b, _ := io.ReadAll(resp.Body); string(b) != "Plan" {
		t.Errorf("log from offset 1, limit 4 = %q", b)
	}
	if resp, err := http.Get(plan.LogReadURL + "0"); err != nil || resp.StatusCode != 404 {
		t.Errorf("tampered log URL: %v %v", resp, err)
	}
	events, err := c.RunEvents.List(ctx, run.ID, nil)
	if err != nil || len(events.Items) != 0 {
		t.Errorf("run events = %+v, %v", events, err)
	}

	// A reader may not apply; the owner does.
	if err := tfeClient(t, ts, w.reader).Runs.Apply(ctx, run.ID, tfe.RunApplyOptions{}); err == nil {
		t.Error("a reader applied a run")
	}
	if err := c.Runs.Apply(ctx, run.ID, tfe.RunApplyOptions{}); err != nil {
		t.Fatalf("Runs.Apply: %v", err)
	}
	startPhase(m, run.ID, mgmt.PhaseApply, "sekrit")
	ap, err := c.Applies.Read(ctx, run.Apply.ID)
	if err != nil || ap.Status != tfe.ApplyQueued || ap.LogReadURL == "" {
		t.Fatalf("queued apply = %+v, %v", ap, err)
	}
	if code, body := worker(t, ts, run.ID, "sekrit", "PUT", "state", []byte(`{"version":4,"serial":"x"}`)); code != 422 {
		t.Errorf("a state that is not a state file: %d %s", code, body)
	}
	st := []byte(`{"version":4,"terraform_version":"1.5.7","serial":1,"lineage":"lin","outputs":{"x":{"value":"1","type":"string"}},"resources":[]}`)
	if code, body := worker(t, ts, run.ID, "sekrit", "PUT", "state", st); code != 201 {
		t.Fatalf("save state: %d %s", code, body)
	}
	if code, body := worker(t, ts, run.ID, "sekrit", "POST", "result?phase=apply", []byte(`{"OK":true,"Additions":1,"HasChanges":true}`)); code != 204 {
		t.Errorf("apply result: %d %s", code, body)
	}
	run, err = c.Runs.Read(ctx, run.ID)
	if err != nil || run.Status != tfe.RunApplied {
		t.Fatalf("applied run = %+v, %v", run, err)
	}
	sv, err := c.StateVersions.ReadCurrent(ctx, ws)
	if err != nil || sv.Serial != 1 || sv.Run == nil || sv.Run.ID != run.ID {
		t.Errorf("current state version = %+v, %v", sv, err)
	}
	// The worker's secret works no more once the run ended.
	if code, _ := worker(t, ts, run.ID, "sekrit", "GET", "state", nil); code != 409 {
		t.Errorf("worker of an applied run: %d, want 409", code)
	}
	wsNow, err := c.Workspaces.ReadByID(ctx, ws)
	if err != nil || wsNow.Locked {
		t.Errorf("workspace after the run: locked %v, %v", wsNow.Locked, err)
	}
}

// TestMgmtRunBadInput: each refused run request is a clear JSON:API error
// that queues nothing.
func TestMgmtRunBadInput(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	ws := m.workspace(w.owner, "acme", "infra", w.appProject, nil).ID
	local := m.workspace(w.owner, "acme", "laptop", w.appProject, map[string]any{"execution-mode": "local"}).ID
	m.fail(w.owner, "POST", "/runs", docBody("runs", nil, "workspace", relTo("workspaces", local)), 409, "", "local execution")
	m.fail(w.reader, "POST", "/runs", docBody("runs", nil, "workspace", relTo("workspaces", ws)), 403, "", "not allowed to queue runs")
	m.fail(w.owner, "POST", "/runs", docBody("runs", nil, "workspace", relTo("workspaces", ws),
		"configuration-version", relTo("configuration-versions", "cv-nope")), 404, "", "cv-nope")
	other := m.workspace(w.owner, "acme", "other", w.appProject, nil).ID
	cv := m.call(w.owner, "POST", "/workspaces/"+other+"/configuration-versions", nil, 201).one(t).ID
	m.fail(w.owner, "POST", "/runs", docBody("runs", nil, "workspace", relTo("workspaces", ws),
		"configuration-version", relTo("configuration-versions", cv)), 422, "/data/relationships/configuration-version/data/id", "is not of workspace")
	m.fail(w.owner, "POST", "/runs", docBody("runs", map[string]any{"variables": []any{map[string]any{"key": "bad key", "value": `"x"`}}},
		"workspace", relTo("workspaces", ws)), 422, "/data/attributes/variables/0/key", "is not a variable name")
	m.fail(w.owner, "POST", "/runs", docBody("runs", map[string]any{"variables": []any{map[string]any{"key": "a", "value": "1"}, map[string]any{"key": "a", "value": "2"}}},
		"workspace", relTo("workspaces", ws)), 422, "/data/attributes/variables/1/key", "given twice")
	m.call(w.manager, "POST", "/workspaces/"+ws+"/actions/lock", nil, 200)
	m.fail(w.owner, "POST", "/runs", docBody("runs", nil, "workspace", relTo("workspaces", ws)), 409, "", "is locked by")
	for _, id := range []string{ws, local} {
		if n := len(m.call(w.owner, "GET", "/workspaces/"+id+"/runs", nil, 200).many(t)); n != 0 {
			t.Errorf("refused runs left %d runs in %s", n, id)
		}
	}
	if !strings.Contains(m.send(w.owner, "GET", "/plans/run-nope", nil).Body.String(), "not found") {
		t.Error("a plan ID that is not one is not a 404")
	}
}

// TestMgmtGoTFEAgentPools drives agent pools through go-tfe: create,
// list, read, update, a workspace in agent mode on it, delete refused
// while it is used.
func TestMgmtGoTFEAgentPools(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	ts := httptest.NewServer(neutralNames(m.srv.Handler()))
	defer ts.Close()
	ctx := context.Background()
	c := tfeClient(t, ts, w.owner)
	pool, err := c.AgentPools.Create(ctx, w.org, tfe.AgentPoolCreateOptions{Name: tfePtr("gpu"), OrganizationScoped: tfePtr(true)})
	if err != nil || pool.Name != "gpu" || !pool.OrganizationScoped || pool.Organization == nil || pool.Organization.Name != w.org {
		t.Fatalf("Create = %+v, %v", pool, err)
	}
	if _, err := c.AgentPools.Create(ctx, w.org, tfe.AgentPoolCreateOptions{Name: tfePtr("gpu")}); err == nil {
		t.Error("a second pool named gpu was created")
	}
	if _, err := tfeClient(t, ts, w.reader).AgentPools.Create(ctx, w.org, tfe.AgentPoolCreateOptions{Name: tfePtr("mine")}); err == nil {
		t.Error("a reader created an agent pool")
	}
	list, err := c.AgentPools.List(ctx, w.org, nil)
	if err != nil || len(list.Items) != 1 || list.Items[0].ID != pool.ID {
		t.Errorf("List = %+v, %v", list, err)
	}
	upd, err := c.AgentPools.Update(ctx, pool.ID, tfe.AgentPoolUpdateOptions{Name: tfePtr("gpu-2")})
	if err != nil || upd.Name != "gpu-2" {
		t.Errorf("Update = %+v, %v", upd, err)
	}
	got, err := c.AgentPools.Read(ctx, pool.ID)
	if err != nil || got.Name != "gpu-2" {
		t.Errorf("Read = %+v, %v", got, err)
	}
	if _, err := tfeClient(t, ts, w.outsider).AgentPools.Read(ctx, pool.ID); err != tfe.ErrResourceNotFound {
		t.Errorf("outsider's Read: %v", err)
	}
	ws := m.workspace(w.owner, "acme", "gpu-jobs", w.appProject, nil).ID
	if _, err := c.Workspaces.UpdateByID(ctx, ws, tfe.WorkspaceUpdateOptions{ExecutionMode: tfePtr("agent"), AgentPoolID: tfePtr(pool.ID)}); err != nil {
		t.Fatalf("workspace on the pool: %v", err)
	}
	if err := c.AgentPools.Delete(ctx, pool.ID); err == nil {
		t.Error("a pool in use was deleted")
	}
	if _, err := c.Workspaces.UpdateByID(ctx, ws, tfe.WorkspaceUpdateOptions{ExecutionMode: tfePtr("remote")}); err != nil {
		t.Fatal(err)
	}
	if err := c.AgentPools.Delete(ctx, pool.ID); err != nil {
		t.Errorf("Delete: %v", err)
	}
	if _, err := c.AgentPools.Read(ctx, pool.ID); err != tfe.ErrResourceNotFound {
		t.Errorf("Read after delete: %v", err)
	}
}
