package command

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestQuotaList(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/quotas", reply(3, []*state.QuotaSpec{{Name: "team", Description: "the team"}, {Name: "free"}}))
	runCLI(t, f, runOpts{}, "quota", "list").check(t, 0, lines(
		"Name  Description",
		"team  the team",
		"free",
	), "")
}

func TestQuotaStatus(t *testing.T) {
	f := newFakeAPI(t)
	limit := &state.QuotaResources{CPU: 1000, MemoryMB: 4096, Allocations: -1}
	f.on("GET", "/v1/quota/team", reply(3, &state.QuotaSpec{Name: "team", Limits: []*state.QuotaLimit{{Region: "global", RegionLimit: limit}}}))
	f.on("GET", "/v1/quota/usage/team", reply(3, &state.QuotaUsage{Name: "team", Used: map[string]*state.QuotaUsed{
		"global": {Region: "global", RegionLimit: limit, Used: state.QuotaResources{CPU: 250, MemoryMB: 4096, MemoryMaxMB: 5000}}}}))
	runCLI(t, f, runOpts{}, "quota", "status", "team").check(t, 0, lines(
		"Name        = team",
		"Description = <none>",
		"",
		"Quota Limits",
		"Region  CPU Usage   Memory Usage  Memory Max Usage  Allocations",
		"global  250 / 1000  4096 / 4096   5000 / inf        0 / 0",
	), "")
}

// apply reads HCL and JSON files into the same spec, and refuses a file
// that is not one.
func TestQuotaApplyAndInit(t *testing.T) {
	dir := t.TempDir()
	want := state.QuotaSpec{Name: "default-quota", Description: "Limit the shared default namespace",
		Limits: []*state.QuotaLimit{{Region: "global", RegionLimit: &state.QuotaResources{CPU: 2500, MemoryMB: 1000, MemoryMaxMB: 2000, Allocations: 50}}}}
	for _, flags := range [][]string{nil, {"-json"}} {
		path := filepath.Join(dir, "spec")
		if flags != nil {
			path += ".json"
		}
		runCLI(t, nil, runOpts{}, append(append([]string{"quota", "init"}, flags...), path)...).check(t, 0, "Example quota specification written to "+path+"\n", "")
		runCLI(t, nil, runOpts{}, "quota", "init", path).check(t, 1, "", "Error writing example quota: "+path+" already exists: remove it or name another file\n")
		f := newFakeAPI(t)
		f.on("PUT", "/v1/quota/default-quota", reply(4, nil))
		runCLI(t, f, runOpts{}, "quota", "apply", path).check(t, 0, "Successfully applied quota specification \"default-quota\"!\n", "")
		var got state.QuotaSpec
		decodeBody(t, f.only("PUT /v1/quota/default-quota"), &got)
		if got.Name != want.Name || got.Description != want.Description || len(got.Limits) != 1 || *got.Limits[0].RegionLimit != *want.Limits[0].RegionLimit {
			t.Errorf("%v: sent %+v, want %+v", flags, got, want)
		}
	}
	bad := filepath.Join(dir, "bad.hcl")
	if err := os.WriteFile(bad, []byte("name = \"x\"\nlimit {\n  regoin = \"global\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runCLI(t, newFakeAPI(t), runOpts{}, "quota", "apply", bad)
	if res.code != 1 {
		t.Fatalf("a misspelt attribute: exit %d, stdout %q", res.code, res.stdout)
	}
}

func TestQuotaDelete(t *testing.T) {
	f := newFakeAPI(t)
	f.on("DELETE", "/v1/quota/team", fail(http.StatusConflict, `quota "team" (Names[0]) is used by namespace "prod"`))
	runCLI(t, f, runOpts{}, "quota", "delete", "team").check(t, 1, "",
		"Error deleting quota: Unexpected response code: 409 (quota \"team\" (Names[0]) is used by namespace \"prod\")\n")
	f = newFakeAPI(t)
	f.on("DELETE", "/v1/quota/team", reply(5, nil))
	runCLI(t, f, runOpts{}, "quota", "delete", "team").check(t, 0, "Successfully deleted quota \"team\"!\n", "")
}

func TestNamespaceApplyQuota(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/namespace/prod", reply(3, &state.Namespace{Name: "prod", Description: "keep"}))
	f.on("PUT", "/v1/namespace/prod", reply(4, nil))
	runCLI(t, f, runOpts{}, "namespace", "apply", "-quota", "team", "prod").check(t, 0, "Successfully applied namespace \"prod\"!\n", "")
	var got state.Namespace
	decodeBody(t, f.only("PUT /v1/namespace/prod"), &got)
	if got.Quota != "team" || got.Description != "keep" {
		t.Errorf("sent %+v", got)
	}
}

// job status shows why a job waits: the placement failures of its latest
// evaluation (the quota's reason) and its blocked evaluation.
func TestJobStatusShowsQuotaBlock(t *testing.T) {
	job := &state.Job{ID: "web", Name: "web", Namespace: "default", Type: "service", Priority: 50, Status: "running"}
	f := statusFake(t, job, nil, nil)
	f.on("GET", "/v1/job/web/evaluations", reply(5, []*state.Evaluation{
		{ID: "e1e1e1e1-0000", Status: state.EvalStatusComplete, CreateIndex: 4, FailedTGAllocs: map[string]*state.AllocMetric{
			"web": {NodesEvaluated: 3, CoalescedFailures: 5, QuotaExhausted: []string{"quota exceeded: memory 4096/4096 MB"}}}},
		{ID: "b2b2b2b2-0000", Status: state.EvalStatusBlocked, CreateIndex: 5, QuotaLimitReached: "team",
			QueuePosition: 2, QueueLength: 7, WaitReason: `quota "team" exhausted: waiting for its usage to fall`},
	}))
	res := runCLI(t, f, runOpts{}, "job", "status", "web")
	for _, want := range []string{
		"Placement Failure\nTask Group \"web\" (failed to place 6 allocation(s)):\n  * Quota limit hit: quota exceeded: memory 4096/4096 MB\n",
		"Evaluation \"b2b2b2b2\" is blocked: position 2 of 7 in the queue; quota \"team\" exhausted: waiting for its usage to fall",
	} {
		if res.code != 0 || !strings.Contains(res.stdout, want) {
			t.Errorf("exit %d; output lacks %q:\n%s", res.code, want, res.stdout)
		}
	}
}
