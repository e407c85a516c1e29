package command

import (
	"strings"
	"testing"
)

func TestServerMembers(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/agent/members", reply(0, map[string]any{
		"ServerName": "s1", "ServerRegion": "global", "ServerDC": "dc1",
		"Members": []map[string]any{
			{"Name": "s1.global", "Addr": "10.0.0.1", "Port": 4648, "Status": "alive",
				"Tags": map[string]string{"raft_addr": "10.0.0.1:4647", "build": "0.1.0", "dc": "dc1", "region": "global"}},
			{"Name": "s2.global", "Addr": "10.0.0.2", "Port": 4648, "Status": "failed",
				"Tags": map[string]string{"raft_addr": "10.0.0.2:4647", "build": "0.1.0", "dc": "dc1", "region": "global"}},
		},
	}))
	f.on("GET", "/v1/status/leader", reply(0, "10.0.0.2:4647"))
	runCLI(t, f, runOpts{}, "server", "members").check(t, 0, lines(
		"Name       Address   Port  Status  Leader  Build  Datacenter  Region",
		"s1.global  10.0.0.1  4648  alive   false   0.1.0  dc1         global",
		"s2.global  10.0.0.2  4648  failed  true    0.1.0  dc1         global",
	), "")
}

func TestServerJoin(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/agent/join", reply(0, map[string]any{"num_joined": 2, "error": ""}),
		reply(0, map[string]any{"num_joined": 0, "error": "connection refused"}))
	runCLI(t, f, runOpts{}, "server", "join", "10.0.0.2", "10.0.0.3:4648").check(t, 0, "Joined 2 servers successfully\n", "")
	if got := f.requests("PUT /v1/agent/join")[0].Query["address"]; strings.Join(got, ",") != "10.0.0.2,10.0.0.3:4648" {
		t.Errorf("addresses sent: %v", got)
	}
	runCLI(t, f, runOpts{}, "server", "join", "10.9.9.9").check(t, 1, "", "Error joining: connection refused\n")
	if r := runCLI(t, f, runOpts{}, "server", "join"); r.code != 1 || !strings.Contains(r.stderr, "takes 1 to") {
		t.Errorf("join without an address: %+v", r)
	}
}
