package agent

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/raft"
)

// writeTestPKI writes a new CA and a server certificate for name (key
// pair files) into a temporary directory and returns the three paths.
func writeTestPKI(t *testing.T, name string) (caFile, certFile, keyFile string) {
	t.Helper()
	return testutil.NewCA(t).WriteFiles(t, name)
}

func TestTLSBlock(t *testing.T) {
	c := &Config{}
	if err := c.LoadFile(writeConfig(t, "data_dir = \"/d\"\nserver { enabled = true }\ntls {\n  rpc = true\n  ca_file = \"ca.pem\"\n}\n")); err != nil {
		t.Fatal(err)
	}
	err := c.Finish()
	for _, want := range []string{"tls.cert_file", "tls.key_file"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("rpc without files: %v, want it to name %s", err, want)
		}
	}
	caFile, certFile, keyFile := writeTestPKI(t, raftServerName("global"))
	for src, want := range map[string]bool{"": true, "verify_server_hostname = true\n": true, "verify_server_hostname = false\n": false} {
		c := &Config{}
		if err := c.LoadFile(writeConfig(t, "tls {\n"+src+"}\n")); err != nil {
			t.Fatal(err)
		}
		if got := c.TLS.verifyHostname(); got != want {
			t.Errorf("%q: verify_server_hostname %v, want %v", src, got, want)
		}
	}
	tc := TLSConfig{RPC: true, CAFile: caFile, CertFile: certFile, KeyFile: keyFile}
	keys, err := newTLSKeys(&tc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := tc.raftTLS(keys, "global")
	if cfg.ServerName != "server.global.sched" || cfg.GetConfigForClient == nil || cfg.GetClientCertificate == nil {
		t.Fatalf("raftTLS: %+v", cfg)
	}
	if off, err := newTLSKeys(&TLSConfig{}); off != nil || err != nil {
		t.Errorf("rpc off: %v, %v", off, err)
	}
}

// A server with raft over mutual TLS bootstraps and commits writes.
func TestAgentWithRaftTLS(t *testing.T) {
	caFile, certFile, keyFile := writeTestPKI(t, raftServerName("global"))
	a := startDevAgent(t, func(c *Config) {
		c.TLS = TLSConfig{RPC: true, CAFile: caFile, CertFile: certFile, KeyFile: keyFile}
	})
	if _, _, err := apiClient(t, a.HTTPAddr()).Jobs().Register(context.Background(), mockJob("web", 1), nil, nil); err != nil {
		t.Fatalf("register through a TLS raft: %v", err)
	}
	// The raft port speaks TLS: a plain client's bytes get no raft answer.
	conn, err := tls.Dial("tcp", a.cfg.RaftAddr(), &tls.Config{InsecureSkipVerify: true}) // a peer with no certificate
	if err == nil {
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = conn.Write([]byte{0}) // RPC type AppendEntries; a TLS 1.3 server refuses the missing certificate here
		if err == nil {
			_, err = conn.Read(make([]byte, 1))
		}
		conn.Close()
	}
	if err == nil {
		t.Error("a peer without a certificate talked to the raft port")
	}
}

// With raft TLS on, the leader does not add a server that gossip found
// when its raft port shows no certificate of the cluster's CA: a rogue
// server that joins by gossip is not made a voter.
func TestVetJoinerNeedsRaftCertificate(t *testing.T) {
	caFile, certFile, keyFile := writeTestPKI(t, raftServerName("global"))
	for src, want := range map[string]bool{"": true, "verify_server_hostname = true\n": true, "verify_server_hostname = false\n": false} {
		c := &Config{}
		if err := c.LoadFile(writeConfig(t, "tls {\n"+src+"}\n")); err != nil {
			t.Fatal(err)
		}
		if got := c.TLS.verifyHostname(); got != want {
			t.Errorf("%q: verify_server_hostname %v, want %v", src, got, want)
		}
	}
	tc := TLSConfig{RPC: true, CAFile: caFile, CertFile: certFile, KeyFile: keyFile}
	keys, err := newTLSKeys(&tc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := tc.raftTLS(keys, "global")
	plain := testutil.PlainListener(t)
	c := &clusterState{a: &Agent{raftTLS: cfg}}
	rogue := raft.Member{ServerMeta: raft.ServerMeta{ID: "rogue", RaftAddr: plain.Addr().String(), Region: "global"}}
	err = c.vetJoiner(ctxT(t, 10*time.Second), rogue)
	if err == nil || !strings.Contains(err.Error(), "certificate") || c.refused.Load() != 1 {
		t.Fatalf("vetJoiner of a server without a certificate: %v (refused %d)", err, c.refused.Load())
	}
}
