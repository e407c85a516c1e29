package testutil

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
)

func TestCAIssuesVerifiableCertificates(t *testing.T) {
	ca := NewCA(t)
	der, _ := ca.Issue(t, "server.global.sched")
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool, DNSName: "server.global.sched", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("issued certificate does not verify: %v", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: NewCA(t).Pool}); err == nil {
		t.Error("a certificate verified against another CA")
	}
	caFile, certFile, keyFile := ca.WriteFiles(t, "server.global.sched")
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Errorf("written key pair: %v", err)
	}
	if pem, err := os.ReadFile(caFile); err != nil || !x509.NewCertPool().AppendCertsFromPEM(pem) {
		t.Errorf("written CA file unusable: %v", err)
	}
}
