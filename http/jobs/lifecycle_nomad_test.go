package jobs

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/schedhq/sched/http/internal/apitest"
)

// nomadHeaders serves next to Nomad's Go client: X-Nomad-* request headers
// arrive as X-Sched-*, and X-Sched-* answer headers leave as X-Nomad-*,
// the only translation the compatibility doc promises.
func nomadHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for name, vs := range r.Header {
			if rest, ok := strings.CutPrefix(name, "X-Nomad-"); ok {
				r.Header.Del(name)
				r.Header["X-Sched-"+rest] = vs
			}
		}
		next.ServeHTTP(&nomadHeaderWriter{ResponseWriter: w}, r)
	})
}

type nomadHeaderWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *nomadHeaderWriter) rename() {
	if w.wrote {
		return
	}
	w.wrote = true
	h := w.ResponseWriter.Header()
	for name, vs := range h {
		if rest, ok := strings.CutPrefix(name, "X-Sched-"); ok {
			h.Del(name)
			h["X-Nomad-"+rest] = vs
		}
	}
}

func (w *nomadHeaderWriter) WriteHeader(code int) {
	w.rename()
	w.ResponseWriter.WriteHeader(code)
}

func (w *nomadHeaderWriter) Write(b []byte) (int, error) {
	w.rename()
	return w.ResponseWriter.Write(b)
}

