package command

import (
	"fmt"

	"github.com/schedhq/sched/http/api/mgmt"
)

// orgCLI holds the commands of `sched org`.
type orgCLI struct{ *cli }

func (c *orgCLI) table() []entry {
	return []entry{
		{"create", "Create an organization", c.orgCreate, nil},
		{"list", "List organizations", c.orgList, nil},
	}
}

func (c *orgCLI) orgCreate(args []string) int {
	fs, m := c.mgmtFlagSet("org create", "[options] NAME",
		"Create the organization NAME. The server gives it an owners team, with the token's user on it, and a \"Default Project\".")
	m.jsonFlag(fs)
	email := fs.String("email", "", "contact e-mail address of the organization")
	client, code := c.parseMgmt(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	org, err := client.Organizations().Create(c.ctx, mgmt.OrganizationCreateOptions{Name: fs.Arg(0), Email: *email})
	if err != nil {
		return c.fail("creating organization", err)
	}
	if m.json {
		return c.printJSON(org)
	}
	fmt.Fprintf(c.stdout, "Successfully created organization %q!\n", org.Name)
	return 0
}

func (c *orgCLI) orgList(args []string) int {
	fs, m := c.mgmtFlagSet("org list", "[options]", "List the organizations the token may see.")
	m.jsonFlag(fs)
	var pf mgmtPageFlags
	pf.register(fs)
	if done, code := parseFlags(fs, args, 0, 0); done {
		return code
	}
	if err := pf.check(); err != nil {
		return mgmtUsageError(fs, err)
	}
	client, err := m.mgmt()
	if err != nil {
		return c.fail("creating client", err)
	}
	orgs, pg, err := mgmtFetchPages(pf, func(p mgmt.PageOptions) ([]*mgmt.Organization, *mgmt.Pagination, error) {
		page, err := client.Organizations().List(c.ctx, p)
		if err != nil {
			return nil, nil, err
		}
		return page.Items, page.Pagination, nil
	})
	if err != nil {
		return c.fail("retrieving organizations", err)
	}
	return mgmtPrintList(c.cli, m, pf, pg, orgs, "organizations", []string{"Name", "External ID", "Email", "Created"},
		func(o *mgmt.Organization) []string {
			return []string{o.Name, o.ExternalID, o.Email, c.mgmtTime(o.CreatedAt)}
		})
}
