package command

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/http/api/mgmt"
)

// projectCLI holds the commands of `sched project`.
type projectCLI struct{ *cli }

// Projects and workspaces are named on the command line by ID (prj-…,
// ws-…) or by name. A name is looked up in the -org organization; an
// argument with the ID prefix is always taken as an ID, even though a
// project could be called "prj-x" (a user with such a name passes its ID).
const (
	mgmtProjectIDPrefix   = "prj-"
	mgmtWorkspaceIDPrefix = "ws-"
)

func (c *projectCLI) table() []entry {
	return []entry{
		{"list", "List the projects of an organization", c.projectList, nil},
		{"create", "Create a project", c.projectCreate, nil},
		{"delete", "Delete a project", c.projectDelete, nil},
		{"move", "Move workspaces into a project", c.projectMove, nil},
	}
}

func (c *projectCLI) projectList(args []string) int {
	fs, m := c.mgmtFlagSet("project list", "[options]", `
List the projects of the organization, in the server's stable order unless
-sort says otherwise.`)
	m.orgFlag(fs)
	m.jsonFlag(fs)
	var pf mgmtPageFlags
	pf.register(fs)
	query := fs.String("q", "", "search project names (case-insensitive); ignored with -names")
	names := fs.String("names", "", "comma-separated project names to show (case-insensitive)")
	sort := fs.String("sort", "", `"name" or "-name"`)
	canCreate := fs.Bool("can-create-workspace", false, "only projects where the token may create workspaces")
	canUpdate := fs.Bool("can-update", false, "only projects the token may update")
	if done, code := parseFlags(fs, args, 0, 0); done {
		return code
	}
	if err := pf.check(); err != nil {
		return mgmtUsageError(fs, err)
	}
	if err := m.requireOrg(); err != nil {
		return mgmtUsageError(fs, err)
	}
	client, err := m.mgmt()
	if err != nil {
		return c.fail("creating client", err)
	}
	opts := mgmt.ProjectListOptions{Query: *query, Names: mgmtSplitList(*names), Sort: *sort,
		CanCreateWorkspace: *canCreate, CanUpdate: *canUpdate}
	projects, pg, err := mgmtFetchPages(pf, func(p mgmt.PageOptions) ([]*mgmt.Project, *mgmt.Pagination, error) {
		o := opts
		o.PageOptions = p
		list, err := client.Projects().List(c.ctx, m.org, o)
		if err != nil {
			return nil, nil, err
		}
		return list.Items, list.Pagination, nil
	})
	if err != nil {
		return c.fail("retrieving projects", err)
	}
	return mgmtPrintList(c.cli, m, pf, pg, projects, "projects", []string{"ID", "Name", "Workspaces", "Teams", "Description"},
		func(p *mgmt.Project) []string {
			return []string{p.ID, p.Name, strconv.Itoa(p.WorkspaceCount), strconv.Itoa(p.TeamCount), p.Description}
		})
}

func (c *projectCLI) projectCreate(args []string) int {
	fs, m := c.mgmtFlagSet("project create", "[options] NAME", `
Create the project NAME in the organization. Names are 3 to 40 letters,
digits, spaces, "-" or "_", unique in the organization regardless of case.`)
	m.orgFlag(fs)
	m.jsonFlag(fs)
	description := fs.String("description", "", "description of the project, at most 256 characters")
	autoDestroy := fs.String("auto-destroy-activity-duration", "",
		`inactivity period after which the project's workspaces destroy their infrastructure, such as "14d" or "12h"`)
	if done, code := parseFlags(fs, args, 1, 1); done {
		return code
	}
	if err := m.requireOrg(); err != nil {
		return mgmtUsageError(fs, err)
	}
	client, err := m.mgmt()
	if err != nil {
		return c.fail("creating client", err)
	}
	p, err := client.Projects().Create(c.ctx, m.org, mgmt.ProjectCreateOptions{
		Name: fs.Arg(0), Description: description, AutoDestroyActivityDuration: autoDestroy,
	})
	if err != nil {
		return c.fail("creating project", err)
	}
	if m.json {
		return c.printJSON(p)
	}
	fmt.Fprintf(c.stdout, "Successfully created project %q with ID %q!\n", p.Name, p.ID)
	return 0
}

