package agent

import (
	"crypto/tls"
	"net"
	"os"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
)

// handshake runs a TLS handshake between a client and a server config
// over a loopback connection and returns the client's error, or the
// server's.
func handshake(t *testing.T, dial, serve *tls.Config) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	deadline := time.Now().Add(10 * time.Second)
	srvErr := make(chan error, 1)
	go func() {
		s, err := l.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer s.Close()
		_ = s.SetDeadline(deadline)
		srv := tls.Server(s, serve)
		err = srv.Handshake()
		if err == nil {
			// TLS 1.3: the client's certificate is checked once the
			// client's Finished arrives; read to surface the outcome.
			_, err = srv.Read(make([]byte, 1))
		}
		srvErr <- err
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(deadline)
	cl := tls.Client(c, dial)
	err = cl.Handshake()
	if err == nil {
		_, err = cl.Write([]byte{1})
	}
	sErr := <-srvErr
	c.Close()
	if err == nil && sErr != nil {
		err = sErr
	}
	return err
}

// keysFor writes a certificate for name of ca and loads it.
func keysFor(t *testing.T, ca *testutil.CA, name string, verify *bool) (*tlsKeys, *TLSConfig) {
	t.Helper()
	caFile, certFile, keyFile := ca.WriteFiles(t, name)
	cfg := &TLSConfig{RPC: true, HTTP: true, CAFile: caFile, CertFile: certFile, KeyFile: keyFile, VerifyServerHostname: verify}
	k, err := newTLSKeys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return k, cfg
}

// Raft's TLS: both ends must show a certificate of the CA carrying
// server.<region>.sched; with verify_server_hostname = false any
// certificate of the CA will do; a certificate of another CA never.
func TestRaftTLSPeerNames(t *testing.T) {
	ca, other := testutil.NewCA(t), testutil.NewCA(t)
	off := false
	srvKeys, srvCfg := keysFor(t, ca, "server.global.sched", nil)
	srv := srvCfg.raftTLS(srvKeys, "global")
	clientKeys, clientCfg := keysFor(t, ca, "client.global.sched", nil)
	asClient := clientCfg.raftTLS(clientKeys, "global")
	strangerKeys, strangerCfg := keysFor(t, other, "server.global.sched", nil)
	stranger := strangerCfg.raftTLS(strangerKeys, "global")
	laxKeys, laxCfg := keysFor(t, ca, "server.global.sched", &off)
	lax := laxCfg.raftTLS(laxKeys, "global")

	for _, tc := range []struct {
		name        string
		dial, serve *tls.Config
		ok          bool
	}{
		{"server to server", srv, srv, true},
		{"a client certificate dials a server", asClient, srv, false},
		{"a server dials a client certificate", srv, asClient, false},
		{"another CA dials", stranger, srv, false},
		{"dialing another CA", srv, stranger, false},
		{"verify_server_hostname = false takes a client certificate", asClient, lax, true},
		{"verify_server_hostname = false still refuses another CA", stranger, lax, false},
	} {
		err := handshake(t, tc.dial, tc.serve)
		if (err == nil) != tc.ok {
			t.Errorf("%s: handshake error %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// Reload swaps certificate and CA for new handshakes; a failed reload
// keeps the keys in use.
func TestTLSKeysReload(t *testing.T) {
	ca1, ca2 := testutil.NewCA(t), testutil.NewCA(t)
	keys, cfg := keysFor(t, ca1, "server.global.sched", nil)
	serve, _ := cfg.httpTLS(keys, "global")
	peer1, _ := keysFor(t, ca1, "server.global.sched", nil)
	peer2, _ := keysFor(t, ca2, "server.global.sched", nil)
	if err := handshake(t, peer1.dial("server.global.sched", "server.global.sched"), serve); err != nil {
		t.Fatalf("before reload, a peer of the first CA: %v", err)
	}
	// New files of the second CA at the same paths.
	caFile, certFile, keyFile := ca2.WriteFiles(t, "server.global.sched")
	for from, to := range map[string]string{caFile: cfg.CAFile, certFile: cfg.CertFile, keyFile: cfg.KeyFile} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := keys.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, peer1.dial("server.global.sched", "server.global.sched"), serve); err == nil {
		t.Error("after reload, a peer trusting only the first CA still accepted the server")
	}
	if err := handshake(t, peer2.dial("server.global.sched", "server.global.sched"), serve); err != nil {
		t.Errorf("after reload, a peer of the second CA: %v", err)
	}
	// A broken file: the reload fails, the keys in use stay.
	if err := os.WriteFile(cfg.CertFile, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := keys.Reload(); err == nil {
		t.Fatal("a reload of a broken certificate succeeded")
	}
	if err := handshake(t, peer2.dial("server.global.sched", "server.global.sched"), serve); err != nil {
		t.Errorf("after a failed reload: %v", err)
	}
}
