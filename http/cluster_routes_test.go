package http

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// leaderlessCluster is a Cluster that knows no leader.
type leaderlessCluster struct{ FakeCluster }

func (*leaderlessCluster) KnownLeader() bool { return false }

func clusterHarness(t *testing.T, fwd *fakeForwarder, adjust func(*testConfig)) *harness {
	t.Helper()
	fwd.leader = true
	return newHarnessWith(t, store.Config{}, func(c *testConfig) {
		c.Forwarder = fwd
		if adjust != nil {
			adjust(c)
		}
	})
}

func TestStatusEndpoints(t *testing.T) {
	fwd := newFakeForwarder()
	fwd.raftLeader = "10.0.0.1:4647"
	fwd.conf = &state.RaftConfiguration{Index: 7, Servers: []*state.RaftServer{
		{ID: "a", Node: "s1", Address: "10.0.0.1:4647", Leader: true, Voter: true, RaftProtocol: "3"},
		{ID: "b", Node: "s2", Address: "10.0.0.2:4647", Voter: true, RaftProtocol: "3"},
		{ID: "c", Node: "s3", Address: "10.0.0.3:4647", Voter: false, RaftProtocol: "3"},
	}}
	h := clusterHarness(t, fwd, nil)

	var leader string
	h.OK("GET", "/v1/status/leader", nil, &leader)
	if leader != "10.0.0.1:4647" {
		t.Errorf("status/leader = %q", leader)
	}
	var peers []string
	h.OK("GET", "/v1/status/peers", nil, &peers)
	if !slices.Equal(peers, []string{"10.0.0.1:4647", "10.0.0.2:4647"}) {
		t.Errorf("status/peers = %v, want the two voters", peers)
	}
	var conf state.RaftConfiguration
	rec := h.OK("GET", "/v1/operator/raft/configuration", nil, &conf)
	if len(conf.Servers) != 3 || conf.Servers[0].Node != "s1" || !conf.Servers[0].Leader || apitest.HeaderIndexOf(t, rec) != 7 {
		t.Errorf("raft configuration %+v", conf)
	}

	fwd.raftLeader = ""
	leader = "unset"
	h.OK("GET", "/v1/status/leader", nil, &leader)
	if leader != "" {
		t.Errorf("status/leader without a leader = %q, want \"\"", leader)
	}
}

func TestAgentEndpoints(t *testing.T) {
	fwd := newFakeForwarder()
	fwd.membersResp = &state.ServerMembers{ServerName: "s1", ServerRegion: "global", ServerDC: "dc1", Members: []*state.AgentMember{
		{Name: "s1.global", Addr: "10.0.0.1", Port: 4648, Status: "alive", Tags: map[string]string{"id": "a"}},
	}}
	h := clusterHarness(t, fwd, nil)

	var members state.ServerMembers
	h.OK("GET", "/v1/agent/members", nil, &members)
	if members.ServerName != "s1" || len(members.Members) != 1 || members.Members[0].Tags["id"] != "a" {
		t.Errorf("members %+v", members)
	}
	var self map[string]json.RawMessage
	h.OK("GET", "/v1/agent/self", nil, &self)
	for _, k := range []string{"config", "member", "stats"} {
		if _, ok := self[k]; !ok {
			t.Errorf("agent/self lacks %q: %v", k, self)
		}
	}
	var health state.AgentHealthResponse
	h.OK("GET", "/v1/agent/health", nil, &health)
	if health.Server == nil || !health.Server.OK || health.Server.Message != "ok" || health.Client != nil {
		t.Errorf("health %+v", health)
	}

	var join state.JoinResponse
	h.OK("PUT", "/v1/agent/join?address=10.0.0.2:4648&address=10.0.0.3,10.0.0.4", nil, &join)
	if join.NumJoined != 3 || join.Error != "" || !slices.Equal(fwd.joined, []string{"10.0.0.2:4648", "10.0.0.3", "10.0.0.4"}) {
		t.Errorf("join %+v, joined %v", join, fwd.joined)
	}
	fwd.joinErr = errors.New("no route to host")
	h.OK("POST", "/v1/agent/join?address=10.9.9.9", nil, &join)
	if join.NumJoined != 0 || join.Error != "no route to host" {
		t.Errorf("failed join %+v", join)
	}
	h.Fail("PUT", "/v1/agent/join", nil, http.StatusBadRequest, "address")
}

