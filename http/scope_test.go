package http

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/http/jobs"
	"github.com/schedhq/sched/state"
)

// The rules of requestScope, one request each: what the namespace
// resolves to, or the 400 and what it names.
func TestResolveScope(t *testing.T) {
	cases := []struct {
		name, target string
		// body is a job write's body, read as the guard reads it; "" for
		// none.
		body string
		ns   string
		err  string // a 400 mentioning this, "" for none
	}{
		{name: "none", target: "/v1/jobs", ns: "default"},
		{name: "empty value", target: "/v1/jobs?namespace=", ns: "default"},
		{name: "plain", target: "/v1/jobs?namespace=team-b", ns: "team-b"},
		{name: "encoded key", target: "/v1/jobs?%6eamespace=team-b", ns: "team-b"},
		{name: "encoded key, upper case", target: "/v1/jobs?%6E%61mespace=team-b", ns: "team-b"},
		{name: "encoded value", target: "/v1/jobs?namespace=%74eam-b", ns: "team-b"},
		{name: "plus is a space", target: "/v1/jobs?namespace=team+b", ns: "team b"},
		{name: "star", target: "/v1/jobs?namespace=*", ns: "*"},
		{name: "same value twice", target: "/v1/jobs?namespace=team-b&%6eamespace=team-b", ns: "team-b"},
		{name: "two values", target: "/v1/jobs?namespace=default&namespace=team-b", err: `namespace: given more than once with different values ("default", "team-b")`},
		{name: "two values, encoded", target: "/v1/jobs?namespace=team-b&%6eamespace=default", err: "namespace: given more than once"},
		{name: "empty and a value", target: "/v1/jobs?namespace=&namespace=team-b", err: "namespace: given more than once"},
		{name: "bad escape in a value", target: "/v1/jobs?namespace=%zz", err: "query: invalid URL escape"},
		{name: "bad escape in a key", target: "/v1/jobs?%zz=1&namespace=default", err: "query: invalid URL escape"},
		{name: "semicolon", target: "/v1/jobs?namespace=default;namespace=team-b", err: "query: invalid semicolon"},
		{name: "two tasks", target: "/v1/jobs?task=a&task=b", err: "task: given more than once"},
		{name: "two allocations", target: "/v1/jobs?alloc_id=a&allocID=b", err: `alloc_id: "a" and allocID "b" disagree`},
		{name: "body alone", target: "/v1/jobs", body: `{"Job":{"ID":"x","Namespace":"team-b"}}`, ns: "team-b"},
		{name: "body agrees", target: "/v1/jobs?namespace=team-b", body: `{"Job":{"ID":"x","Namespace":"team-b"}}`, ns: "team-b"},
		{name: "body names none", target: "/v1/jobs?namespace=team-b", body: `{"Job":{"ID":"x"}}`, ns: "team-b"},
		{name: "body disagrees", target: "/v1/jobs?namespace=default", body: `{"Job":{"ID":"x","Namespace":"team-b"}}`, err: `namespace in query "default" and body "team-b" disagree`},
		{name: "body disagrees with an encoded key", target: "/v1/jobs?%6eamespace=default", body: `{"Job":{"Namespace":"team-b"}}`, err: "disagree"},
		{name: "body key in another case", target: "/v1/jobs?namespace=default", body: `{"job":{"namespace":"team-b"}}`, err: "disagree"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r *http.Request
			if c.body != "" {
				r = httptest.NewRequest(http.MethodPost, c.target, strings.NewReader(c.body))
			} else {
				r = httptest.NewRequest(http.MethodGet, c.target, nil)
			}
			sc, err := resolveQuery(r)
			if err == nil && c.body != "" {
				err = sc.readBody(r)
			}
			if c.err != "" {
				if err == nil || codec.StatusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v (%d), want a 400 mentioning %q", err, codec.StatusOf(err), c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sc.namespace != c.ns {
				t.Errorf("namespace %q, want %q", sc.namespace, c.ns)
			}
			if scoped, _ := withScope(r, sc); namespaceOf(scoped) != c.ns {
				t.Errorf("namespaceOf %q, want %q", namespaceOf(scoped), c.ns)
			}
			if got := namespaceOf(r); c.body == "" && got != c.ns {
				t.Errorf("namespaceOf without a scope (a client agent's) %q, want %q", got, c.ns)
			}
		})
	}
}

