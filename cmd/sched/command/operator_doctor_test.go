package command

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// doctorSelf is a server's /v1/agent/self with findings.
func doctorSelf(id string, dev bool, findings ...map[string]string) map[string]any {
	if findings == nil {
		findings = []map[string]string{}
	}
	return map[string]any{
		"config":   map[string]any{"Name": id, "Server": map[string]any{"Enabled": true}},
		"member":   map[string]any{"Name": id + ".global", "Tags": map[string]string{"id": id}},
		"stats":    map[string]map[string]string{},
		"security": map[string]any{"DevMode": dev, "Findings": findings},
	}
}

var (
	raftFinding = map[string]string{"ID": "raft-tls", "Severity": "high", "Message": "the raft port takes any TCP peer", "Fix": "tls { rpc = true }"}
	httpFinding = map[string]string{"ID": "http-tls", "Severity": "medium", "Message": "plain HTTP", "Fix": "tls { http = true }"}
)

func hostOf(f *fakeAPI) string { return strings.TrimPrefix(f.URL, "http://") }

func TestOperatorDoctorChecksEveryServer(t *testing.T) {
	s1, s2 := newFakeAPI(t), newFakeAPI(t)
	s1.on("GET", "/v1/agent/self", reply(0, doctorSelf("s1", false, raftFinding, httpFinding)))
	s1.on("GET", "/v1/agent/members", reply(0, map[string]any{"Members": []map[string]any{
		{"Name": "s1.global", "Status": "alive", "Tags": map[string]string{"id": "s1", "http_addr": hostOf(s1), "region": "global"}},
		{"Name": "s2.global", "Status": "alive", "Tags": map[string]string{"id": "s2", "http_addr": hostOf(s2), "region": "global"}},
		{"Name": "s3.global", "Status": "failed", "Tags": map[string]string{"id": "s3", "http_addr": "10.9.9.9:4646", "region": "global"}},
	}}))
	s2.on("GET", "/v1/agent/self", reply(0, doctorSelf("s2", false)))
	r := runCLI(t, s1, runOpts{env: map[string]string{"SCHED_TOKEN": "secret-1"}}, "operator", "doctor")
	r.check(t, 2, lines(
		"s1.global (server, "+s1.URL+"): 2 open doors",
		"  high    raft-tls: the raft port takes any TCP peer",
		"          fix: tls { rpc = true }",
		"  medium  http-tls: plain HTTP",
		"          fix: tls { http = true }",
		"",
		"s2.global (server, "+s2.URL+"): no open doors",
		"",
		"2 open doors on 1 of 2 agents checked; the production checklist is in docs/security.md.",
	), "")
	if tok := s2.only("GET /v1/agent/self").Header.Get("X-Sched-Token"); tok != "secret-1" {
		t.Errorf("the other server was asked with token %q", tok)
	}

	// -json: every agent, the same exit code.
	r = runCLI(t, s1, runOpts{}, "operator", "doctor", "-json")
	var agents []doctorAgent
	if err := json.Unmarshal([]byte(r.stdout), &agents); err != nil || r.code != 2 {
		t.Fatalf("-json: %v: %+v", err, r)
	}
	if len(agents) != 2 || agents[0].Name != "s1.global" || len(agents[0].Findings) != 2 || agents[0].Findings[0].Fix != "tls { rpc = true }" ||
		agents[1].Name != "s2.global" || agents[1].Findings == nil || len(agents[1].Findings) != 0 {
		t.Errorf("-json agents %+v", agents)
	}
}

func TestOperatorDoctorClean(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/agent/self", reply(0, doctorSelf("s1", false)))
	runCLI(t, f, runOpts{}, "operator", "doctor", "-self").check(t, 0, lines(
		"s1.global (server, "+f.URL+"): no open doors",
		"",
		"No open doors on 1 agent checked.",
	), "")
	if n := len(f.requests("GET /v1/agent/members")); n != 0 {
		t.Errorf("-self listed the members (%d requests)", n)
	}
}

