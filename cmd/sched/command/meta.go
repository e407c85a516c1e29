package command

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/schedhq/sched/http/api"
)

// meta holds the flags every API command shares: where the cluster is,
// as whom to talk to it, and in which namespace. Their defaults come from
// the same environment variables the api package reads.
type meta struct {
	getenv    func(string) string
	address   string
	token     string
	namespace string
	tls       api.TLSConfig
}

// tlsFlags registers -ca-cert, -client-cert, -client-key and
// -tls-server-name, defaulting to the api package's environment variables.
func (m *meta) tlsFlags(fs *flag.FlagSet) {
	fs.StringVar(&m.tls.CACert, "ca-cert", m.getenv(api.EnvCACert), "PEM file of the CA that signed the agents' HTTPS certificates (env "+api.EnvCACert+")")
	fs.StringVar(&m.tls.ClientCert, "client-cert", m.getenv(api.EnvClientCert), "PEM client certificate, for agents with verify_https_client (env "+api.EnvClientCert+")")
	fs.StringVar(&m.tls.ClientKey, "client-key", m.getenv(api.EnvClientKey), "PEM key of -client-cert (env "+api.EnvClientKey+")")
	fs.StringVar(&m.tls.ServerName, "tls-server-name", m.getenv(api.EnvTLSServerName), "name the agent's certificate must carry, e.g. server.global.sched (env "+api.EnvTLSServerName+"); default: the address's host")
}

// flagSet returns a flag set for the command `sched <name>` with the shared
// flags registered, printing usage (the text after "Usage: ") and the flag
// defaults on -h or a bad flag.
func (c *cli) flagSet(name, usage, help string) (*flag.FlagSet, *meta) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	m := &meta{getenv: c.getenv}
	addr := c.getenv(api.EnvAddress)
	if addr == "" {
		addr = api.DefaultAddress
	}
	fs.StringVar(&m.address, "address", addr, "address of a sched agent (env "+api.EnvAddress+")")
	// The token's default is read in client, not shown here: -h must not
	// print a secret.
	fs.StringVar(&m.token, "token", "", "secret of the token to authenticate with (default: env "+api.EnvToken+")")
	fs.StringVar(&m.namespace, "namespace", c.getenv(api.EnvNamespace), "target namespace (env "+api.EnvNamespace+"); default: the server's")
	m.tlsFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: sched %s %s\n\n%s\n\nOptions:\n", name, usage, strings.TrimSpace(help))
		fs.PrintDefaults()
	}
	return fs, m
}

// parseFlags parses args into fs and checks the number of positional
// arguments is within [min, max]. done reports that the command must stop
// with code: -h (0), or a usage error (1, usage already printed).
func parseFlags(fs *flag.FlagSet, args []string, min, max int) (done bool, code int) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, 0
		}
		return true, 1
	}
	if n := fs.NArg(); n < min || n > max {
		switch {
		case min == max && min == 0:
			fmt.Fprintf(fs.Output(), "This command takes no arguments\n")
		case min == max:
			fmt.Fprintf(fs.Output(), "This command takes %d argument(s), got %d\n", min, n)
		default:
			fmt.Fprintf(fs.Output(), "This command takes %d to %d arguments, got %d\n", min, max, n)
		}
		fs.Usage()
		return true, 1
	}
	return false, 0
}

// parseClient is how an API command starts: it parses args into fs
// (parseFlags) and makes the API client from the shared flags in m. A nil
// client means the command returns code at once: -h (0), or a usage error
// or a client that could not be made (1, reason printed).
func (c *cli) parseClient(fs *flag.FlagSet, m *meta, args []string, min, max int) (*api.Client, int) {
	if done, code := parseFlags(fs, args, min, max); done {
		return nil, code
	}
	client, err := m.client()
	if err != nil {
		return nil, c.fail("creating client", err)
	}
	return client, 0
}

// client returns an API client configured from the shared flags.
func (m *meta) client() (*api.Client, error) {
	token := m.token
	if token == "" {
		token = m.getenv(api.EnvToken)
	}
	return api.NewClient(api.Config{Address: m.address, Token: token, Namespace: m.namespace, TLS: m.tls})
}

// fail prints "Error <doing>: <err>" to stderr and returns exit code 1.
func (c *cli) fail(doing string, err error) int {
	fmt.Fprintf(c.stderr, "Error %s: %v\n", doing, err)
	return 1
}

// stringList is a repeatable string flag, kept in the order given.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ", ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// optionalUint is a uint64 flag that remembers whether it was given, for
// flags such as -check-index where 0 is meaningful.
type optionalUint struct {
	set   bool
	value uint64
}

func (o *optionalUint) String() string {
	if !o.set {
		return ""
	}
	return strconv.FormatUint(o.value, 10)
}

func (o *optionalUint) Set(v string) error {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not a non-negative integer", v)
	}
	o.set, o.value = true, n
	return nil
}
