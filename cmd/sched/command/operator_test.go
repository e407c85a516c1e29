package command

import (
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOperatorRaft(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/operator/raft/configuration", reply(7, map[string]any{"Index": 7, "Servers": []map[string]any{
		{"ID": "aaaa", "Node": "s1", "Address": "10.0.0.1:4647", "Leader": true, "Voter": true, "RaftProtocol": "3"},
		{"ID": "bbbb", "Node": "", "Address": "10.0.0.2:4647", "Leader": false, "Voter": true, "RaftProtocol": "3"},
	}}))
	runCLI(t, f, runOpts{}, "operator", "raft", "list-peers", "-stale").check(t, 0, lines(
		"Node    ID    Address        State     Voter  RaftProtocol",
		"s1      aaaa  10.0.0.1:4647  leader    true   3",
		"<none>  bbbb  10.0.0.2:4647  follower  true   3",
	), "")
	if q := f.only("GET /v1/operator/raft/configuration").Query; q.Get("stale") != "true" {
		t.Errorf("-stale not sent: %v", q)
	}

	f.on("DELETE", "/v1/operator/raft/peer", reply(0, nil), fail(http.StatusNotFound, "no server with ID zzz in the raft configuration"))
	runCLI(t, f, runOpts{}, "operator", "raft", "remove-peer", "-peer-id", "bbbb").check(t, 0, "Removed peer with ID \"bbbb\"\n", "")
	runCLI(t, f, runOpts{}, "operator", "raft", "remove-peer", "-peer-address", "10.0.0.3:4647").check(t, 1, "",
		"Error removing the peer: Unexpected response code: 404 (no server with ID zzz in the raft configuration)\n")
	reqs := f.requests("DELETE /v1/operator/raft/peer")
	if reqs[0].Query.Get("id") != "bbbb" || reqs[1].Query.Get("address") != "10.0.0.3:4647" {
		t.Errorf("remove-peer queries %v, %v", reqs[0].Query, reqs[1].Query)
	}
	runCLI(t, f, runOpts{}, "operator", "raft", "remove-peer").check(t, 1, "", "Error: exactly one of -peer-id and -peer-address is required\n")
}

func TestOperatorSnapshotSaveAndRestore(t *testing.T) {
	archive := "\x1f\x8bsnapshot-bytes"
	f := newFakeAPI(t)
	f.on("GET", "/v1/operator/snapshot", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, archive) })
	f.on("PUT", "/v1/operator/snapshot", reply(0, nil), fail(http.StatusBadRequest, "invalid snapshot archive: checksum mismatch"))
	dir := t.TempDir()
	path := filepath.Join(dir, "backup.snap")
	runCLI(t, f, runOpts{}, "operator", "snapshot", "save", path).check(t, 0, "State file written to "+path+" (16 bytes)\n", "")
	if b, err := os.ReadFile(path); err != nil || string(b) != archive {
		t.Fatalf("saved file %q, %v", b, err)
	}
	runCLI(t, f, runOpts{}, "operator", "snapshot", "restore", path).check(t, 0, "Snapshot Restored\n", "")
	if got := f.requests("PUT /v1/operator/snapshot")[0].Body; string(got) != archive {
		t.Errorf("restore sent %q", got)
	}
	runCLI(t, f, runOpts{}, "operator", "snapshot", "restore", path).check(t, 1, "",
		"Error restoring the snapshot: Unexpected response code: 400 (invalid snapshot archive: checksum mismatch)\n")

	// A failed save leaves no file behind.
	f2 := newFakeAPI(t)
	f2.on("GET", "/v1/operator/snapshot", fail(http.StatusServiceUnavailable, "no cluster leader"))
	bad := filepath.Join(dir, "bad.snap")
	runCLI(t, f2, runOpts{}, "operator", "snapshot", "save", bad).check(t, 1, "", "Error taking the snapshot: Unexpected response code: 503 (no cluster leader)\n")
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files left: %v", entries)
	}
}

func TestOperatorGossipKeyring(t *testing.T) {
	const k1, k2 = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB="
	f := newFakeAPI(t)
	f.on("GET", "/v1/agent/keyring/list", reply(0, map[string]any{"NumNodes": 3,
		"Keys": map[string]int{k1: 3, k2: 2}, "PrimaryKeys": map[string]int{k1: 3}}))
	runCLI(t, f, runOpts{}, "operator", "gossip", "keyring", "list").check(t, 0, lines(
		"Key                                           Servers  Primary on",
		k1+"  3/3      3/3",
		k2+"  2/3      0/3",
	), "")
	f.on("POST", "/v1/agent/keyring/install", reply(0, map[string]any{"NumNodes": 3}),
		fail(http.StatusInternalServerError, "keyring install failed on 1 of 3 servers: s2: connection refused"))
	runCLI(t, f, runOpts{}, "operator", "gossip", "keyring", "install", k2).check(t, 0, "Installed the key on 3 servers\n", "")
	if got := string(f.requests("POST /v1/agent/keyring/install")[0].Body); !strings.Contains(got, `"Key":"`+k2+`"`) {
		t.Errorf("install sent %s", got)
	}
	runCLI(t, f, runOpts{}, "operator", "gossip", "keyring", "install", k2).check(t, 1, "",
		"Error changing the gossip keyring: Unexpected response code: 500 (keyring install failed on 1 of 3 servers: s2: connection refused)\n")
	if r := runCLI(t, f, runOpts{}, "operator", "gossip", "keyring", "use"); r.code != 1 {
		t.Errorf("use without a key: %+v", r)
	}
	r := runCLI(t, f, runOpts{}, "operator", "gossip", "keyring", "generate")
	if key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(r.stdout)); r.code != 0 || err != nil || len(key) != 32 {
		t.Errorf("generate: %+v (%v)", r, err)
	}
}
