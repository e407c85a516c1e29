package command

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/schedhq/sched/state"
)

func (c *aclCLI) policyTable() []entry {
	return []entry{
		{"apply", "Create or update a policy", c.aclPolicyApply, nil},
		{"delete", "Delete a policy", c.aclPolicyDelete, nil},
		{"info", "Show a policy", c.aclPolicyInfo, nil},
		{"list", "List policies", c.aclPolicyList, nil},
	}
}

func (c *aclCLI) aclPolicyApply(args []string) int {
	fs, m := c.flagSet("acl policy apply", "[options] NAME PATH", `
Create the policy NAME, or replace it, with the rules in the file PATH ("-"
reads standard input). Rules are HCL or JSON:

    namespace "default" { policy = "read" }
    node { policy = "read" }`)
	description := fs.String("description", "", "a human-readable description")
	if done, code := parseFlags(fs, args, 2, 2); done {
		return code
	}
	rules, err := c.readRulesFile(fs.Arg(1))
	if err != nil {
		return c.fail("reading the policy rules", err)
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	name := fs.Arg(0)
	if _, _, err := client.ACLPolicies().Upsert(c.ctx, &state.ACLPolicy{Name: name, Description: *description, Rules: rules}, nil); err != nil {
		return c.fail("writing policy", err)
	}
	fmt.Fprintf(c.stdout, "Successfully wrote %q ACL policy!\n", name)
	return 0
}

// readRulesFile reads a rules file ("-" is standard input), up to 64 KiB
// and one byte more, so the server names an oversized file.
func (c *aclCLI) readRulesFile(path string) (string, error) {
	const limit = 64<<10 + 1
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(io.LimitReader(c.stdin, limit))
	} else {
		var f *os.File
		if f, err = os.Open(path); err != nil {
			return "", err
		}
		defer f.Close()
		data, err = io.ReadAll(io.LimitReader(f, limit))
	}
	return string(data), err
}

func (c *aclCLI) aclPolicyList(args []string) int {
	fs, m := c.flagSet("acl policy list", "[options]", "List the policies the token may see: all of them with a management token, its own otherwise.")
	asJSON := c.outputFlags(fs, "print the policies as JSON")
	client, code := c.parseClient(fs, m, args, 0, 0)
	if client == nil {
		return code
	}
	list, _, err := client.ACLPolicies().List(c.ctx, nil)
	if err != nil {
		return c.fail("retrieving policies", err)
	}
	if *asJSON {
		return c.printJSON(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(c.stdout, "No policies found")
		return 0
	}
	rows := make([][]string, 0, len(list))
	for _, p := range list {
		rows = append(rows, []string{p.Name, p.Description})
	}
	writeTable(c.stdout, []string{"Name", "Description"}, rows)
	return 0
}

func (c *aclCLI) aclPolicyInfo(args []string) int {
	fs, m := c.flagSet("acl policy info", "[options] NAME", "Show the policy NAME and its rules.")
	asJSON := c.outputFlags(fs, "print the policy as JSON")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	p, _, err := client.ACLPolicies().Info(c.ctx, fs.Arg(0), nil)
	if err != nil {
		return c.fail("retrieving policy", err)
	}
	if *asJSON {
		return c.printJSON(p)
	}
	writeKV(c.stdout, []kv{
		{"Name", p.Name},
		{"Description", orNone(p.Description)},
		{"CreateIndex", strconv.FormatUint(p.CreateIndex, 10)},
		{"ModifyIndex", strconv.FormatUint(p.ModifyIndex, 10)},
	})
	fmt.Fprintf(c.stdout, "\nRules\n\n%s\n", strings.TrimRight(p.Rules, "\n"))
	return 0
}

func (c *aclCLI) aclPolicyDelete(args []string) int {
	fs, m := c.flagSet("acl policy delete", "[options] NAME", "Delete the policy NAME. Tokens that name it lose its rules.")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	if _, err := client.ACLPolicies().Delete(c.ctx, fs.Arg(0), nil); err != nil {
		return c.fail("deleting policy", err)
	}
	fmt.Fprintf(c.stdout, "Successfully deleted %q ACL policy!\n", fs.Arg(0))
	return 0
}
