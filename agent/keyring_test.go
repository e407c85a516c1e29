package agent

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/raft"
)

func newGossipKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// aliveMembers counts the members s's gossip sees alive.
func aliveMembers(s *testServer) int {
	n := 0
	for _, m := range s.a.cluster.gossip.Members() {
		if m.Status == raft.MemberAlive {
			n++
		}
	}
	return n
}

// The gossip key rotates on every server through one of them (install,
// use, remove), a malformed key or removing the primary changes nothing,
// and a server restarted with the old key in its config comes back on
// the saved keyring and gossips with the others again.
func TestGossipKeyringRotation(t *testing.T) {
	k1, k2 := newGossipKey(t), newGossipKey(t)
	servers := newTestCluster(t, 3, func(c *Config) { c.Server.Encrypt = k1 })
	testutil.WaitFor(t, 20*time.Second, "three members alive everywhere", func() bool {
		for _, s := range servers {
			if aliveMembers(s) != 3 {
				return false
			}
		}
		return true
	})
	c, err := api.NewClient(api.Config{Address: servers[0].url("")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 60*time.Second)
	ag := c.Agent()
	expect := func(step string, keys, primary map[string]int) {
		t.Helper()
		got, err := ag.KeyringList(ctx)
		if err != nil {
			t.Fatalf("%s: list: %v", step, err)
		}
		if got.NumNodes != 3 || !sameCounts(got.Keys, keys) || !sameCounts(got.PrimaryKeys, primary) {
			t.Fatalf("%s: keyring %+v, want keys %v primary %v", step, got, keys, primary)
		}
	}
	expect("start", map[string]int{k1: 3}, map[string]int{k1: 3})
	if _, err := ag.KeyringUse(ctx, k2); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("use of a key not installed: %v", err)
	}
	if _, err := ag.KeyringInstall(ctx, "bm90IGEga2V5"); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("install of a 9-byte key: %v", err)
	}
	if _, err := ag.KeyringInstall(ctx, "%%%"); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("install of a non-base64 key: %v", err)
	}
	for _, tc := range []struct {
		path string
		body any
		code int
	}{
		{"/v1/agent/keyring/rotate", map[string]string{"Key": k2}, 404},
		{"/v1/agent/keyring/install", map[string]string{}, 400},
		{"/v1/agent/keyring/install", "not json", 400},
	} {
		if code, _, body := servers[0].do("POST", tc.path, tc.body); code != tc.code {
			t.Errorf("POST %s %v: %d %s, want %d", tc.path, tc.body, code, body, tc.code)
		}
	}
	expect("after refusals", map[string]int{k1: 3}, map[string]int{k1: 3})

	if r, err := ag.KeyringInstall(ctx, k2); err != nil || r.NumNodes != 3 {
		t.Fatalf("install: %+v, %v", r, err)
	}
	expect("installed", map[string]int{k1: 3, k2: 3}, map[string]int{k1: 3})
	if _, err := ag.KeyringUse(ctx, k2); err != nil {
		t.Fatal(err)
	}
	expect("used", map[string]int{k1: 3, k2: 3}, map[string]int{k2: 3})
	if _, err := ag.KeyringRemove(ctx, k2); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("removing the primary key: %v", err)
	}
	if _, err := ag.KeyringRemove(ctx, k1); err != nil {
		t.Fatal(err)
	}
	expect("removed", map[string]int{k2: 3}, map[string]int{k2: 3})

	// s3 restarts with server.encrypt still k1: its saved keyring wins.
	s3 := servers[2]
	if err := s3.a.Shutdown(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "s1 sees s3 gone", func() bool { return aliveMembers(servers[0]) == 2 })
	s3.start()
	if err := s3.a.WaitForLeader(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "s1 sees s3 alive again", func() bool { return aliveMembers(servers[0]) == 3 })
	if ring, err := s3.a.cluster.gossip.Keyring(); err != nil || ring.Primary != k2 || len(ring.Keys) != 1 {
		t.Fatalf("s3's keyring after restart: %+v, %v", ring, err)
	}
	expect("after restart", map[string]int{k2: 3}, map[string]int{k2: 3})
}

func sameCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
