package command

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// tlsCLI holds the commands of `sched tls`: a quick-start CA and
// certificates.
type tlsCLI struct{ *cli }

// `sched tls ca create` and `sched tls cert create` make a quick-start
// certificate authority and the certificates of servers, clients and the
// CLI, in the current directory (or -dir), under Nomad's file names with
// "sched": sched-agent-ca.pem, global-server-sched.pem, ... The crypto is
// in tls_pki.go.

func (c *tlsCLI) table() []entry {
	return []entry{
		{"ca", "Create a certificate authority", nil, c.caTable()},
		{"cert", "Create a certificate signed by the CA", nil, c.certTable()},
	}
}

func (c *tlsCLI) caTable() []entry {
	return []entry{
		{"create", "Create a CA: <domain>-agent-ca.pem and its key", c.tlsCACreate, nil},
	}
}

func (c *tlsCLI) certTable() []entry {
	return []entry{
		{"create", "Create a server, client or CLI certificate and its key", c.tlsCertCreate, nil},
	}
}

// tlsFlagSet is a flag set for `sched tls ...`: no -address or -token,
// which mean nothing here.
func (c *tlsCLI) tlsFlagSet(name, usage, help string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: sched %s %s\n\n%s\n\nOptions:\n", name, usage, strings.TrimSpace(help))
		fs.PrintDefaults()
	}
	return fs
}

func (c *tlsCLI) tlsCACreate(args []string) int {
	fs := c.tlsFlagSet("tls ca create", "[options]", `
Create a certificate authority for the cluster's TLS (ECDSA P-256):
<domain>-agent-ca.pem and <domain>-agent-ca-key.pem. Keep the key offline
once the certificates are made. Existing files are never overwritten.`)
	days := fs.Int("days", 1825, "days the CA is valid")
	domain := fs.String("domain", "sched", "domain the certificates' names end in")
	constrain := fs.Bool("name-constraint", false, "make the CA valid only for DNS names under -domain and localhost")
	cn := fs.String("common-name", "", "the CA's common name (default: \"Sched Agent CA\")")
	dir := fs.String("dir", ".", "directory the files are written to")
	if done, code := parseFlags(fs, args, 0, 0); done {
		return code
	}
	if *days <= 0 {
		return c.fail("creating the CA", errors.New("-days must be positive"))
	}
	if *cn == "" {
		*cn = "Sched Agent CA"
	}
	ca, err := newCA(c.now(), *days, *cn, *domain, *constrain)
	if err != nil {
		return c.fail("creating the CA", err)
	}
	base := filepath.Join(*dir, *domain+"-agent-ca")
	if err := c.writePair(base, ca); err != nil {
		return c.fail("creating the CA", err)
	}
	return 0
}

func (c *tlsCLI) tlsCertCreate(args []string) int {
	fs := c.tlsFlagSet("tls cert create", "-server|-client|-cli [options]", `
Create a certificate signed by the CA, and its key:
<region>-<role>-<domain>.pem and <region>-<role>-<domain>-key.pem.

A server certificate carries server.<region>.<domain>, localhost and
127.0.0.1: agents' cert_file with tls { rpc, http }. A client certificate
carries client.<region>.<domain>: a client agent's cert_file. A CLI
certificate carries cli.<region>.<domain>: -client-cert of the CLI against
agents with verify_https_client. Existing files are never overwritten.`)
	server := fs.Bool("server", false, "a server certificate")
	client := fs.Bool("client", false, "a client agent certificate")
	cliCert := fs.Bool("cli", false, "a CLI certificate")
	region := fs.String("region", "global", "the agents' region")
	domain := fs.String("domain", "sched", "the domain the CA was made for")
	days := fs.Int("days", 365, "days the certificate is valid")
	caFile := fs.String("ca", "", "the CA certificate (default: <domain>-agent-ca.pem in -dir)")
	keyFile := fs.String("key", "", "the CA key (default: <domain>-agent-ca-key.pem in -dir)")
	var dnsNames, ipAddrs stringList
	fs.Var(&dnsNames, "additional-dnsname", "another DNS name the certificate carries (repeatable)")
	fs.Var(&ipAddrs, "additional-ipaddress", "another IP address the certificate carries (repeatable)")
	dir := fs.String("dir", ".", "directory the CA is read from and the files are written to")
	if done, code := parseFlags(fs, args, 0, 0); done {
		return code
	}
	var role certRole
	n := 0
	for r, on := range map[certRole]bool{roleServer: *server, roleClient: *client, roleCLI: *cliCert} {
		if on {
			role, n = r, n+1
		}
	}
	if n != 1 {
		fmt.Fprintln(c.stderr, "Error: exactly one of -server, -client and -cli is required")
		return 1
	}
	if *days <= 0 {
		return c.fail("creating the certificate", errors.New("-days must be positive"))
	}
	spec := certSpec{Role: role, Region: *region, Domain: *domain, Days: *days, ExtraDNS: dnsNames}
	for _, s := range ipAddrs {
		ip := net.ParseIP(s)
		if ip == nil {
			return c.fail("creating the certificate", fmt.Errorf("-additional-ipaddress %q is not an IP address", s))
		}
		spec.ExtraIPs = append(spec.ExtraIPs, ip)
	}
	if *caFile == "" {
		*caFile = filepath.Join(*dir, *domain+"-agent-ca.pem")
	}
	if *keyFile == "" {
		*keyFile = filepath.Join(*dir, *domain+"-agent-ca-key.pem")
	}
	var ca pemPair
	var err error
	if ca.Cert, err = os.ReadFile(*caFile); err != nil {
		return c.fail("reading the CA (-ca)", err)
	}
	if ca.Key, err = os.ReadFile(*keyFile); err != nil {
		return c.fail("reading the CA key (-key)", err)
	}
	pair, err := signCert(c.now(), ca, spec)
	if err != nil {
		return c.fail("creating the certificate", err)
	}
	base := filepath.Join(*dir, fmt.Sprintf("%s-%s-%s", *region, role, *domain))
	if err := c.writePair(base, pair); err != nil {
		return c.fail("creating the certificate", err)
	}
	return 0
}

// writePair writes base.pem (0644) and base-key.pem (0600), refusing to
// replace either, and names them on stdout.
func (c *tlsCLI) writePair(base string, p pemPair) error {
	certPath, keyPath := base+".pem", base+"-key.pem"
	for _, path := range []string{certPath, keyPath} {
		if _, err := os.Stat(path); err == nil {
			return fmt.Errorf("%s already exists; remove it or use -dir", path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := writeNew(keyPath, p.Key, 0o600); err != nil {
		return err
	}
	if err := writeNew(certPath, p.Cert, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "==> Certificate saved to %s\n==> Key saved to %s\n", certPath, keyPath)
	return nil
}

// writeNew creates path with data, failing if it exists.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
