package http

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/schedhq/sched/http/clientapi"
	"github.com/schedhq/sched/state"
)

// signingClient is a client double that knows its node's secret.
type signingClient struct {
	*fakeClientAPI
	hash string
}

func (s signingClient) NodeSecretHash() string { return s.hash }

// A client agent serves a /v1/client request only with a server's valid
// signature: a forged one is a 403, and an unsigned one, with no server
// to send it to, is a 403 too; health stays open.
func TestClientHandlerNeedsServerSignature(t *testing.T) {
	fc := signingClient{fakeClientAPI: &fakeClientAPI{nodeID: "n1", allocs: map[string]*state.Allocation{}}, hash: state.HashSecret("s3cret")}
	h := clientapi.NewHandler(fc, nil)
	const path = "/v1/client/allocation/a1/stats"
	for _, tc := range []struct {
		name, sig string
		want      int
	}{
		{"unsigned", "", http.StatusForbidden},
		{"forged", clientapi.Sign(state.HashSecret("guess"), "GET", path, time.Now()), http.StatusForbidden},
		{"signed", clientapi.Sign(fc.hash, "GET", path, time.Now()), http.StatusNotFound}, // served: the double has no such allocation
	} {
		r := httptest.NewRequest("GET", path, nil)
		if tc.sig != "" {
			r.Header.Set(clientapi.HeaderProxied, tc.sig)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, w.Code, w.Body, tc.want)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/v1/agent/health", nil))
	if w.Code != http.StatusOK {
		t.Errorf("health: %d", w.Code)
	}
}