// A dev agent's findings count as any other's.
func TestOperatorDoctorDevAgent(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/agent/self", reply(0, doctorSelf("dev", true, raftFinding)))
	f.on("GET", "/v1/agent/members", reply(0, map[string]any{"Members": []map[string]any{
		{"Name": "dev.global", "Status": "alive", "Tags": map[string]string{"id": "dev", "http_addr": hostOf(f)}},
	}}))
	r := runCLI(t, f, runOpts{}, "operator", "doctor")
	if r.code != 2 || !strings.HasPrefix(r.stdout, "dev.global (server, "+f.URL+") [dev mode]: 1 open door\n") {
		t.Errorf("dev agent: %+v", r)
	}
}

// An agent that cannot be asked, or too old to answer, makes the verdict
// incomplete: exit 1 when nobody reports a door.
func TestOperatorDoctorUnanswered(t *testing.T) {
	s1, old := newFakeAPI(t), newFakeAPI(t)
	s1.on("GET", "/v1/agent/self", reply(0, doctorSelf("s1", false)))
	s1.on("GET", "/v1/agent/members", reply(0, map[string]any{"Members": []map[string]any{
		{"Name": "s1.global", "Status": "alive", "Tags": map[string]string{"id": "s1", "http_addr": hostOf(s1)}},
		{"Name": "s2.global", "Status": "alive", "Tags": map[string]string{"id": "s2", "http_addr": hostOf(old)}},
		{"Name": "s3.global", "Status": "alive", "Tags": map[string]string{"id": "s3", "http_addr": hostOf(old)}},
	}}))
	self := doctorSelf("s2", false)
	delete(self, "security")
	old.on("GET", "/v1/agent/self", reply(0, self), fail(http.StatusForbidden, "Permission denied"))
	r := runCLI(t, s1, runOpts{}, "operator", "doctor")
	r.check(t, 1, lines(
		"s1.global (server, "+s1.URL+"): no open doors",
		"",
		"s2.global (server, "+old.URL+"): not checked: the agent does not report its security findings (a version older than sched operator doctor)",
		"",
		"s3.global (server, "+old.URL+"): not checked: Unexpected response code: 403 (Permission denied)",
		"",
		"No open doors on 3 agents checked.",
	), "")

	// The addressed agent itself failing is an error.
	f := newFakeAPI(t)
	f.on("GET", "/v1/agent/self", fail(http.StatusForbidden, "Permission denied"))
	runCLI(t, f, runOpts{}, "operator", "doctor").check(t, 1, "",
		"Error reading the agent's self: Unexpected response code: 403 (Permission denied)\n")

	// A members list that fails leaves the addressed agent's verdict.
	g := newFakeAPI(t)
	g.on("GET", "/v1/agent/self", reply(0, doctorSelf("s1", false, raftFinding)))
	r = runCLI(t, g, runOpts{}, "operator", "doctor")
	if r.code != 2 || !strings.Contains(r.stderr, "Error listing the other servers (only "+g.URL+" was checked)") {
		t.Errorf("members failing: %+v", r)
	}
}

// A client-only agent is named by its node and lists the servers through
// its server.
func TestOperatorDoctorClientAgent(t *testing.T) {
	c, s1 := newFakeAPI(t), newFakeAPI(t)
	c.on("GET", "/v1/agent/self", reply(0, map[string]any{
		"config":   map[string]any{"Client": map[string]any{"Enabled": true}, "Server": map[string]any{"Enabled": false}},
		"stats":    map[string]map[string]string{"client": {"node_id": "n-1"}},
		"security": map[string]any{"Findings": []map[string]string{httpFinding}},
	}))
	c.on("GET", "/v1/agent/members", reply(0, map[string]any{"Members": []map[string]any{
		{"Name": "s1.global", "Status": "alive", "Tags": map[string]string{"id": "s1", "http_addr": hostOf(s1)}},
	}}))
	s1.on("GET", "/v1/agent/self", reply(0, doctorSelf("s1", false)))
	r := runCLI(t, c, runOpts{}, "operator", "doctor")
	if r.code != 2 || !strings.HasPrefix(r.stdout, "node n-1 (client, "+c.URL+"): 1 open door\n") ||
		!strings.Contains(r.stdout, "s1.global (server, "+s1.URL+"): no open doors\n") {
		t.Errorf("client agent: %+v", r)
	}
}
