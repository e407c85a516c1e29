package http

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/julienschmidt/httprouter"
	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/http/jobs"
)

// BenchmarkJobReadACL measures GET /v1/job/:id through the handler with
// ACL enforcement off (no token) and on (a client token holding read-job
// on a glob, so the check walks a glob rule). The difference is the cost
// of a check: a SHA-256, two store lookups and a cached ACL; run with
// -count and compare with benchstat.
func BenchmarkJobReadACL(b *testing.B) {
	for _, enforce := range []bool{false, true} {
		name := "off"
		if enforce {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			a := newACLHarness(b, enforce, "")
			a.OKAs(a.ManagementToken(), http.MethodPost, "/v1/jobs", &jobs.JobRegisterRequest{Job: apitest.TestJob("web")}, nil)
			secret := ""
			if enforce {
				secret = a.ClientToken(`namespace "d*" { capabilities = ["read-job"] }`)
			}
			handler := a.srv.Handler()
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "/v1/job/web", nil)
				if secret != "" {
					req.Header.Set(HeaderToken, secret)
				}
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
				}
			}
		})
	}
}

// BenchmarkACLCheck measures the guard alone on GET /v1/job/:job_id with a
// cached client token: the whole per-request cost of enforcement, less
// sensitive to machine noise than comparing two full reads. The request's
// scope, which every /v1 request resolves whether or not ACLs are on, is
// resolved once beforehand (BenchmarkResolveScope).
func BenchmarkACLCheck(b *testing.B) {
	a := newACLHarness(b, true, "")
	secret := a.ClientToken(`namespace "d*" { capabilities = ["read-job"] }`)
	rule, _ := ruleFor(aclRuleTable(), route{Method: http.MethodGet, Path: "/v1/job/:job_id"})
	req := httptest.NewRequest(http.MethodGet, "/v1/job/web?namespace=default", nil)
	req.Header.Set(HeaderToken, secret)
	sc, err := resolveQuery(req)
	if err != nil {
		b.Fatal(err)
	}
	req, _ = withScope(req, sc)
	ps := httprouter.Params{{Key: "job_id", Value: "web"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.srv.authorize(rule, req, ps); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolveScope measures what every /v1 request pays to have its
// namespace decided once (requestScope): without a query, and with the
// query of a namespaced blocking read.
func BenchmarkResolveScope(b *testing.B) {
	for _, target := range []string{"/v1/job/web", "/v1/job/web?namespace=team-b&index=12&wait=5m"} {
		b.Run(target, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, target, nil)
			b.ReportAllocs()
			for b.Loop() {
				sc, err := resolveQuery(req)
				if err != nil {
					b.Fatal(err)
				}
				if r, _ := withScope(req, sc); namespaceOf(r) == "" {
					b.Fatal("no namespace")
				}
			}
		})
	}
}
