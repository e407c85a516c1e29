package command

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// aclCLI holds the commands of `sched acl`: bootstrap, policies and
// tokens.
type aclCLI struct{ *cli }

// The `sched acl` commands manage tokens and policies, in the words and
// layout of Nomad's `nomad acl`.

func (c *aclCLI) table() []entry {
	return []entry{
		{"bootstrap", "Create the first management token", c.aclBootstrap, nil},
		{"policy", "Interact with ACL policies", nil, c.policyTable()},
		{"token", "Interact with ACL tokens", nil, c.tokenTable()},
	}
}

func (c *aclCLI) aclBootstrap(args []string) int {
	fs, m := c.flagSet("acl bootstrap", "[options] [PATH]", `
Create the first management token of the cluster. It works once; to run it
again, write the reset index that the refusal names into
<data_dir>/server/acl-bootstrap-reset on the leader.

PATH, when given, is a file holding the secret to use (a UUID), or "-" for
standard input; otherwise the server generates the secret. The secret is
printed once: keep it.

The token also speaks for a site administrator of the management API
(/api/v2), created with it as Terraform Enterprise's first administrator,
so organizations it creates have an owner. -admin-name (default admin) and
-admin-email (default admin@localhost) name that user.`)
	adminName := fs.String("admin-name", "", "username of the site administrator the token speaks for (default admin)")
	adminEmail := fs.String("admin-email", "", "e-mail address of that administrator (default admin@localhost)")
	if done, code := parseFlags(fs, args, 0, 1); done {
		return code
	}
	var secret string
	if fs.NArg() == 1 {
		s, err := c.readSecretFile(fs.Arg(0))
		if err != nil {
			return c.fail("reading the bootstrap secret", err)
		}
		secret = s
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	tok, _, err := client.ACLTokens().BootstrapOpts(c.ctx, api.ACLBootstrapOptions{Secret: secret, AdminName: *adminName, AdminEmail: *adminEmail}, nil)
	if err != nil {
		return c.fail("bootstrapping", err)
	}
	c.printToken(tok)
	return 0
}

// readSecretFile reads a secret from path ("-" is standard input).
func (c *aclCLI) readSecretFile(path string) (string, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(io.LimitReader(c.stdin, 4096))
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(data))
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

// printToken prints a token as Nomad does; the secret only when known
// (create and bootstrap answers).
func (c *aclCLI) printToken(t *state.ACLToken) {
	secret := t.SecretID
	if secret == "" {
		secret = "<hidden>"
	}
	policies := "n/a"
	if t.Type != state.ACLTokenTypeManagement {
		policies = "[" + strings.Join(t.Policies, ", ") + "]"
	}
	pairs := []kv{
		{"Accessor ID", t.AccessorID},
		{"Secret ID", secret},
		{"Name", orNone(t.Name)},
		{"Type", t.Type},
		{"Global", strconv.FormatBool(t.Global)},
		{"Create Time", t.CreateTime.In(c.loc).Format(time.RFC3339)},
		{"Expiry Time", c.expiry(t)},
		{"Create Index", strconv.FormatUint(t.CreateIndex, 10)},
		{"Modify Index", strconv.FormatUint(t.ModifyIndex, 10)},
		{"Policies", policies},
	}
	if t.Subject != nil {
		pairs = append(pairs, kv{"Subject", t.Subject.Kind + " " + t.Subject.ID})
	}
	writeKV(c.stdout, pairs)
}

// expiry prints when a token expires, "<none>" when never, with
// "(expired)" once past.
func (c *aclCLI) expiry(t *state.ACLToken) string {
	if t.ExpirationTime == nil {
		return "<none>"
	}
	s := t.ExpirationTime.In(c.loc).Format(time.RFC3339)
	if t.IsExpired(c.now()) {
		s += " (expired)"
	}
	return s
}
