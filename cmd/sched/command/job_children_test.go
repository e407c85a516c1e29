package command

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestJobDispatch(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{{ID: "tmpl", Namespace: "prod"}}))
	f.on("PUT", "/v1/job/tmpl/dispatch", reply(8, state.JobDispatchResponse{DispatchedJobID: "tmpl/dispatch-1-abcd1234", EvalID: "e1", EvalCreateIndex: 8}))
	payload := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(payload, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	runCLI(t, f, runOpts{}, "job", "dispatch", "-detach", "-meta", "user=ann", "-meta", "note=a=b",
		"-idempotency-token", "t1", "-id-prefix-template", "nightly", "tmpl", payload).
		check(t, 0, "Dispatched Job ID = tmpl/dispatch-1-abcd1234\nEvaluation ID     = e1\n", "")
	req := f.only("PUT /v1/job/tmpl/dispatch")
	if want := (url.Values{"namespace": {"prod"}, "IdempotencyToken": {"t1"}}); !reflect.DeepEqual(req.Query, want) {
		t.Errorf("query = %v, want %v", req.Query, want)
	}
	var body state.DispatchRequest
	if err := json.Unmarshal(req.Body, &body); err != nil {
		t.Fatal(err)
	}
	if string(body.Payload) != "hello" || body.Meta["user"] != "ann" || body.Meta["note"] != "a=b" || body.IdPrefixTemplate != "nightly" {
		t.Errorf("body = %+v", body)
	}
}

func TestJobDispatchPayloadFromStdinAndLimits(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{{ID: "tmpl"}}))
	f.on("PUT", "/v1/job/tmpl/dispatch", reply(8, state.JobDispatchResponse{DispatchedJobID: "tmpl/dispatch-1-abcd1234"}))
	runCLI(t, f, runOpts{stdin: "from stdin"}, "job", "dispatch", "-json", "tmpl", "-").check(t, 0,
		"{\n    \"DispatchedJobID\": \"tmpl/dispatch-1-abcd1234\",\n    \"EvalID\": \"\",\n    \"EvalCreateIndex\": 0,\n    \"JobCreateIndex\": 0,\n    \"Index\": 0\n}\n", "")
	var body state.DispatchRequest
	_ = json.Unmarshal(f.only("PUT /v1/job/tmpl/dispatch").Body, &body)
	if string(body.Payload) != "from stdin" {
		t.Errorf("payload = %q", body.Payload)
	}
	r := runCLI(t, f, runOpts{stdin: strings.Repeat("x", state.DispatchPayloadSize+1)}, "job", "dispatch", "tmpl", "-")
	if r.code != 1 || !strings.Contains(r.stderr, "payload exceeds 16384 bytes") {
		t.Errorf("oversized payload: code %d, stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, f, runOpts{}, "job", "dispatch", "-meta", "novalue", "tmpl")
	if r.code != 1 || !strings.Contains(r.stderr, `"novalue" is not key=value`) {
		t.Errorf("bad meta: code %d, stderr %q", r.code, r.stderr)
	}
}

func TestJobPeriodicForce(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{{ID: "cron", Namespace: "default"}}))
	f.on("PUT", "/v1/job/cron/periodic/force", reply(8, state.PeriodicForceResponse{EvalID: "e7", EvalCreateIndex: 8}))
	runCLI(t, f, runOpts{}, "job", "periodic", "force", "-detach", "cron").check(t, 0, "Evaluation ID = e7\n", "")
	f.only("PUT /v1/job/cron/periodic/force")
}

// TestJobPeriodicForceMonitorsTheChild: the forced launch's evaluation
// belongs to the child job, not the periodic parent, so the monitor finds
// the child through the evaluation and follows it to the end (it used to
// wait among the parent's evaluations for ever).
func TestJobPeriodicForceMonitorsTheChild(t *testing.T) {
	f := newFakeAPI(t)
	const child = "cron/periodic-1740830400"
	escaped := "/v1/job/" + url.PathEscape(child)
	f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{{ID: "cron", Namespace: "prod"}}))
	f.on("PUT", "/v1/job/cron/periodic/force", reply(8, state.PeriodicForceResponse{EvalID: "e7e7e7e7-full", EvalCreateIndex: 8}))
	f.on("GET", "/v1/evaluation/e7e7e7e7-full", reply(8, &state.Evaluation{ID: "e7e7e7e7-full", Namespace: "prod", JobID: child,
		Status: "pending", TriggeredBy: "periodic-job"}))
	f.on("GET", escaped+"/evaluations", reply(9, []*state.Evaluation{{ID: "e7e7e7e7-full", Namespace: "prod", JobID: child,
		Status: "complete", TriggeredBy: "periodic-job"}}))
	f.on("GET", "/v1/evaluation/e7e7e7e7-full/allocations", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	f.on("GET", escaped+"/allocations", reply(9, []*state.Allocation{
		{ID: "a1a1a1a1-full", EvalID: "e7e7e7e7-full", NodeID: "n1n1n1n1-full", TaskGroup: "run"}}))
	ts := "2025-03-01T12:00:00Z"
	runCLI(t, f, runOpts{}, "job", "periodic", "force", "cron").check(t, 0, lines(
		"Evaluation ID = e7e7e7e7-full",
		"",
		`==> `+ts+`: Monitoring evaluation "e7e7e7e7"`,
		`    `+ts+`: Evaluation triggered by "periodic-job"`,
		`    `+ts+`: Allocation "a1a1a1a1" created: node "n1n1n1n1", group "run"`,
		`==> `+ts+`: Evaluation "e7e7e7e7" finished with status "complete"`,
	), "")
	if q := f.only("GET " + escaped + "/evaluations").Query; q.Get("namespace") != "prod" {
		t.Errorf("child evaluations read in namespace %q, want prod", q.Get("namespace"))
	}
}
