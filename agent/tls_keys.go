package agent

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
)

// tlsKeys holds the tls block's certificate, key and CA as loaded now.
// Every TLS config the agent builds (raft, HTTPS serving, HTTPS dialing)
// reads them through it at each handshake, so Reload — run on SIGHUP —
// changes them for every new connection without a restart; connections
// already open keep the keys they were made with.
type tlsKeys struct {
	cfg *TLSConfig
	cur atomic.Pointer[loadedKeys]
}

// loadedKeys is one reading of the files.
type loadedKeys struct {
	cert *tls.Certificate
	pool *x509.CertPool
}

// newTLSKeys reads the files of cfg; nil (and no error) when neither rpc
// nor http is on.
func newTLSKeys(cfg *TLSConfig) (*tlsKeys, error) {
	if !cfg.RPC && !cfg.HTTP {
		return nil, nil
	}
	k := &tlsKeys{cfg: cfg}
	if err := k.Reload(); err != nil {
		return nil, err
	}
	return k, nil
}

// Reload reads cert_file, key_file and ca_file again. On any error the
// keys in use stay as they were.
func (k *tlsKeys) Reload() error {
	cert, err := tls.LoadX509KeyPair(k.cfg.CertFile, k.cfg.KeyFile)
	if err != nil {
		return fmt.Errorf("tls: cert_file/key_file: %w", err)
	}
	pem, err := os.ReadFile(k.cfg.CAFile)
	if err != nil {
		return fmt.Errorf("tls.ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("tls.ca_file: %s holds no PEM certificate", k.cfg.CAFile)
	}
	k.cur.Store(&loadedKeys{cert: &cert, pool: pool})
	return nil
}

// Leaf is the certificate in use (for tests and logs).
func (k *tlsKeys) Leaf() (*x509.Certificate, error) {
	c := k.cur.Load().cert
	if c.Leaf != nil {
		return c.Leaf, nil
	}
	return x509.ParseCertificate(c.Certificate[0])
}

// peerCheck says what a peer's certificate must be: signed by the CA for
// usage and, when names is not empty, carrying one of names as a DNS name.
type peerCheck struct {
	usage x509.ExtKeyUsage
	names []string
}

// verify checks the peer's chain against the CA in use now.
func (k *tlsKeys) verify(cs tls.ConnectionState, pc peerCheck) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the peer presented no certificate")
	}
	leaf := cs.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	opts := x509.VerifyOptions{Roots: k.cur.Load().pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{pc.usage}}
	if _, err := leaf.Verify(opts); err != nil {
		return fmt.Errorf("tls: peer certificate: %w", err)
	}
	if len(pc.names) == 0 {
		return nil
	}
	if slices.ContainsFunc(pc.names, func(n string) bool { return leaf.VerifyHostname(n) == nil }) {
		return nil
	}
	return fmt.Errorf("tls: peer certificate is for %v, not %v", leaf.DNSNames, pc.names)
}

// dial is a config for connections this agent opens: it presents the
// certificate in use and accepts a peer certificate of the CA carrying
// one of names (any name of the CA when names is empty). serverName is
// only sent (SNI).
func (k *tlsKeys) dial(serverName string, names ...string) *tls.Config {
	pc := peerCheck{usage: x509.ExtKeyUsageServerAuth, names: names}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: serverName,
		// The chain is checked in VerifyConnection, against the CA read
		// at this handshake, not one fixed when the config was made.
		InsecureSkipVerify: true,
		VerifyConnection:   func(cs tls.ConnectionState) error { return k.verify(cs, pc) },
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return k.cur.Load().cert, nil
		},
	}
}

// serve is a config for connections this agent accepts: it presents the
// certificate in use; with requireClient a caller must present a
// certificate of the CA (carrying one of names when names is not empty),
// without it none is asked for.
func (k *tlsKeys) serve(requireClient bool, nextProtos []string, names ...string) *tls.Config {
	pc := peerCheck{usage: x509.ExtKeyUsageClientAuth, names: names}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cur := k.cur.Load()
			c := &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{*cur.cert},
				NextProtos:   nextProtos,
			}
			if requireClient {
				c.ClientAuth = tls.RequireAnyClientCert
				c.VerifyConnection = func(cs tls.ConnectionState) error { return k.verify(cs, pc) }
			}
			return c, nil
		},
	}
}

// both is one config that serves and dials, as the raft transport wants:
// serve's GetConfigForClient for accepted connections, dial's fields for
// opened ones.
func both(serve, dial *tls.Config) *tls.Config {
	c := dial.Clone()
	c.GetConfigForClient = serve.GetConfigForClient
	return c
}