func (c *projectCLI) projectDelete(args []string) int {
	fs, m := c.mgmtFlagSet("project delete", "[options] PROJECT", `
Delete PROJECT, given by ID (prj-...) or by name in the -org organization.
The server refuses to delete a project that still holds workspaces: move
or delete them first.`)
	m.orgFlag(fs)
	client, code := c.parseMgmt(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	id, err := c.mgmtResolveProject(client, m, fs.Arg(0))
	if err != nil {
		return c.fail("looking up project", err)
	}
	if err := client.Projects().Delete(c.ctx, id); err != nil {
		return c.fail("deleting project", err)
	}
	fmt.Fprintf(c.stdout, "Successfully deleted project %q!\n", id)
	return 0
}

func (c *projectCLI) projectMove(args []string) int {
	fs, m := c.mgmtFlagSet("project move", "[options] PROJECT WORKSPACE...", `
Move the WORKSPACEs into PROJECT: all of them, or none when one is missing or
the token may not move it. Projects are given by ID (prj-...) or name,
workspaces by ID (ws-...) or name; names are looked up in the -org
organization.`)
	m.orgFlag(fs)
	if done, code := parseFlags(fs, args, 0, 1<<20); done {
		return code
	}
	if fs.NArg() < 2 {
		return mgmtUsageError(fs, fmt.Errorf("this command takes a project and at least one workspace, got %d argument(s)", fs.NArg()))
	}
	client, err := m.mgmt()
	if err != nil {
		return c.fail("creating client", err)
	}
	id, err := c.mgmtResolveProject(client, m, fs.Arg(0))
	if err != nil {
		return c.fail("looking up project", err)
	}
	workspaces := make([]string, 0, fs.NArg()-1)
	for _, arg := range fs.Args()[1:] {
		ws, err := c.mgmtResolveWorkspace(client, m, arg)
		if err != nil {
			return c.fail("looking up workspace", err)
		}
		workspaces = append(workspaces, ws)
	}
	if err := client.Projects().MoveWorkspaces(c.ctx, id, workspaces); err != nil {
		return c.fail("moving workspaces", err)
	}
	fmt.Fprintf(c.stdout, "Successfully moved %d workspace(s) into project %q!\n", len(workspaces), id)
	return 0
}

// mgmtResolveProject returns the ID of the project arg names: arg itself when
// it is an ID, else the project of that name (any case) in m.org.
func (c *projectCLI) mgmtResolveProject(client *mgmt.Client, m *mgmtMeta, arg string) (string, error) {
	if strings.HasPrefix(arg, mgmtProjectIDPrefix) {
		return arg, nil
	}
	if m.org == "" {
		return "", fmt.Errorf("%q is not a project ID (%s...); to find it by name, %w", arg, mgmtProjectIDPrefix, errMgmtNoOrg)
	}
	list, err := client.Projects().List(c.ctx, m.org, mgmt.ProjectListOptions{
		Names: []string{arg}, PageOptions: mgmt.PageOptions{PageSize: mgmtAllPagesSize}})
	if err != nil {
		return "", err
	}
	for _, p := range list.Items {
		if strings.EqualFold(p.Name, arg) {
			return p.ID, nil
		}
	}
	return "", fmt.Errorf("no project named %q in organization %q", arg, m.org)
}

// mgmtResolveWorkspace returns the ID of the workspace arg names: arg itself
// when it is an ID, else the workspace of that name in m.org.
func (c *projectCLI) mgmtResolveWorkspace(client *mgmt.Client, m *mgmtMeta, arg string) (string, error) {
	if strings.HasPrefix(arg, mgmtWorkspaceIDPrefix) {
		return arg, nil
	}
	if m.org == "" {
		return "", fmt.Errorf("%q is not a workspace ID (%s...); to find it by name, %w", arg, mgmtWorkspaceIDPrefix, errMgmtNoOrg)
	}
	ws, err := client.Workspaces().Read(c.ctx, m.org, arg)
	if api.IsNotFound(err) {
		return "", fmt.Errorf("no workspace named %q in organization %q", arg, m.org)
	}
	if err != nil {
		return "", err
	}
	return ws.ID, nil
}
