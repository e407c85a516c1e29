package command

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// readCert parses the one certificate of a PEM file.
func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The CA and every kind of certificate are made under Nomad-like names,
// verify against the CA for their role's names and usages, and pair with
// their keys; files are never overwritten and the CA key stays private.
func TestTLSCACreateAndCertCreateVerify(t *testing.T) {
	dir := t.TempDir()
	runCLI(t, nil, runOpts{}, "tls", "ca", "create", "-dir", dir).check(t, 0,
		"==> Certificate saved to "+filepath.Join(dir, "sched-agent-ca.pem")+"\n==> Key saved to "+filepath.Join(dir, "sched-agent-ca-key.pem")+"\n", "")
	ca := readCert(t, filepath.Join(dir, "sched-agent-ca.pem"))
	if !ca.IsCA || ca.PublicKeyAlgorithm != x509.ECDSA || ca.PublicKey.(*ecdsa.PublicKey).Curve != elliptic.P256() {
		t.Fatalf("CA: IsCA %v, key %v", ca.IsCA, ca.PublicKeyAlgorithm)
	}
	if fi, err := os.Stat(filepath.Join(dir, "sched-agent-ca-key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("CA key mode: %v, %v", fi, err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)

	for _, tc := range []struct {
		flag, file, name string
		usage            x509.ExtKeyUsage
		ip               bool
	}{
		{"-server", "global-server-sched", "server.global.sched", x509.ExtKeyUsageServerAuth, true},
		{"-client", "global-client-sched", "client.global.sched", x509.ExtKeyUsageClientAuth, true},
		{"-cli", "global-cli-sched", "cli.global.sched", x509.ExtKeyUsageClientAuth, false},
	} {
		runCLI(t, nil, runOpts{}, "tls", "cert", "create", tc.flag, "-dir", dir).check(t, 0,
			"==> Certificate saved to "+filepath.Join(dir, tc.file+".pem")+"\n==> Key saved to "+filepath.Join(dir, tc.file+"-key.pem")+"\n", "")
		cert := readCert(t, filepath.Join(dir, tc.file+".pem"))
		opts := x509.VerifyOptions{Roots: roots, CurrentTime: testNow, KeyUsages: []x509.ExtKeyUsage{tc.usage}}
		for _, name := range []string{tc.name, "localhost"} {
			opts.DNSName = name
			if _, err := cert.Verify(opts); err != nil {
				t.Errorf("%s certificate for %s: %v", tc.flag, name, err)
			}
		}
		opts.DNSName = "127.0.0.1"
		if _, err := cert.Verify(opts); (err == nil) != tc.ip {
			t.Errorf("%s certificate for 127.0.0.1: %v, want valid %v", tc.flag, err, tc.ip)
		}
		opts.DNSName = "server.other.sched"
		if _, err := cert.Verify(opts); err == nil {
			t.Errorf("%s certificate valid for server.other.sched", tc.flag)
		}
		if _, err := tls.LoadX509KeyPair(filepath.Join(dir, tc.file+".pem"), filepath.Join(dir, tc.file+"-key.pem")); err != nil {
			t.Errorf("%s: key does not match: %v", tc.flag, err)
		}
	}
	// A server certificate serves and dials: a follower forwards with it.
	if srv := readCert(t, filepath.Join(dir, "global-server-sched.pem")); !slices.Contains(srv.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		t.Error("server certificate cannot be presented as a client certificate")
	}
	// Not valid a day past -days.
	runCLI(t, nil, runOpts{}, "tls", "cert", "create", "-server", "-region", "eu", "-days", "2",
		"-additional-dnsname", "sched.example.com", "-additional-ipaddress", "10.0.0.9", "-dir", dir).check(t, 0,
		"==> Certificate saved to "+filepath.Join(dir, "eu-server-sched.pem")+"\n==> Key saved to "+filepath.Join(dir, "eu-server-sched-key.pem")+"\n", "")
	eu := readCert(t, filepath.Join(dir, "eu-server-sched.pem"))
	if !slices.Contains(eu.DNSNames, "server.eu.sched") || !slices.Contains(eu.DNSNames, "sched.example.com") ||
		!slices.ContainsFunc(eu.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.ParseIP("10.0.0.9")) }) {
		t.Errorf("eu certificate names %v %v", eu.DNSNames, eu.IPAddresses)
	}
	if _, err := eu.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: testNow.Add(3 * 24 * time.Hour)}); err == nil {
		t.Error("certificate valid after -days")
	}
	// With -name-constraint the CA signs only names under its domain.
	cdir := t.TempDir()
	runCLI(t, nil, runOpts{}, "tls", "ca", "create", "-name-constraint", "-dir", cdir).check(t, 0,
		"==> Certificate saved to "+filepath.Join(cdir, "sched-agent-ca.pem")+"\n==> Key saved to "+filepath.Join(cdir, "sched-agent-ca-key.pem")+"\n", "")
	runCLI(t, nil, runOpts{}, "tls", "cert", "create", "-server", "-dir", cdir).check(t, 0,
		"==> Certificate saved to "+filepath.Join(cdir, "global-server-sched.pem")+"\n==> Key saved to "+filepath.Join(cdir, "global-server-sched-key.pem")+"\n", "")
	croots := x509.NewCertPool()
	croots.AddCert(readCert(t, filepath.Join(cdir, "sched-agent-ca.pem")))
	constrained := readCert(t, filepath.Join(cdir, "global-server-sched.pem"))
	if _, err := constrained.Verify(x509.VerifyOptions{Roots: croots, CurrentTime: testNow, DNSName: "server.global.sched"}); err != nil {
		t.Errorf("constrained CA, name under its domain: %v", err)
	}
	if r := runCLI(t, nil, runOpts{}, "tls", "cert", "create", "-client", "-domain", "other", "-dir", cdir,
		"-ca", filepath.Join(cdir, "sched-agent-ca.pem"), "-key", filepath.Join(cdir, "sched-agent-ca-key.pem")); r.code != 0 {
		t.Fatalf("sign for another domain: %+v", r)
	}
	if _, err := readCert(t, filepath.Join(cdir, "global-client-other.pem")).Verify(x509.VerifyOptions{Roots: croots, CurrentTime: testNow, DNSName: "client.global.other"}); err == nil {
		t.Error("constrained CA: a name outside its domain verified")
	}
	// Without it, an additional name verifies.
	if _, err := eu.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: testNow, DNSName: "sched.example.com"}); err != nil {
		t.Errorf("additional DNS name: %v", err)
	}

	// Errors.
	if r := runCLI(t, nil, runOpts{}, "tls", "ca", "create", "-dir", dir); r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("CA over an existing one: %+v", r)
	}
	if r := runCLI(t, nil, runOpts{}, "tls", "cert", "create", "-server", "-dir", dir); r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("certificate over an existing one: %+v", r)
	}
	if r := runCLI(t, nil, runOpts{}, "tls", "cert", "create", "-dir", dir); r.code != 1 || !strings.Contains(r.stderr, "exactly one of -server, -client and -cli") {
		t.Errorf("no role: %+v", r)
	}
	if r := runCLI(t, nil, runOpts{}, "tls", "cert", "create", "-cli", "-dir", t.TempDir()); r.code != 1 || !strings.Contains(r.stderr, "Error reading the CA (-ca)") {
		t.Errorf("no CA: %+v", r)
	}
	if r := runCLI(t, nil, runOpts{}, "tls", "cert", "create", "-cli", "-dir", dir, "-key", filepath.Join(dir, "global-cli-sched-key.pem")); r.code != 1 || !strings.Contains(r.stderr, "does not match") {
		t.Errorf("a key of another certificate as the CA key: %+v", r)
	}
}