// TestNomadClientScaleErrorEvent: Nomad's Go client records a failed
// scaling attempt as Message plus Error true and no count; sched records it
// as an error event, leaves the count alone and creates no evaluation,
// while a string Error beside a Message stays refused (the spec's "exactly
// one of Message and Error").
func TestNomadClientScaleErrorEvent(t *testing.T) {
	h, _ := newSchedHarness(t)
	h.RegisterNode(apitest.TestNode(1))
	h.register(apitest.TestJob("web"))
	ts := httptest.NewServer(nomadHeaders(h.srv.Handler()))
	defer ts.Close()
	cfg := nomad.DefaultConfig()
	cfg.Address = ts.URL
	c, err := nomad.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	evals := func() int {
		es, err := h.Store.EvalsByJob(nil, "default", "web")
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	evalsBefore := evals()

	out, wm, err := c.Jobs().ScaleWithRequest("web", &nomad.ScalingRequest{
		Target: map[string]string{"Job": "web", "Group": "web"}, Message: "metrics unavailable", Error: true,
		Meta: map[string]any{"source": "autoscaler"},
	}, nil)
	if err != nil {
		t.Fatalf("scale error event: %v", err)
	}
	if out.EvalID != "" || wm.LastIndex == 0 {
		t.Fatalf("answer %+v, index %d", out, wm.LastIndex)
	}
	if n := evals(); n != evalsBefore {
		t.Fatalf("evaluations %d, want %d: an error event creates none", n, evalsBefore)
	}
	if got := h.Job("default", "web").TaskGroups[0].Count; got != 2 {
		t.Fatalf("count %d after an error event, want 2", got)
	}
	st, _, err := c.Jobs().ScaleStatus("web", nil)
	if err != nil {
		t.Fatal(err)
	}
	g := st.TaskGroups["web"]
	if len(g.Events) != 1 || !g.Events[0].Error || g.Events[0].Message != "metrics unavailable" ||
		g.Events[0].Count != nil || g.Events[0].EvalID != nil || g.Events[0].Meta["source"] != "autoscaler" {
		t.Fatalf("events %+v", g.Events)
	}

	// A message alone, as Nomad's client sends it (Error false), is an
	// ordinary event.
	if _, _, err := c.Jobs().Scale("web", "web", nil, "looked, nothing to do", false, nil, nil); err != nil {
		t.Fatalf("message event: %v", err)
	}
	if st, _, _ := c.Jobs().ScaleStatus("web", nil); len(st.TaskGroups["web"].Events) != 2 || st.TaskGroups["web"].Events[0].Error {
		t.Fatalf("events after a message: %+v", st.TaskGroups["web"].Events)
	}

	// The spec's string form: a message in Error and another in Message
	// is ambiguous, and an error event never carries a count.
	before := h.Writes()
	h.Fail(http.MethodPost, "/v1/job/web/scale", map[string]any{"Message": "a", "Error": "b",
		"Target": map[string]string{"Group": "web"}}, http.StatusBadRequest, "Message")
	h.Fail(http.MethodPost, "/v1/job/web/scale", map[string]any{"Message": "a", "Error": true, "Count": 3,
		"Target": map[string]string{"Group": "web"}}, http.StatusBadRequest, "Count")
	h.Fail(http.MethodPost, "/v1/job/web/scale", map[string]any{"Target": map[string]string{"Group": "web"}},
		http.StatusBadRequest, "Message")
	if h.Writes() != before {
		t.Fatal("refused scales wrote")
	}
}

// TestNomadClientRescheduleOff: `reschedule { attempts = 0  unlimited =
// false }`, Nomad's documented way to turn rescheduling off, survives a
// parse without Canonicalize and a registration through Nomad's Go client:
// the registered group does not reschedule. The same block at the job's
// level (also documented) applies to every group that has none.
func TestNomadClientRescheduleOff(t *testing.T) {
	h, _ := newSchedHarness(t)
	ts := httptest.NewServer(nomadHeaders(h.srv.Handler()))
	defer ts.Close()
	cfg := nomad.DefaultConfig()
	cfg.Address = ts.URL
	c, err := nomad.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const src = `job "off" {
  reschedule {
    attempts  = 0
    unlimited = false
  }
  group "inherits" {
    task "t" {
      driver = "mock"
    }
  }
  group "own" {
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "t" {
      driver = "mock"
    }
  }
  group "overrides" {
    reschedule {
      unlimited = true
    }
    task "t" {
      driver = "mock"
    }
  }
}
`
	job, err := c.Jobs().ParseHCLOpts(&nomad.JobsParseRequest{JobHCL: src})
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range job.TaskGroups[:2] {
		rp := tg.ReschedulePolicy
		if rp == nil || rp.Attempts == nil || *rp.Attempts != 0 || rp.Unlimited == nil || *rp.Unlimited {
			t.Fatalf("group %s parsed with reschedule policy %+v, want attempts 0 and unlimited false set", *tg.Name, rp)
		}
	}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	stored := h.Job("default", "off")
	for _, tg := range stored.TaskGroups {
		rp := tg.ReschedulePolicy
		want := tg.Name == "overrides"
		if rp == nil || rp.Unlimited != want || rp.Attempts != 0 {
			t.Errorf("group %s registered with reschedule policy %+v, want unlimited %v and no attempts", tg.Name, rp, want)
		}
	}
}

// TestNomadClientPlanReplacesFailed: a job whose allocations failed (and
// wait for their reschedule delay) plans a new version that changes the
// task as destructive updates of them (max_parallel, 1 by default, at a
// time), not "ignore", as Nomad does; a version that changes only the
// count leaves them waiting.
func TestNomadClientPlanReplacesFailed(t *testing.T) {
	h, _ := newSchedHarness(t)
	h.RegisterNode(apitest.TestNode(1))
	ts := httptest.NewServer(nomadHeaders(h.srv.Handler()))
	defer ts.Close()
	cfg := nomad.DefaultConfig()
	cfg.Address = ts.URL
	c, err := nomad.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := func(arg string, count int) string {
		return `job "web" {
  datacenters = ["dc1"]
  group "web" {
    count = ` + itoa(count) + `
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["` + arg + `"]
      }
    }
  }
}
`
	}
	v0, err := c.Jobs().ParseHCL(src("60", 2), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Register(v0, nil); err != nil {
		t.Fatal(err)
	}
	stored := h.Job("default", "web")
	h.PlaceAlloc(1, stored, apitest.NodeID(1), "failed")
	h.PlaceAlloc(2, stored, apitest.NodeID(1), "failed")

	for _, tc := range []struct {
		name                       string
		arg                        string
		count                      int
		destructive, ignore, place uint64
	}{
		{"task changed", "120", 2, 1, 1, 0},
		{"count only", "60", 3, 0, 2, 1},
	} {
		job, err := c.Jobs().ParseHCL(src(tc.arg, tc.count), true)
		if err != nil {
			t.Fatal(err)
		}
		plan, _, err := c.Jobs().Plan(job, false, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		u := plan.Annotations.DesiredTGUpdates["web"]
		if u == nil || u.DestructiveUpdate != tc.destructive || u.Ignore != tc.ignore || u.Place != tc.place {
			t.Errorf("%s: plan annotations %+v, want %d destructive, %d ignore, %d place", tc.name, u, tc.destructive, tc.ignore, tc.place)
		}
	}
}
