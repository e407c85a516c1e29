package api

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Environment variables of the TLS settings, read by DefaultConfig and, for
// their flag defaults, by the CLI.
const (
	EnvCACert        = "SCHED_CACERT"
	EnvClientCert    = "SCHED_CLIENT_CERT"
	EnvClientKey     = "SCHED_CLIENT_KEY"
	EnvTLSServerName = "SCHED_TLS_SERVER_NAME"
)

// TLSConfig says how a Client checks an https:// server and proves itself
// to one that asks for a client certificate (an agent with
// verify_https_client). Every field is a file path or a name; the zero
// value trusts the system's roots and presents no certificate.
type TLSConfig struct {
	// CACert is a PEM file of the CA that signed the servers'
	// certificates. Empty means the system's roots.
	CACert string
	// ClientCert and ClientKey are a PEM certificate and its key, sent
	// when the server asks for one. Both or neither.
	ClientCert string
	ClientKey  string
	// ServerName is the name the server's certificate must carry, when it
	// differs from the address's host (e.g. "server.global.sched" when
	// dialling an IP address). Empty means the address's host.
	ServerName string
}

// IsZero reports whether t sets nothing.
func (t TLSConfig) IsZero() bool { return t == TLSConfig{} }

// tlsConfigFromEnv reads the TLS settings from the environment.
func tlsConfigFromEnv() TLSConfig {
	return TLSConfig{
		CACert:     os.Getenv(EnvCACert),
		ClientCert: os.Getenv(EnvClientCert),
		ClientKey:  os.Getenv(EnvClientKey),
		ServerName: os.Getenv(EnvTLSServerName),
	}
}

// Build loads the files t names into a *tls.Config for an HTTP transport.
// Errors name the setting whose file is missing or wrong.
func (t TLSConfig) Build() (*tls.Config, error) {
	cfg := &tls.Config{ServerName: t.ServerName, MinVersion: tls.VersionTLS12}
	if t.CACert != "" {
		pem, err := os.ReadFile(t.CACert)
		if err != nil {
			return nil, fmt.Errorf("api: CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("api: CA certificate: %s holds no PEM certificate", t.CACert)
		}
		cfg.RootCAs = pool
	}
	if (t.ClientCert == "") != (t.ClientKey == "") {
		return nil, errors.New("api: a client certificate needs its key, and a key its certificate")
	}
	if t.ClientCert != "" {
		cert, err := tls.LoadX509KeyPair(t.ClientCert, t.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("api: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
