package raft

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"

	hraft "github.com/hashicorp/raft"
)

// tlsHandshakeTimeout bounds a peer's TLS handshake on the raft port, so a
// peer that connects and says nothing holds a goroutine no longer.
const tlsHandshakeTimeout = 10 * time.Second

// tlsStreamLayer is the raft transport's stream layer with mutual TLS:
// every connection, in and out, presents a certificate signed by the
// cluster's CA, and one without is closed before a byte of it reaches
// raft. A stranger on the network can then neither send AppendEntries or
// votes nor receive the log.
type tlsStreamLayer struct {
	ln        net.Listener
	advertise net.Addr
	cfg       *tls.Config
}

var _ hraft.StreamLayer = (*tlsStreamLayer)(nil)

// newTLSStreamLayer listens on bind with cfg, which must hold this
// server's certificate, the CA as both RootCAs and ClientCAs, and the
// name servers' certificates carry as ServerName; or, for keys that can
// change while running, GetConfigForClient (accepted connections, which
// must then require and check the peer's certificate themselves) and
// GetClientCertificate with its own verification (dialed ones).
func newTLSStreamLayer(bind string, advertise net.Addr, cfg *tls.Config) (*tlsStreamLayer, error) {
	static := len(cfg.Certificates) > 0 && cfg.RootCAs != nil && cfg.ClientCAs != nil
	dynamic := cfg.GetConfigForClient != nil && (cfg.GetClientCertificate != nil || len(cfg.Certificates) > 0)
	if !static && !dynamic {
		return nil, errors.New("raft: TLS needs a certificate, RootCAs and ClientCAs (or GetConfigForClient and GetClientCertificate)")
	}
	c := cfg.Clone()
	c.ClientAuth = tls.RequireAndVerifyClientCert
	c.MinVersion = max(c.MinVersion, tls.VersionTLS12)
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	if advertise == nil {
		advertise = ln.Addr()
	}
	if a, ok := advertise.(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		ln.Close()
		return nil, errors.New("raft: an AdvertiseAddr is needed when binding a wildcard address")
	}
	return &tlsStreamLayer{ln: ln, advertise: advertise, cfg: c}, nil
}

// Accept returns the next connection; its TLS handshake (with the
// client's certificate checked) runs on its first read or write, within
// tlsHandshakeTimeout.
func (l *tlsStreamLayer) Accept() (net.Conn, error) {
	c, err := l.ln.Accept()
	if err != nil {
		return nil, err
	}
	return &handshakeConn{Conn: tls.Server(c, l.cfg)}, nil
}

// Close stops listening.
func (l *tlsStreamLayer) Close() error { return l.ln.Close() }

// Addr is the address other servers dial.
func (l *tlsStreamLayer) Addr() net.Addr { return l.advertise }

// Dial connects to another server and completes the handshake, checking
// its certificate against the CA and ServerName.
func (l *tlsStreamLayer) Dial(addr hraft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(addr), l.cfg)
}

// handshakeConn runs the server side's handshake once, under a deadline,
// before the first read or write.
type handshakeConn struct {
	*tls.Conn
	once sync.Once
	err  error
}

func (c *handshakeConn) handshake() error {
	c.once.Do(func() {
		_ = c.Conn.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
		c.err = c.Conn.Handshake()
		_ = c.Conn.SetDeadline(time.Time{})
	})
	return c.err
}

func (c *handshakeConn) Read(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *handshakeConn) Write(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// CheckPeerTLS dials addr, a server's raft address, with cfg (the raft
// transport's TLS config) and completes a mutual handshake: it returns nil
// only when the peer presents a certificate of the cluster's CA for
// cfg.ServerName. The leader asks it before adding a server that gossip
// found, so a stranger that joins the gossip pool is not made a voter.
func CheckPeerTLS(ctx context.Context, addr string, cfg *tls.Config) error {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: tlsHandshakeTimeout}, Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}
