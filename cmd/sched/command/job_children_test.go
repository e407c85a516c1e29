package command

import (
	"encoding/json"
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