// The handler of a job write settles the body's namespace by the guard's
// rule when the guard did not read the body (enforcement off), and never
// places a job anywhere but where the guard checked when it did.
func TestPlaceJob(t *testing.T) {
	scoped := func(target string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, target, nil)
		sc, err := resolveQuery(r)
		if err != nil {
			t.Fatal(err)
		}
		r, _ = withScope(r, sc)
		return r
	}
	cases := []struct {
		target, jobNS, want, err string
	}{
		{"/v1/jobs", "", "default", ""},
		{"/v1/jobs", "team-b", "team-b", ""},
		{"/v1/jobs?%6eamespace=team-b", "", "team-b", ""},
		{"/v1/jobs?namespace=team-b", "team-b", "team-b", ""},
		{"/v1/jobs?namespace=default", "team-b", "", `namespace in query "default" and body "team-b" disagree`},
	}
	for _, c := range cases {
		r := scoped(c.target)
		job := &state.Job{ID: "x", Namespace: c.jobNS}
		err := placeJob(r, job)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s, job in %q: %v, want %q", c.target, c.jobNS, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s, job in %q: %v", c.target, c.jobNS, err)
		case c.err == "" && (job.Namespace != c.want || namespaceOf(r) != c.want):
			t.Errorf("%s, job in %q: placed in %q (scope %q), want %q", c.target, c.jobNS, job.Namespace, namespaceOf(r), c.want)
		}
	}
	// The guard read the body as team-b: a handler decoding another
	// namespace from it must not write there.
	r := scoped("/v1/jobs")
	sc := scopeOf(r)
	sc.bodyRead = true
	if err := sc.settle("team-b"); err != nil {
		t.Fatal(err)
	}
	if err := placeJob(r, &state.Job{ID: "x", Namespace: "other"}); err == nil || codec.StatusOf(err) != http.StatusBadRequest {
		t.Errorf("a job in another namespace than the guard read: %v", err)
	}
}

// Through the handlers, with enforcement on and off alike: an ambiguous
// or unparsable query is a 400, and a register lands where the request
// named, whichever way it was spelled.
func TestNamespaceResolutionThroughHandlers(t *testing.T) {
	for _, enforce := range []bool{false, true} {
		a := newACLHarness(t, enforce, "")
		mgmt := a.ManagementToken()
		a.OKAs(mgmt, http.MethodPut, "/v1/namespace/team-b", map[string]string{"Description": "b"}, nil)
		a.FailAs(mgmt, http.MethodGet, "/v1/jobs?namespace=default&namespace=team-b", nil, http.StatusBadRequest, "namespace: given more than once")
		a.FailAs(mgmt, http.MethodGet, "/v1/jobs?namespace=%zz", nil, http.StatusBadRequest, "invalid URL escape")
		a.FailAs(mgmt, http.MethodGet, "/v1/nodes?%zz", nil, http.StatusBadRequest, "invalid URL escape")
		a.OKAs(mgmt, http.MethodPost, "/v1/jobs?%6eamespace=team-b", &jobs.JobRegisterRequest{Job: apitest.TestJob("enc")}, nil)
		if a.Job("team-b", "enc") == nil {
			t.Errorf("enforce %v: ?%%6eamespace=team-b registered elsewhere", enforce)
		}
		job := apitest.TestJob("body")
		job.Namespace = "team-b"
		a.OKAs(mgmt, http.MethodPost, "/v1/jobs", &jobs.JobRegisterRequest{Job: job}, nil)
		if a.Job("team-b", "body") == nil {
			t.Errorf("enforce %v: body namespace not used", enforce)
		}
		a.FailAs(mgmt, http.MethodPost, "/v1/jobs?namespace=default", &jobs.JobRegisterRequest{Job: job}, http.StatusBadRequest, `namespace in query "default" and body "team-b" disagree`)
		a.FailAs(mgmt, http.MethodPost, "/v1/job/body/plan?namespace=default", &jobs.JobPlanRequest{Job: job}, http.StatusBadRequest, "disagree")
		a.OKAs(mgmt, http.MethodGet, "/v1/job/enc?%6E%61mespace=team-b", nil, nil)
	}
}
