package agent

import (
	"crypto/tls"
	"errors"
	"fmt"
)

// TLSConfig is the tls block:
//
//	tls {
//	  rpc                 = true     # mutual TLS between servers on the raft port
//	  http                = true     # HTTPS on the HTTP port, forwarding included
//	  verify_https_client = true     # HTTPS callers must show a certificate of the CA
//	  verify_server_hostname = true  # the default: peers must carry their role's name
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
//
// The files are read again on SIGHUP (Agent.ReloadTLS): new connections
// use the new certificate and CA, open ones keep theirs.
type TLSConfig struct {
	RPC               bool
	HTTP              bool
	VerifyHTTPSClient bool
	// VerifyServerHostname (verify_server_hostname, default true) makes
	// every TLS peer show the name of its role: server.<region>.sched for
	// servers (raft, forwarding), client.<region>.sched (or the server
	// name) for client agents. False accepts any certificate of the CA.
	VerifyServerHostname *bool
	CAFile               string
	CertFile             string
	KeyFile              string
}

type fileTLS struct {
	RPC                  *bool   `hcl:"rpc,optional"`
	HTTP                 *bool   `hcl:"http,optional"`
	VerifyHTTPSClient    *bool   `hcl:"verify_https_client,optional"`
	VerifyServerHostname *bool   `hcl:"verify_server_hostname,optional"`
	CAFile               *string `hcl:"ca_file,optional"`
	CertFile             *string `hcl:"cert_file,optional"`
	KeyFile              *string `hcl:"key_file,optional"`
}

// merge applies a config file's tls block over c.
func (c *TLSConfig) merge(f *fileTLS) {
	if f == nil {
		return
	}
	set(&c.RPC, f.RPC)
	set(&c.HTTP, f.HTTP)
	set(&c.VerifyHTTPSClient, f.VerifyHTTPSClient)
	if f.VerifyServerHostname != nil {
		v := *f.VerifyServerHostname
		c.VerifyServerHostname = &v
	}
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

// clientName is the name a client agent's certificate carries.
func clientName(region string) string { return "client." + region + ".sched" }

// verifyHostname reports whether peers' names are checked
// (verify_server_hostname, on unless set to false).
func (c *TLSConfig) verifyHostname() bool {
	return c.VerifyServerHostname == nil || *c.VerifyServerHostname
}

// serverNames are the names a server's certificate must carry: none when
// verify_server_hostname is false (any certificate of the CA will do).
func (c *TLSConfig) serverNames(region string) []string {
	if !c.verifyHostname() {
		return nil
	}
	return []string{raftServerName(region)}
}

// raftTLS is the raft transport's TLS config over keys, or nil when rpc is
// off: both ends must show a certificate of the CA carrying
// server.<region>.sched (any certificate of the CA without
// verify_server_hostname).
func (c *TLSConfig) raftTLS(k *tlsKeys, region string) *tls.Config {
	if !c.RPC {
		return nil
	}
	names := c.serverNames(region)
	return both(k.serve(true, nil, names...), k.dial(raftServerName(region), names...))
}

// httpTLS is the HTTP port's TLS configs over keys, both nil when http is
// off: serve is the listener's (client certificates required with
// verify_https_client, else not asked for), dial is for this agent's own
// HTTPS requests to servers (forwarding, its client), checking
// server.<region>.sched and presenting cert_file.
func (c *TLSConfig) httpTLS(k *tlsKeys, region string) (serve, dial *tls.Config) {
	if !c.HTTP {
		return nil, nil
	}
	// HTTP/1.1 only (no "h2" in NextProtos): exec and log streams hijack
	// the connection.
	serve = k.serve(c.VerifyHTTPSClient, []string{"http/1.1"})
	return serve, k.dial(raftServerName(region), c.serverNames(region)...)
}

// nodeTLS is the config servers proxy /v1/client requests to a node's
// agent with, nil when http is off: the node's certificate must carry
// client.<region>.sched, or server.<region>.sched for a server that runs
// a client too (any certificate of the CA without verify_server_hostname).
func (c *TLSConfig) nodeTLS(k *tlsKeys, region string) *tls.Config {
	if !c.HTTP {
		return nil
	}
	if !c.verifyHostname() {
		return k.dial("")
	}
	return k.dial("", clientName(region), raftServerName(region))
}
