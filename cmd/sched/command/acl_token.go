package command

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

func (c *aclCLI) tokenTable() []entry {
	return []entry{
		{"create", "Create a token", c.aclTokenCreate, nil},
		{"delete", "Delete a token", c.aclTokenDelete, nil},
		{"info", "Show a token", c.aclTokenInfo, nil},
		{"list", "List tokens", c.aclTokenList, nil},
		{"self", "Show the token in use", c.aclTokenSelf, nil},
		{"update", "Update a token", c.aclTokenUpdate, nil},
	}
}

func (c *aclCLI) aclTokenCreate(args []string) int {
	fs, m := c.flagSet("acl token create", "[options]", `
Create a token. A client token may do what its policies grant; a
management token may do everything. The secret is printed once: keep it.`)
	name := fs.String("name", "", "a human-readable name")
	typ := fs.String("type", state.ACLTokenTypeClient, "client or management")
	var policies stringList
	fs.Var(&policies, "policy", "a policy of the token (repeatable; client tokens)")
	ttl := fs.Duration("ttl", 0, "expire the token this long after creation (at least 1m); 0 never expires")
	global := fs.Bool("global", false, "accepted for compatibility: every token is global")
	client, code := c.parseClient(fs, m, args, 0, 0)
	if client == nil {
		return code
	}
	tok, _, err := client.ACLTokens().Create(c.ctx, &state.ACLToken{Name: *name, Type: *typ, Policies: policies,
		Global: *global, ExpirationTTL: *ttl}, nil)
	if err != nil {
		return c.fail("creating token", err)
	}
	c.printToken(tok)
	return 0
}

func (c *aclCLI) aclTokenList(args []string) int {
	fs, m := c.flagSet("acl token list", "[options]", "List every token (needs a management token). Secrets are never shown.")
	asJSON := c.outputFlags(fs, "print the tokens as JSON")
	client, code := c.parseClient(fs, m, args, 0, 0)
	if client == nil {
		return code
	}
	list, _, err := client.ACLTokens().List(c.ctx, nil)
	if err != nil {
		return c.fail("retrieving tokens", err)
	}
	if *asJSON {
		return c.printJSON(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(c.stdout, "No tokens found")
		return 0
	}
	rows := make([][]string, 0, len(list))
	for _, t := range list {
		rows = append(rows, []string{orNone(t.Name), t.Type, strconv.FormatBool(t.Global), t.AccessorID, strconv.FormatBool(t.IsExpired(c.now()))})
	}
	writeTable(c.stdout, []string{"Name", "Type", "Global", "Accessor ID", "Expired"}, rows)
	return 0
}

func (c *aclCLI) aclTokenInfo(args []string) int {
	fs, m := c.flagSet("acl token info", "[options] ACCESSOR_ID", "Show the token ACCESSOR_ID (its secret is not shown).")
	asJSON := c.outputFlags(fs, "print the token as JSON")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	tok, _, err := client.ACLTokens().Info(c.ctx, fs.Arg(0), nil)
	if err != nil {
		return c.fail("retrieving token", err)
	}
	if *asJSON {
		return c.printJSON(tok)
	}
	c.printToken(tok)
	return 0
}

func (c *aclCLI) aclTokenSelf(args []string) int {
	fs, m := c.flagSet("acl token self", "[options]", "Show the token this command authenticates with (-token or SCHED_TOKEN).")
	asJSON := c.outputFlags(fs, "print the token as JSON")
	client, code := c.parseClient(fs, m, args, 0, 0)
	if client == nil {
		return code
	}
	tok, _, err := client.ACLTokens().Self(c.ctx, nil)
	if err != nil {
		return c.fail("retrieving token", err)
	}
	if *asJSON {
		return c.printJSON(tok)
	}
	c.printToken(tok)
	return 0
}

func (c *aclCLI) aclTokenDelete(args []string) int {
	fs, m := c.flagSet("acl token delete", "[options] ACCESSOR_ID", "Delete the token ACCESSOR_ID.")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	if _, err := client.ACLTokens().Delete(c.ctx, fs.Arg(0), nil); err != nil {
		return c.fail("deleting token", err)
	}
	fmt.Fprintf(c.stdout, "Token %s successfully deleted\n", fs.Arg(0))
	return 0
}

func (c *aclCLI) aclTokenUpdate(args []string) int {
	fs, m := c.flagSet("acl token update", "[options] ACCESSOR_ID", `
Update the token ACCESSOR_ID. Only the fields whose flags are given
change; its secret and expiry never do. Changing the type to management
drops the token's policies, since a management token takes none.`)
	name := fs.String("name", "", "a human-readable name")
	typ := fs.String("type", "", "client or management")
	var policies stringList
	fs.Var(&policies, "policy", "a policy of the token (repeatable; replaces all its policies; client tokens)")
	if done, code := parseFlags(fs, args, 1, 1); done {
		return code
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	id := fs.Arg(0)
	// Start from the stored token so an update changes only what was
	// asked for (the server replaces every field it is sent).
	tok, _, err := client.ACLTokens().Info(c.ctx, id, nil)
	switch {
	case api.IsNotFound(err):
		return c.fail("retrieving token", fmt.Errorf("no ACL token has accessor ID %q", id))
	case err != nil:
		return c.fail("retrieving token", err)
	}
	if given["name"] {
		tok.Name = *name
	}
	if given["type"] {
		tok.Type = *typ
		if tok.Type == state.ACLTokenTypeManagement && !given["policy"] {
			tok.Policies = nil
		}
	}
	if given["policy"] {
		tok.Policies = policies
	}
	// The server's own check, so a token it would refuse is refused with
	// its message before anything is sent.
	if err := tok.Validate(); err != nil {
		return c.fail("updating token", err)
	}
	updated, _, err := client.ACLTokens().Update(c.ctx, tok, nil)
	if err != nil {
		return c.fail("updating token", err)
	}
	c.printToken(updated)
	return 0
}
