package http

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/schedhq/sched/http/clientapi"
	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

var testSecurity = &state.AgentSecurity{Findings: []state.SecurityFinding{
	{ID: "raft-tls", Severity: state.SeverityHigh, Message: "the raft port takes any TCP peer", Fix: "tls { rpc = true }"},
}}

// securityForwarder answers Self with findings.
type securityForwarder struct{ selfForwarder }

func (securityForwarder) Self() *state.AgentSelf {
	self := selfForwarder{}.Self()
	self.Security = testSecurity
	return self
}

// A server's /v1/agent/self carries the agent's findings under
// "security", beside Nomad's keys.
func TestAgentSelfReportsSecurity(t *testing.T) {
	h := newHarnessWith(t, store.Config{}, func(c *testConfig) { c.Forwarder = securityForwarder{} })
	var raw map[string]json.RawMessage
	h.OK(http.MethodGet, "/v1/agent/self", nil, &raw)
	for _, k := range []string{"config", "stats", "security"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("agent/self lacks %q: %v", k, raw)
		}
	}
	var self state.AgentSelf
	h.OK(http.MethodGet, "/v1/agent/self", nil, &self)
	if self.Security == nil || len(self.Security.Findings) != 1 || self.Security.Findings[0] != testSecurity.Findings[0] {
		t.Errorf("security %+v", self.Security)
	}
	// An agent that reports none leaves the key out, as older ones do.
	h2 := newHarnessWith(t, store.Config{}, func(c *testConfig) { c.Forwarder = selfForwarder{} })
	raw = nil
	h2.OK(http.MethodGet, "/v1/agent/self", nil, &raw)
	if _, ok := raw["security"]; ok {
		t.Errorf("security without findings set: %s", raw["security"])
	}
}

// A client-only agent's own /v1/agent/self carries its findings too.
func TestClientAgentSelfReportsSecurity(t *testing.T) {
	for _, sec := range []*state.AgentSecurity{testSecurity, nil} {
		fc := &fakeClientAPI{nodeID: apitest.NodeID(1)}
		srv := httptest.NewServer(clientapi.NewHandlerWith(fc, slog.New(slog.NewTextHandler(io.Discard, nil)), clientapi.HandlerConfig{Security: sec}))
		resp, err := http.Get(srv.URL + "/v1/agent/self")
		if err != nil {
			t.Fatal(err)
		}
		var self state.AgentSelf
		err = json.NewDecoder(resp.Body).Decode(&self)
		resp.Body.Close()
		srv.Close()
		if err != nil || resp.StatusCode != http.StatusOK || self.Stats["client"]["node_id"] != apitest.NodeID(1) {
			t.Fatalf("agent/self: %d %+v %v", resp.StatusCode, self, err)
		}
		if (sec == nil) != (self.Security == nil) || (sec != nil && self.Security.Findings[0].ID != "raft-tls") {
			t.Errorf("security %+v, want %+v", self.Security, sec)
		}
	}
}
