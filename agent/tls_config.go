package agent

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSConfig is the tls block. Today it secures the raft port only:
//
//	tls {
//	  rpc       = true               # mutual TLS between servers on the raft port
//	  ca_file   = "/etc/sched/ca.pem"
//	  cert_file = "/etc/sched/server.pem"   # must carry DNS name server.<region>.sched
//	  key_file  = "/etc/sched/server-key.pem"
//	}
//
// With rpc on, a server accepts raft connections only from peers whose
// certificate the CA signed, dials only peers whose certificate carries
// server.<region>.sched, and (as leader) adds a server that gossip found
// only once its raft port shows such a certificate. HTTP and forwarding
// are not TLS yet (docs/security.md).
type TLSConfig struct {
	RPC      bool
	CAFile   string
	CertFile string
	KeyFile  string
}

type fileTLS struct {
	RPC      *bool   `hcl:"rpc,optional"`
	CAFile   *string `hcl:"ca_file,optional"`
	CertFile *string `hcl:"cert_file,optional"`
	KeyFile  *string `hcl:"key_file,optional"`
}

// merge applies a config file's tls block over c.
func (c *TLSConfig) merge(f *fileTLS) {
	if f == nil {
		return
	}
	set(&c.RPC, f.RPC)
	set(&c.CAFile, f.CAFile)
	set(&c.CertFile, f.CertFile)
	set(&c.KeyFile, f.KeyFile)
}

// finish checks that rpc has its files.
func (c *TLSConfig) finish() error {
	if !c.RPC {
		return nil
	}
	var errs []error
	for name, v := range map[string]string{"ca_file": c.CAFile, "cert_file": c.CertFile, "key_file": c.KeyFile} {
		if v == "" {
			errs = append(errs, fmt.Errorf("tls.%s: required with rpc = true", name))
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
