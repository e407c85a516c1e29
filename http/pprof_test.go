package http

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"testing"
)

// The runtime profiles are served with enable_debug (or ACLs on), as
// pprof's gzipped protobuf; their parameters are bounded.
func TestAgentPprof(t *testing.T) {
	off := clusterHarness(t, newFakeForwarder(), nil)
	off.Fail("GET", "/v1/agent/pprof/heap", nil, http.StatusForbidden, "enable_debug")

	h := clusterHarness(t, newFakeForwarder(), func(c *testConfig) { c.EnableDebug = true })
	for _, p := range []string{"heap", "goroutine", "allocs"} {
		rec := h.OK("GET", "/v1/agent/pprof/"+p, nil, nil)
		zr, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
		if err != nil {
			t.Fatalf("%s: not a gzipped profile: %v", p, err)
		}
		if b, err := io.ReadAll(zr); err != nil || len(b) == 0 {
			t.Errorf("%s: empty profile (%v)", p, err)
		}
	}
	if rec := h.OK("GET", "/v1/agent/pprof/goroutine?debug=1", nil, nil); !bytes.Contains(rec.Body.Bytes(), []byte("goroutine profile:")) {
		t.Errorf("goroutine?debug=1: %.200s", rec.Body.String())
	}
	if rec := h.OK("GET", "/v1/agent/pprof/profile?seconds=1", nil, nil); rec.Body.Len() == 0 {
		t.Error("an empty CPU profile")
	}
	h.Fail("GET", "/v1/agent/pprof/profile?seconds=301", nil, http.StatusBadRequest, "seconds")
	h.Fail("GET", "/v1/agent/pprof/profile?seconds=x", nil, http.StatusBadRequest, "seconds")
	h.Fail("GET", "/v1/agent/pprof/secrets", nil, http.StatusNotFound, "profile")
}
