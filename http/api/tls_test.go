package api

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An https:// address is checked against TLS.CACert: the client trusts a
// server whose certificate that CA signed, refuses it without the CA, and
// checks TLS.ServerName instead of the address's host when it is set.
func TestClientTLSCACertAndServerName(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`"127.0.0.1:4647"`))
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	leader := func(tc TLSConfig) error {
		c, err := NewClient(Config{Address: srv.URL, TLS: tc})
		if err != nil {
			return err
		}
		_, err = c.Status().Leader(context.Background())
		return err
	}
	if err := leader(TLSConfig{CACert: ca}); err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	if err := leader(TLSConfig{}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v, want a certificate error", err)
	}
	// httptest's certificate carries example.com, not this name.
	if err := leader(TLSConfig{CACert: ca, ServerName: "server.global.sched"}); err == nil || !strings.Contains(err.Error(), "server.global.sched") {
		t.Errorf("wrong server name: %v, want an error naming it", err)
	}
	if err := leader(TLSConfig{CACert: ca, ServerName: "example.com"}); err != nil {
		t.Errorf("server name example.com: %v", err)
	}
}

func TestClientTLSConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  TLSConfig
		want string
	}{
		{TLSConfig{CACert: "/nonexistent/ca.pem"}, "CA certificate"},
		{TLSConfig{ClientCert: "/c.pem"}, "needs its key"},
		{TLSConfig{ClientCert: "/nonexistent/c.pem", ClientKey: "/nonexistent/k.pem"}, "client certificate"},
	} {
		if _, err := NewClient(Config{Address: "https://127.0.0.1:4646", TLS: tc.cfg}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
}
