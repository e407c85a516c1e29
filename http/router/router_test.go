package router

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/julienschmidt/httprouter"
)

// TestRouterMatching checks the router's precedence and parameters on a
// table of routes shaped like the API's.
func TestRouterMatching(t *testing.T) {
	rt := New()
	rt.RedirectTrailingSlash = false
	reply := func(name string) httprouter.Handle {
		return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
			var parts []string
			for _, p := range ps {
				parts = append(parts, p.Key+"="+p.Value)
			}
			w.Write([]byte(name + " " + strings.Join(parts, ",")))
		}
	}
	rt.Handle("GET", "/v1/node/pools", reply("pools"))
	rt.Handle("GET", "/v1/node/:node_id", reply("node"))
	rt.Handle("GET", "/v1/node/:node_id/allocations", reply("node-allocs"))
	rt.Handle("GET", "/v1/node/pool/:pool_name", reply("pool"))
	rt.Handle("GET", "/v1/node/pool/:pool_name/nodes", reply("pool-nodes"))
	rt.Handle("PUT", "/v1/node/register", reply("register"))
	rt.Handle("GET", "/v1/deployment/allocations/:id", reply("deployment-allocs"))
	rt.Handle("GET", "/v1/deployment/:id", reply("deployment"))
	rt.Handle("GET", "/", reply("root"))

	cases := []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/v1/node/pools", 200, "pools "},
		{"GET", "/v1/node/abc", 200, "node node_id=abc"},
		{"GET", "/v1/node/pool", 200, "node node_id=pool"}, // only /v1/node/pool/:name is static below "pool"
		{"GET", "/v1/node/pool/gpu", 200, "pool pool_name=gpu"},
		{"GET", "/v1/node/pool/allocations", 200, "pool pool_name=allocations"},
		{"GET", "/v1/node/pool/gpu/nodes", 200, "pool-nodes pool_name=gpu"},
		{"GET", "/v1/node/register/allocations", 200, "node-allocs node_id=register"}, // backtracks to the parameter
		{"GET", "/v1/node/abc/allocations", 200, "node-allocs node_id=abc"},
		{"GET", "/v1/deployment/allocations/d1", 200, "deployment-allocs id=d1"},
		{"GET", "/v1/deployment/allocations", 200, "deployment id=allocations"},
		{"GET", "/v1/deployment/d1", 200, "deployment id=d1"},
		{"GET", "/", 200, "root "},
		{"GET", "/v1/node/", 404, ""}, // a parameter never matches an empty segment
		{"GET", "/v1/node/abc/", 404, ""},
		{"GET", "/v1/node//allocations", 404, ""},
		{"GET", "/v1/node/abc/xyz", 404, ""},    // httprouter's folded route, but no route of ours
		{"DELETE", "/v1/node/abc/xyz", 404, ""}, // likewise, for a method the folded route lacks
		{"GET", "/v1/nodes/x", 404, ""},
		{"DELETE", "/v1/node/pools", 405, ""},
		{"GET", "/v1/node/register", 405, ""},
	}
	for _, tc := range cases {
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.code || (tc.code == 200 && rec.Body.String() != tc.body) {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, rec.Code, rec.Body.String(), tc.code, tc.body)
		}
	}

	rec := httptest.NewRecorder()
	rt.ServeHTTP(rec, httptest.NewRequest("DELETE", "/v1/node/register", nil))
	if got := rec.Header().Get("Allow"); got != "OPTIONS, PUT" {
		t.Errorf("Allow = %q", got)
	}
	rec = httptest.NewRecorder()
	rt.ServeHTTP(rec, httptest.NewRequest("OPTIONS", "/v1/node/pools", nil))
	if rec.Code != 200 || rec.Header().Get("Allow") != "GET, OPTIONS" {
		t.Errorf("OPTIONS: %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
	// Behind the folded /v1/node/:node_id, each route keeps its own methods.
	for path, allow := range map[string]string{"/v1/node/register": "OPTIONS, PUT", "/v1/node/abc": "GET, OPTIONS"} {
		for _, method := range []string{"OPTIONS", "DELETE", "PATCH"} {
			rec = httptest.NewRecorder()
			rt.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
			if want := map[bool]int{true: 200, false: 405}[method == "OPTIONS"]; rec.Code != want || rec.Header().Get("Allow") != allow {
				t.Errorf("%s %s: %d, Allow %q, want %d, %q", method, path, rec.Code, rec.Header().Get("Allow"), want, allow)
			}
		}
	}
}

func TestRouterTrailingSlashRedirect(t *testing.T) {
	rt := New()
	rt.Handle("GET", "/v1/jobs", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {})
	rt.Handle("PUT", "/v1/jobs", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {})
	for method, code := range map[string]int{"GET": http.StatusMovedPermanently, "PUT": http.StatusPermanentRedirect} {
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, httptest.NewRequest(method, "/v1/jobs/?prefix=a", nil))
		if rec.Code != code || rec.Header().Get("Location") != "/v1/jobs?prefix=a" {
			t.Errorf("%s: %d to %q", method, rec.Code, rec.Header().Get("Location"))
		}
	}
	rt.RedirectTrailingSlash = false
	rec := httptest.NewRecorder()
	rt.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/jobs/", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("without redirects: %d", rec.Code)
	}
}

func TestRouterRefusesConflictingRoutes(t *testing.T) {
	h := func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {}
	for name, register := range map[string]func(rt *Router){
		"duplicate":        func(rt *Router) { rt.Handle("GET", "/a/:id", h); rt.Handle("GET", "/a/:id", h) },
		"parameter names":  func(rt *Router) { rt.Handle("GET", "/a/:id", h); rt.Handle("GET", "/a/:name/b", h) },
		"no leading slash": func(rt *Router) { rt.Handle("GET", "a", h) },
		"catch-all":        func(rt *Router) { rt.Handle("GET", "/a/*rest", h) },
		"after serving": func(rt *Router) {
			rt.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
			rt.Handle("GET", "/a", h)
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			register(New())
		}()
	}
}
