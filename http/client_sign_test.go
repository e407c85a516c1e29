package http

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

func TestClientSignature(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	key := state.HashSecret("node-secret")
	const uri = "/v1/client/fs/logs/a1?task=web&follow=true"
	good := signClientRequest(key, "GET", uri, now)
	if err := verifyClientRequest(good, key, "GET", uri, now.Add(time.Minute)); err != nil {
		t.Fatalf("a fresh signature is refused: %v", err)
	}
	cases := []struct {
		name                    string
		value, key, method, uri string
		at                      time.Time
	}{
		{"another node's key", good, state.HashSecret("other"), "GET", uri, now},
		{"another method", good, key, "POST", uri, now},
		{"another path", good, key, "GET", "/v1/client/fs/logs/a2?task=web&follow=true", now},
		{"another query", good, key, "GET", "/v1/client/fs/logs/a1?task=db&follow=true", now},
		{"too old", good, key, "GET", uri, now.Add(clientSignatureMaxAge + time.Second)},
		{"from the future", good, key, "GET", uri, now.Add(-clientSignatureMaxAge - time.Second)},
		{"the old marker", "1", key, "GET", uri, now},
		{"no MAC", "v1:1800000000:", key, "GET", uri, now},
		{"moved timestamp", "v1:1800000001:" + good[len("v1:1800000000:"):], key, "GET", uri, now},
		{"unregistered node", good, "", "GET", uri, now},
	}
	for _, tc := range cases {
		if err := verifyClientRequest(tc.value, tc.key, tc.method, tc.uri, tc.at); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

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
	h := NewClientHandler(fc, nil)
	const path = "/v1/client/allocation/a1/stats"
	for _, tc := range []struct {
		name, sig string
		want      int
	}{
		{"unsigned", "", http.StatusForbidden},
		{"forged", signClientRequest(state.HashSecret("guess"), "GET", path, time.Now()), http.StatusForbidden},
		{"signed", signClientRequest(fc.hash, "GET", path, time.Now()), http.StatusNotFound}, // served: the double has no such allocation
	} {
		r := httptest.NewRequest("GET", path, nil)
		if tc.sig != "" {
			r.Header.Set(HeaderClientProxied, tc.sig)
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
