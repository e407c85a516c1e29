//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
)

// clusterPKI is a CA and certificates made by the real `sched tls`
// commands, as the quick start in docs/security.md does.
type clusterPKI struct {
	dir                   string
	ca                    string
	serverCert, serverKey string
	cliCert, cliKey       string
}

// sched runs the binary in dir and fails the test if it fails.
func schedIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(schedBin, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sched %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newClusterPKI makes a CA, a server certificate and a CLI certificate.
func newClusterPKI(t *testing.T) *clusterPKI {
	t.Helper()
	dir := t.TempDir()
	schedIn(t, dir, "tls", "ca", "create")
	schedIn(t, dir, "tls", "cert", "create", "-server")
	schedIn(t, dir, "tls", "cert", "create", "-cli")
	return &clusterPKI{dir: dir, ca: filepath.Join(dir, "sched-agent-ca.pem"),
		serverCert: filepath.Join(dir, "global-server-sched.pem"), serverKey: filepath.Join(dir, "global-server-sched-key.pem"),
		cliCert: filepath.Join(dir, "global-cli-sched.pem"), cliKey: filepath.Join(dir, "global-cli-sched-key.pem")}
}

// apiTLS is the Go client's TLS settings: the CA and the CLI certificate.
// A nil PKI is no TLS.
func (p *clusterPKI) apiTLS() api.TLSConfig {
	if p == nil {
		return api.TLSConfig{}
	}
	return api.TLSConfig{CACert: p.ca, ClientCert: p.cliCert, ClientKey: p.cliKey}
}

// block is the agents' tls block: everything on.
func (p *clusterPKI) block() string {
	return fmt.Sprintf(`
tls {
  rpc                 = true
  http                = true
  verify_https_client = true
  ca_file   = %q
  cert_file = %q
  key_file  = %q
}
`, p.ca, p.serverCert, p.serverKey)
}

// newTLSLoopCluster is newLoopCluster with TLS on raft and HTTP, client
// certificates required, and gossip encrypted: the production checklist.
func newTLSLoopCluster(t *testing.T, n int) *loopCluster {
	t.Helper()
	pki := newClusterPKI(t)
	c := newLoopCluster(t, n, `encrypt = "`+gossipKeyForTest+`"`)
	for _, s := range c.servers {
		s.tls = pki
		f, err := os.OpenFile(s.config, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(pki.block()); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	return c
}

// gossipKeyForTest is a fixed 32-byte key (base64).
const gossipKeyForTest = "c2NoZWQtZTJlLWdvc3NpcC1rZXktMzItYnl0ZXMhISE="

// The porcupine check of namespace writes and reads under leader
// SIGKILLs, on a cluster with mutual TLS on raft and HTTP.
func TestClusterTLSLinearizableUnderLeaderKills(t *testing.T) {
	c := newTLSLoopCluster(t, 3)
	c.startAll()
	c.leader(20 * time.Second)
	history := regHistory(t, loopTargets(c), namespaceRegs, 6, 3, 16*time.Second, func(ctx context.Context, mark func(string, ...any)) {
		for range 2 {
			if !waitCtx(ctx, 3*time.Second) {
				return
			}
			killLeaderFor(ctx, c, 3*time.Second, mark)
		}
		<-ctx.Done()
	})
	if len(history) < 200 {
		t.Fatalf("only %d operations recorded", len(history))
	}
	checkLinearizable(t, history)
}

// servedSerial is the serial number of the certificate s's HTTPS port
// shows now.
func servedSerial(t *testing.T, s *server) string {
	t.Helper()
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(s.tls.ca)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(s.tls.cliCert, s.tls.cliKey)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.http), &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: "server.global.sched"})
	if err != nil {
		t.Fatalf("TLS to %s: %v", s.name, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// On a TLS cluster of real processes: writes acknowledged before every
// server is SIGKILLed are all there after the restart; plain HTTP,
// callers without a certificate and raft peers without one are refused;
// and a server's certificate is replaced with SIGHUP while the cluster
// keeps forwarding writes.
func TestClusterTLSDurabilityRefusalsAndReload(t *testing.T) {
	c := newTLSLoopCluster(t, 3)
	c.startAll()
	leader := c.leader(20 * time.Second)
	follower := c.others(leader)[0]

	// Writes through a follower (forwarded to the leader over HTTPS)
	// and through the leader, from 8 clients, until 300 are acknowledged;
	// then every server is SIGKILLed at once.
	var (
		mu    sync.Mutex
		acked = map[string]uint64{}
		wg    sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(context.Background())
	for w := range 8 {
		target := []*server{leader, follower}[w%2]
		cl := target.client()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				id := fmt.Sprintf("tls-%d-%04d", w, i)
				resp, _, err := cl.Jobs().Register(ctx, smallJob(id), nil, nil)
				if err != nil {
					continue
				}
				mu.Lock()
				acked[id] = resp.JobModifyIndex
				mu.Unlock()
			}
		}()
	}
	testutil.WaitFor(t, 60*time.Second, "300 acknowledged writes", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 300
	})
	for _, s := range c.servers {
		s.kill()
	}
	cancel()
	wg.Wait()
	c.startAll()
	c.leader(30 * time.Second)
	for _, s := range c.servers {
		jobs, _, err := s.client().Jobs().List(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]uint64{}
		for _, j := range jobs {
			have[j.ID] = j.JobModifyIndex
		}
		mu.Lock()
		for id, idx := range acked {
			if have[id] < idx {
				t.Errorf("%s: acknowledged %s (index %d) is missing or older (%d) after the restart", s.name, id, idx, have[id])
			}
		}
		mu.Unlock()
	}
	t.Logf("%d acknowledged writes, all present on the three servers after SIGKILL of all", len(acked))

	// Refusals: plain HTTP, HTTPS without a client certificate, and a
	// raft peer without a certificate.
	s1 := c.servers[0]
	if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/jobs", s1.http)); err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("plain HTTP answered %d", resp.StatusCode)
		}
	}
	noCert, err := api.NewClient(api.Config{Address: s1.addr(), TLS: api.TLSConfig{CACert: s1.tls.ca}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := noCert.Jobs().List(context.Background(), nil); err == nil {
		t.Error("a caller without a client certificate was served")
	}
	if conn, err := tls.Dial("tcp", s1.raftAddr(), &tls.Config{InsecureSkipVerify: true}); err == nil {
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = conn.Write([]byte{0})
		if err == nil {
			_, err = conn.Read(make([]byte, 1))
		}
		conn.Close()
		if err == nil {
			t.Error("a raft peer without a certificate got an answer")
		}
	}

	// SIGHUP: a new server certificate (same CA) replaces s1's in place.
	before := servedSerial(t, s1)
	fresh := t.TempDir()
	for _, f := range []string{"sched-agent-ca.pem", "sched-agent-ca-key.pem"} {
		b, err := os.ReadFile(filepath.Join(s1.tls.dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fresh, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	schedIn(t, fresh, "tls", "cert", "create", "-server")
	// Every server shares the files (one PKI): replace them for all and
	// signal s1 alone; the others keep serving the old certificate, which
	// is as valid.
	for _, f := range []string{"global-server-sched.pem", "global-server-sched-key.pem"} {
		b, err := os.ReadFile(filepath.Join(fresh, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s1.tls.dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd, _, _ := s1.proc()
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "s1 to serve the new certificate", func() bool { return servedSerial(t, s1) != before })
	if servedSerial(t, c.servers[1]) != before || servedSerial(t, c.servers[2]) != before {
		t.Error("servers that got no SIGHUP changed certificate")
	}
	if !s1.alive() {
		t.Fatal("s1 exited on SIGHUP")
	}
	// Writes through s1 still reach the leader (forwarding and raft
	// with the new certificate).
	if _, _, err := s1.client().Jobs().Register(context.Background(), smallJob("after-reload"), nil, nil); err != nil {
		t.Fatalf("a write through s1 after the reload: %v", err)
	}
}

// pooledTLSClient is pooledClient for s, over TLS when s has it.
func pooledTLSClient(t *testing.T, s *server) *api.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	if s.tls != nil {
		cfg, err := s.tls.apiTLS().Build()
		if err != nil {
			t.Fatal(err)
		}
		tr.TLSClientConfig = cfg
	}
	c, err := api.NewClient(api.Config{Address: s.addr(), HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMeasureTLSThroughput compares a three-server cluster with TLS on
// (raft and HTTP mutual TLS, gossip encrypted) against one without:
// registers from 16 clients (half through a follower, forwarded), and
// GET /v1/job/:id from 16 clients on a follower (consistent reads: a read
// index from the leader each), 8 s each.
func TestMeasureTLSThroughput(t *testing.T) {
	skipUnlessMeasuring(t)
	for _, withTLS := range []bool{false, true} {
		var c *loopCluster
		if withTLS {
			c = newTLSLoopCluster(t, 3)
		} else {
			c = newLoopCluster(t, 3, "")
		}
		c.startAll()
		leader := c.leader(20 * time.Second)
		follower := c.others(leader)[0]
		lc, fc := pooledTLSClient(t, leader), pooledTLSClient(t, follower)
		ctx := context.Background()
		regs, regLat, regFail := rate(16, 8*time.Second, func(w, i int) error {
			cl := lc
			if w%2 == 1 {
				cl = fc
			}
			_, _, err := cl.Jobs().Register(ctx, smallJob(fmt.Sprintf("m-%d-%d", w, i)), nil, nil)
			return err
		})
		reads, readLat, readFail := rate(16, 8*time.Second, func(w, i int) error {
			_, _, err := fc.Jobs().Info(ctx, fmt.Sprintf("m-%d-%d", w, i%50), nil)
			return err
		})
		t.Logf("TLS %-5v: register %.0f/s (p50 %v, p99 %v, %d failed); follower GET /v1/job/:id %.0f/s (p50 %v, p99 %v, %d failed)",
			withTLS, regs, pct(regLat, .5), pct(regLat, .99), regFail, reads, pct(readLat, .5), pct(readLat, .99), readFail)
		for _, s := range c.servers {
			s.kill()
		}
	}
}
