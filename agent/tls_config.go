package agent

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSConfig is the tls block:
//
//	tls {
//	  rpc                 = true     # mutual TLS between servers on the raft port
//	  http                = true     # HTTPS on the HTTP port, forwarding included
//	  verify_https_client = true     # HTTPS callers must show a certificate of the CA
//	  ca_file   = "/etc/sched/ca.pem"
//	  cert_file = "/etc/sched/server.pem"   # must carry DNS name server.<region>.sched
//	  key_file  = "/etc/sched/server-key.pem"
//	}
//
// With rpc on, a server accepts raft connections only from peers whose
// certificate the CA signed, dials only peers whose certificate carries
// server.<region>.sched, and (as leader) adds a server that gossip found
// only once its raft port shows such a certificate.
//
// With http on, a server's HTTP port serves HTTPS with cert_file; a
// follower forwards to the leader over HTTPS, checking its certificate for
// server.<region>.sched and presenting its own; a client agent talks to
// the servers over HTTPS the same way. verify_https_client refuses every
// HTTPS connection without a certificate of the CA.
type TLSConfig struct {
	RPC               bool
	HTTP              bool
	VerifyHTTPSClient bool
	CAFile            string
	CertFile          string
	KeyFile           string
}

type fileTLS struct {
	RPC               *bool   `hcl:"rpc,optional"`
	HTTP              *bool   `hcl:"http,optional"`
	VerifyHTTPSClient *bool   `hcl:"verify_https_client,optional"`
	CAFile            *string `hcl:"ca_file,optional"`
	CertFile          *string `hcl:"cert_file,optional"`
	KeyFile           *string `hcl:"key_file,optional"`
}

// merge applies a config file's tls block over c.
func (c *TLSConfig) merge(f *fileTLS) {
	if f == nil {
		return
	}
	set(&c.RPC, f.RPC)
	set(&c.HTTP, f.HTTP)
	set(&c.VerifyHTTPSClient, f.VerifyHTTPSClient)
	set(&c.CAFile, f.CAFile)
	set(&c.CertFile, f.CertFile)
	set(&c.KeyFile, f.KeyFile)
}

// finish checks that rpc and http have their files, and that
// verify_https_client comes with http.
func (c *TLSConfig) finish() error {
	var errs []error
	if c.VerifyHTTPSClient && !c.HTTP {
		errs = append(errs, errors.New("tls.verify_https_client: needs http = true"))
	}
	if !c.RPC && !c.HTTP {
		return errors.Join(errs...)
	}
	on := "rpc = true"
	if !c.RPC {
		on = "http = true"
	}
	for _, f := range []struct{ name, v string }{{"ca_file", c.CAFile}, {"cert_file", c.CertFile}, {"key_file", c.KeyFile}} {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("tls.%s: required with %s", f.name, on))
		}
	}
	return errors.Join(errs...)
}

// raftServerName is the name every server's certificate carries.
func raftServerName(region string) string { return "server." + region + ".sched" }

// raftTLS loads the raft transport's TLS config, or nil when rpc is off.
func (c *TLSConfig) raftTLS(region string) (*tls.Config, error) {
	if !c.RPC {
		return nil, nil
	}
	return c.load(region)
}

// load reads the block's files into a config that serves and dials with
// cert_file, trusts the CA both ways and expects server.<region>.sched of
// the servers it dials.
func (c *TLSConfig) load(region string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: cert_file/key_file: %w", err)
	}
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, fmt.Errorf("tls.ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tls.ca_file: %s holds no PEM certificate", c.CAFile)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ClientCAs: pool,
		ServerName: raftServerName(region), MinVersion: tls.VersionTLS12}, nil
}

// httpTLS loads the HTTP port's TLS configs, both nil when http is off:
// serve is the listener's (client certificates required with
// verify_https_client, else not asked for), dial is for this agent's own
// HTTPS requests to servers (forwarding, its client), checking
// server.<region>.sched and presenting cert_file.
func (c *TLSConfig) httpTLS(region string) (serve, dial *tls.Config, err error) {
	if !c.HTTP {
		return nil, nil, nil
	}
	dial, err = c.load(region)
	if err != nil {
		return nil, nil, err
	}
	serve = dial.Clone()
	serve.ServerName = ""
	serve.ClientAuth = tls.NoClientCert
	if c.VerifyHTTPSClient {
		serve.ClientAuth = tls.RequireAndVerifyClientCert
	}
	// HTTP/1.1 only (no "h2" in NextProtos): exec and log streams hijack
	// the connection.
	serve.NextProtos = []string{"http/1.1"}
	return serve, dial, nil
}
