package http

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/julienschmidt/httprouter"
)

// TestRouteErrorsByAPI: an unknown path or wrong method answers a JSON:API
// error document under /api/v2 and plain text under /v1.
func TestRouteErrorsByAPI(t *testing.T) {
	h := newHarness(t)
	// The management API mounts its routes on the core; one stands in.
	h.srv.Mount(http.MethodGet, "/api/v2/ping", func(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {})
	cases := []struct {
		method, path string
		code         int
		jsonAPI      bool
	}{
		{http.MethodGet, "/api/v2/no-such-thing", http.StatusNotFound, true},
		{http.MethodDelete, "/api/v2/ping", http.StatusMethodNotAllowed, true},
		{http.MethodGet, "/v1/no-such-thing", http.StatusNotFound, false},
		{http.MethodPatch, "/v1/jobs", http.StatusMethodNotAllowed, false},
	}
	for _, tc := range cases {
		rec := httptest.NewRecorder()
		h.srv.Handler().ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.code {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, rec.Code, tc.code)
			continue
		}
		ct := rec.Header().Get("Content-Type")
		if !tc.jsonAPI {
			if !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("%s %s: content type %q, want text/plain", tc.method, tc.path, ct)
			}
			continue
		}
		var doc struct {
			Errors []struct{ Status, Title, Detail string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || len(doc.Errors) != 1 {
			t.Errorf("%s %s: body %q is not one JSON:API error (%v)", tc.method, tc.path, rec.Body, err)
			continue
		}
		if doc.Errors[0].Status != strconv.Itoa(tc.code) || doc.Errors[0].Detail == "" {
			t.Errorf("%s %s: error %+v", tc.method, tc.path, doc.Errors[0])
		}
		if !strings.Contains(ct, "application/vnd.api+json") {
			t.Errorf("%s %s: content type %q", tc.method, tc.path, ct)
		}
	}
}
