package jobs

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
)

func TestDispatchMakesAChildReadableByItsEscapedID(t *testing.T) {
	h := newHarness(t)
	tmpl := apitest.ParameterizedJob("tmpl")
	tmpl.ParameterizedJob.MetaRequired = []string{"user"}
	tmpl.ParameterizedJob.MetaOptional = []string{"note"}
	h.register(tmpl)

	var out state.JobDispatchResponse
	h.OK("POST", "/v1/job/tmpl/dispatch?IdempotencyToken=t1",
		map[string]any{"Payload": []byte("hello"), "Meta": map[string]string{"user": "ann"}, "IdPrefixTemplate": "nightly"}, &out)
	if !strings.HasPrefix(out.DispatchedJobID, "tmpl/dispatch-nightly-") || out.EvalID == "" || out.Index == 0 {
		t.Fatalf("dispatch = %+v", out)
	}
	// The same token answers the same child.
	var again state.JobDispatchResponse
	h.OK("POST", "/v1/job/tmpl/dispatch?idempotency_token=t1", map[string]any{"Meta": map[string]string{"user": "ann"}}, &again)
	if again.DispatchedJobID != out.DispatchedJobID {
		t.Errorf("same token dispatched %q, want %q", again.DispatchedJobID, out.DispatchedJobID)
	}
	// The child's ID holds a slash: clients send it escaped.
	var child state.Job
	h.OK("GET", "/v1/job/"+url.PathEscape(out.DispatchedJobID), nil, &child)
	if child.ParentID != "tmpl" || !child.Dispatched || string(child.Payload) != "hello" || child.Meta["user"] != "ann" {
		t.Errorf("child = %+v", child)
	}
	var sum state.JobSummary
	h.OK("GET", "/v1/job/tmpl/summary", nil, &sum)
	if c := sum.Children; c == nil || c.Pending+c.Running+c.Dead != 1 {
		t.Errorf("children = %+v, want one", sum.Children)
	}
}

func TestDispatchRefusesWhatTheJobDoesNotAllow(t *testing.T) {
	h := newHarness(t)
	tmpl := apitest.ParameterizedJob("tmpl")
	tmpl.ParameterizedJob.Payload = state.DispatchPayloadRequired
	tmpl.ParameterizedJob.MetaRequired = []string{"user"}
	h.register(tmpl)
	h.register(apitest.TestJob("plain"))
	before := h.writer.Applied
	h.Fail("POST", "/v1/job/tmpl/dispatch", map[string]any{"Meta": map[string]string{"x": "1"}}, 400,
		"Payload", "requires a payload", "missing required keys: user", "not allowed by the job", "x")
	h.Fail("POST", "/v1/job/tmpl/dispatch", map[string]any{"Payload": make([]byte, state.DispatchPayloadSize+1), "Meta": map[string]string{"user": "a"}}, 400, "16384 byte limit")
	h.Fail("POST", "/v1/job/tmpl/dispatch", map[string]any{"Payload": []byte("x"), "Meta": map[string]string{"user": "a"}, "IdPrefixTemplate": "../x"}, 400, "IdPrefixTemplate")
	h.Fail("POST", "/v1/job/plain/dispatch", nil, 400, "not a parameterized job")
	h.Fail("POST", "/v1/job/nope/dispatch", nil, 404)
	if h.writer.Applied != before {
		t.Errorf("%d commands proposed for refused dispatches", h.writer.Applied-before)
	}
}

func TestPeriodicForceLaunchesAChildNow(t *testing.T) {
	h := newHarness(t)
	h.register(apitest.PeriodicJob("cron"))
	h.register(apitest.TestJob("plain"))
	var out state.PeriodicForceResponse
	h.OK("POST", "/v1/job/cron/periodic/force", nil, &out)
	if out.EvalID == "" || out.EvalCreateIndex == 0 {
		t.Fatalf("force = %+v", out)
	}
	childID := state.PeriodicChildID("cron", apitest.Now)
	var child state.Job
	h.OK("GET", "/v1/job/"+url.PathEscape(childID), nil, &child)
	if child.ParentID != "cron" || child.Periodic != nil || child.Type != state.JobTypeBatch {
		t.Errorf("child = %+v", child)
	}
	var ev state.Evaluation
	h.OK("GET", "/v1/evaluation/"+out.EvalID, nil, &ev)
	if ev.JobID != childID || ev.TriggeredBy != state.EvalTriggerPeriodicJob {
		t.Errorf("eval = %+v", ev)
	}
	// A second force in the same second takes the next free second.
	h.OK("POST", "/v1/job/cron/periodic/force", nil, &out)
	var second state.Job
	h.OK("GET", "/v1/job/"+url.PathEscape(state.PeriodicChildID("cron", apitest.Now.Add(time.Second))), nil, &second)
	if second.ParentID != "cron" {
		t.Errorf("second forced child = %+v", second)
	}
	h.Fail("POST", "/v1/job/plain/periodic/force", nil, 400, "not periodic")
	h.Fail("POST", "/v1/job/nope/periodic/force", nil, 404)
}