func TestAgentHealthWithoutLeaderIs500(t *testing.T) {
	h := clusterHarness(t, newFakeForwarder(), func(c *testConfig) { c.Cluster = &leaderlessCluster{} })
	rec := h.Do("GET", "/v1/agent/health", nil)
	var health state.AgentHealthResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &health); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusInternalServerError || health.Server.OK || health.Server.Message != "No cluster leader" {
		t.Fatalf("health without leader: %d %+v", rec.Code, health.Server)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestOperatorRemovePeer(t *testing.T) {
	fwd := newFakeForwarder()
	h := clusterHarness(t, fwd, nil)
	h.Fail("DELETE", "/v1/operator/raft/peer", nil, http.StatusBadRequest, "exactly one of")
	h.Fail("DELETE", "/v1/operator/raft/peer?id=a&address=b", nil, http.StatusBadRequest, "exactly one of")
	h.OK("DELETE", "/v1/operator/raft/peer?id=abc", nil, nil)
	h.OK("DELETE", "/v1/operator/raft/peer?address=10.0.0.3:4647", nil, nil)
	h.Fail("DELETE", "/v1/operator/raft/peer?id=unknown", nil, http.StatusNotFound, "no server")
	if !slices.Equal(fwd.removed, []string{"abc|", "|10.0.0.3:4647", "unknown|"}) {
		t.Errorf("removed %v", fwd.removed)
	}
}

func TestOperatorSnapshot(t *testing.T) {
	fwd := newFakeForwarder()
	fwd.snapshot = "\x1f\x8b-archive-bytes"
	// A small general body limit: the restore must not be bound by it.
	h := clusterHarness(t, fwd, func(c *testConfig) { c.MaxBodyBytes = 16 })
	handler := h.srv.Handler()

	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/operator/snapshot", nil))
	if rec.Code != 200 || rec.Body.String() != fwd.snapshot || rec.Header().Get("Content-Type") != "application/gzip" {
		t.Fatalf("save: %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}

	big := strings.Repeat("s", 1000)
	rec = httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("PUT", "/v1/operator/snapshot", strings.NewReader(big)))
	if rec.Code != 200 || string(fwd.restored) != big {
		t.Fatalf("restore: %d %q; restored %d bytes", rec.Code, rec.Body.String(), len(fwd.restored))
	}
	fwd.restoreErr = &CodedError{Code: http.StatusBadRequest, Message: "invalid snapshot archive: checksum mismatch"}
	h.Fail("PUT", "/v1/operator/snapshot", "x", http.StatusBadRequest, "checksum mismatch")
	h.Fail("PUT", "/v1/operator/snapshot", nil, http.StatusBadRequest, "snapshot archive")

	// A failure before any byte is an ordinary error answer.
	fwd.snapshot, fwd.snapErr = "", &CodedError{Code: http.StatusServiceUnavailable, Message: "no cluster leader"}
	h.Fail("GET", "/v1/operator/snapshot", nil, http.StatusServiceUnavailable, "no cluster leader")

	// A failure after part of the archive was taken is an error answer
	// too: the archive is spooled before anything is sent.
	fwd.snapshot, fwd.snapErr = "partial", errors.New("disk on fire")
	h.Fail("GET", "/v1/operator/snapshot?stale", nil, http.StatusInternalServerError, "disk on fire")
}

// TestSnapshotDigest: the archive's answer carries its SHA-256 as a
// Digest header (the form Nomad's client checks) and its length.
func TestSnapshotDigest(t *testing.T) {
	fwd := newFakeForwarder()
	fwd.snapshot = "archive bytes"
	h := clusterHarness(t, fwd, nil)
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/v1/operator/snapshot", nil))
	sum := sha256.Sum256([]byte("archive bytes"))
	if got, want := rec.Header().Get("Digest"), "sha-256="+base64.StdEncoding.EncodeToString(sum[:]); got != want {
		t.Errorf("Digest %q, want %q", got, want)
	}
	if rec.Header().Get("Content-Length") != "13" || rec.Body.String() != "archive bytes" {
		t.Errorf("Content-Length %q body %q", rec.Header().Get("Content-Length"), rec.Body.String())
	}
}

func TestInternalReadIndexOnlyOnTheLeader(t *testing.T) {
	fwd := newFakeForwarder()
	fwd.readIndex = 99
	h := clusterHarness(t, fwd, nil)
	var out ReadIndexResponse
	h.OK("GET", ReadIndexPath, nil, &out)
	if out.Index != 99 {
		t.Errorf("read index %d", out.Index)
	}
	fwd.leader = false
	h.Fail("GET", ReadIndexPath, nil, http.StatusServiceUnavailable, "not the leader")
}

func TestClusterRoutesAbsentWithoutForwarder(t *testing.T) {
	h := newHarness(t)
	h.Fail("GET", "/v1/status/leader", nil, http.StatusNotFound, "no such endpoint")
}
