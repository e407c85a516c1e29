package command

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/schedhq/sched/http/api/mgmt"
)

// adminCLI holds the commands of `sched admin`: the site administrator's
// view of organizations, workspaces and versions.
type adminCLI struct{ *cli }

// `sched admin` drives the site-administration endpoints. The server
// answers 404 to every one of them for a token that is not a site
// administrator's, so a "not found" here may also mean "not an admin".

func (c *adminCLI) table() []entry {
	return []entry{
		{"org", "Administer organizations", nil, c.orgTable()},
		{"workspace", "Administer workspaces", nil, c.workspaceTable()},
		{"tool-version", "Administer the tool versions runs may use", nil, c.versionTable(mgmtToolVersions)},
		{"policy-version", "Administer the policy engine versions runs may use", nil, c.versionTable(mgmtPolicyVersions)},
	}
}

func (c *adminCLI) orgTable() []entry {
	return []entry{
		{"list", "List every organization", c.adminOrgList, nil},
		{"show", "Show one organization", c.adminOrgShow, nil},
		{"update", "Change an organization's settings", c.adminOrgUpdate, nil},
		{"delete", "Delete an organization and everything in it", c.adminOrgDelete, nil},
	}
}

func (c *adminCLI) adminOrgList(args []string) int {
	fs, m := c.mgmtFlagSet("admin org list", "[options]", "List every organization of the installation.")
	m.jsonFlag(fs)
	var pf mgmtPageFlags
	pf.register(fs)
	query := fs.String("q", "", "search names and notification e-mails; wins over -email and -name")
	email := fs.String("email", "", "search notification e-mails")
	name := fs.String("name", "", "search names (with -email, both must match)")
	moduleProducer := fs.Bool("module-producer", false, "only organizations that share modules (=false: that do not)")
	providerProducer := fs.Bool("provider-producer", false, "only organizations that share providers (=false: that do not)")
	if done, code := parseFlags(fs, args, 0, 0); done {
		return code
	}
	if err := pf.check(); err != nil {
		return mgmtUsageError(fs, err)
	}
	set := mgmtGiven(fs)
	client, err := m.mgmt()
	if err != nil {
		return c.fail("creating client", err)
	}
	opts := mgmt.AdminOrganizationListOptions{Query: *query, QueryEmail: *email, QueryName: *name,
		ModuleProducer: mgmtBoolIf(set, "module-producer", *moduleProducer), ProviderProducer: mgmtBoolIf(set, "provider-producer", *providerProducer)}
	orgs, pg, err := mgmtFetchPages(pf, func(p mgmt.PageOptions) ([]*mgmt.AdminOrganization, *mgmt.Pagination, error) {
		o := opts
		o.PageOptions = p
		list, err := client.Admin().Organizations().List(c.ctx, o)
		if err != nil {
			return nil, nil, err
		}
		return list.Items, list.Pagination, nil
	})
	if err != nil {
		return c.fail("retrieving organizations", err)
	}
	return mgmtPrintList(c.cli, m, pf, pg, orgs, "organizations", []string{"Name", "External ID", "Email", "Disabled", "Workspace Limit"},
		func(o *mgmt.AdminOrganization) []string {
			return []string{o.Name, o.ExternalID, o.NotificationEmail, mgmtYesNo(o.IsDisabled), mgmtWorkspaceLimit(o.WorkspaceLimit)}
		})
}

// mgmtWorkspaceLimit prints a workspace limit; nil is "<none>".
func mgmtWorkspaceLimit(limit *int) string {
	if limit == nil {
		return "<none>"
	}
	return strconv.Itoa(*limit)
}

func (c *adminCLI) adminOrgShow(args []string) int {
	fs, m := c.mgmtFlagSet("admin org show", "[options] NAME", "Show the organization NAME with its owners.")
	m.jsonFlag(fs)
	client, code := c.parseMgmt(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	org, err := client.Admin().Organizations().Read(c.ctx, fs.Arg(0), true)
	if err != nil {
		return c.fail("retrieving organization", err)
	}
	if m.json {
		return c.printJSON(org)
	}
	c.printAdminOrg(org)
	return 0
}

// printAdminOrg prints an organization's admin view as a detail block.
func (c *adminCLI) printAdminOrg(o *mgmt.AdminOrganization) {
	// Owners by username when the answer included them, by ID otherwise.
	owners := o.OwnerIDs
	if len(o.Owners) > 0 {
		owners = make([]string, 0, len(o.Owners))
		for _, u := range o.Owners {
			owners = append(owners, u.Username)
		}
	}
	writeKV(c.stdout, []kv{
		{"Name", o.Name},
		{"External ID", o.ExternalID},
		{"Notification Email", orNone(o.NotificationEmail)},
		{"Disabled", mgmtYesNo(o.IsDisabled)},
		{"Access Beta Tools", mgmtYesNo(o.AccessBetaTools)},
		{"Apply Timeout", orNone(o.ApplyTimeout)},
		{"Plan Timeout", orNone(o.PlanTimeout)},
		{"Tool Worker Sudo", mgmtYesNo(o.ToolWorkerSudoEnabled)},
		{"Global Module Sharing", mgmtYesNo(o.GlobalModuleSharing)},
		{"Global Provider Sharing", mgmtYesNo(o.GlobalProviderSharing)},
		{"SSO Enabled", mgmtYesNo(o.SSOEnabled)},
		{"Workspace Limit", mgmtWorkspaceLimit(o.WorkspaceLimit)},
		{"Owners", orNone(strings.Join(owners, ", "))},
	})
}

func (c *adminCLI) adminOrgUpdate(args []string) int {
	fs, m := c.mgmtFlagSet("admin org update", "[options] NAME", `
Change the settings of the organization NAME. Only the options given are
sent; the others keep their values. An empty -apply-timeout or -plan-timeout
restores the default (24h, 2h).`)
	m.jsonFlag(fs)
	betaTools := fs.Bool("access-beta-tools", false, "let workspaces use beta tool versions")
	moduleSharing := fs.Bool("global-module-sharing", false, "share modules with every organization (clears module consumers)")
	providerSharing := fs.Bool("global-provider-sharing", false, "share providers with every organization (clears provider consumers)")
	disabled := fs.Bool("is-disabled", false, "make the organization inaccessible to its members")
	applyTimeout := fs.String("apply-timeout", "", `longest apply, such as "24h"`)
	planTimeout := fs.String("plan-timeout", "", `longest plan, such as "2h"`)
	limit := fs.Int("workspace-limit", 0, "most workspaces the organization may hold; 0 for no limit")
	if done, code := parseFlags(fs, args, 1, 1); done {
		return code
	}
	set := mgmtGiven(fs)
	opts := mgmt.AdminOrganizationUpdateOptions{
		AccessBetaTools:       mgmtBoolIf(set, "access-beta-tools", *betaTools),
		GlobalModuleSharing:   mgmtBoolIf(set, "global-module-sharing", *moduleSharing),
		GlobalProviderSharing: mgmtBoolIf(set, "global-provider-sharing", *providerSharing),
		IsDisabled:            mgmtBoolIf(set, "is-disabled", *disabled),
		ApplyTimeout:          mgmtStrIf(set, "apply-timeout", *applyTimeout),
		PlanTimeout:           mgmtStrIf(set, "plan-timeout", *planTimeout),
	}
	if set["workspace-limit"] {
		opts.WorkspaceLimit = limit
	}
	if !mgmtAnyGiven(set, "access-beta-tools", "global-module-sharing", "global-provider-sharing", "is-disabled",
		"apply-timeout", "plan-timeout", "workspace-limit") {
		return mgmtUsageError(fs, fmt.Errorf("nothing to update: give at least one setting"))
	}
	client, err := m.mgmt()
	if err != nil {
		return c.fail("creating client", err)
	}
	org, err := client.Admin().Organizations().Update(c.ctx, fs.Arg(0), opts)
	if err != nil {
		return c.fail("updating organization", err)
	}
	if m.json {
		return c.printJSON(org)
	}
	fmt.Fprintf(c.stdout, "Successfully updated organization %q!\n", org.Name)
	return 0
}

// mgmtAnyGiven reports whether any of names was given.
func mgmtAnyGiven(set map[string]bool, names ...string) bool {
	for _, n := range names {
		if set[n] {
			return true
		}
	}
	return false
}

func (c *adminCLI) adminOrgDelete(args []string) int {
	fs, m := c.mgmtFlagSet("admin org delete", "[options] NAME",
		"Delete the organization NAME with its projects, teams and workspaces.")
	client, code := c.parseMgmt(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	if err := client.Admin().Organizations().Delete(c.ctx, fs.Arg(0)); err != nil {
		return c.fail("deleting organization", err)
	}
	fmt.Fprintf(c.stdout, "Successfully deleted organization %q!\n", fs.Arg(0))
	return 0
}

func (c *adminCLI) workspaceTable() []entry {
	return []entry{
		{"list", "List every workspace", c.adminWorkspaceList, nil},
		{"show", "Show one workspace", c.adminWorkspaceShow, nil},
		{"delete", "Delete a workspace", c.adminWorkspaceDelete, nil},
	}
}

func (c *adminCLI) adminWorkspaceList(args []string) int {
	fs, m := c.mgmtFlagSet("admin workspace list", "[options]", "List every workspace of the installation.")
	m.jsonFlag(fs)
	var pf mgmtPageFlags
	pf.register(fs)
	query := fs.String("q", "", "search workspace and organization names")
	status := fs.String("status", "", "comma-separated statuses of the current run to keep, such as applied,errored")
	sort := fs.String("sort", "", `"name", "current-run.created-at" or "latest-change-at", each optionally prefixed with "-"`)
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
	opts := mgmt.AdminWorkspaceListOptions{Query: *query, RunStatuses: mgmtSplitList(*status), Sort: *sort,
		Include: []string{mgmt.AdminIncludeCurrentRun}}
	list, pg, err := mgmtFetchPages(pf, func(p mgmt.PageOptions) ([]*mgmt.Workspace, *mgmt.Pagination, error) {
		o := opts
		o.PageOptions = p
		l, err := client.Admin().Workspaces().List(c.ctx, o)
		if err != nil {
			return nil, nil, err
		}
		return l.Items, l.Pagination, nil
	})
	if err != nil {
		return c.fail("retrieving workspaces", err)
	}
	return mgmtPrintList(c.cli, m, pf, pg, list, "workspaces", []string{"ID", "Name", "Organization", "Locked", "Run Status"},
		func(w *mgmt.Workspace) []string {
			return []string{w.ID, w.Name, w.Organization, mgmtYesNo(w.Locked), mgmtRunStatus(w)}
		})
}

// mgmtRunStatus is the status of w's current run, "<none>" without one, or
// its ID when the answer did not include the run.
func mgmtRunStatus(w *mgmt.Workspace) string {
	switch {
	case w.CurrentRun != nil:
		return w.CurrentRun.Status
	case w.CurrentRunID == "":
		return "<none>"
	}
	return w.CurrentRunID
}

func (c *adminCLI) adminWorkspaceShow(args []string) int {
	fs, m := c.mgmtFlagSet("admin workspace show", "[options] ID", "Show the workspace ID (ws-...).")
	m.jsonFlag(fs)
	client, code := c.parseMgmt(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	w, err := client.Admin().Workspaces().Read(c.ctx, fs.Arg(0), mgmt.AdminIncludeCurrentRun)
	if err != nil {
		return c.fail("retrieving workspace", err)
	}
	if m.json {
		return c.printJSON(w)
	}
	repo := ""
	if w.VCSRepo != nil {
		repo = w.VCSRepo.Identifier
	}
	writeKV(c.stdout, []kv{
		{"ID", w.ID},
		{"Name", w.Name},
		{"Organization", w.Organization},
		{"Locked", mgmtYesNo(w.Locked)},
		{"VCS Repo", orNone(repo)},
		{"Current Run", orNone(w.CurrentRunID)},
		{"Run Status", mgmtRunStatus(w)},
	})
	return 0
}

func (c *adminCLI) adminWorkspaceDelete(args []string) int {
	fs, m := c.mgmtFlagSet("admin workspace delete", "[options] ID", "Delete the workspace ID (ws-...).")
	client, code := c.parseMgmt(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	if err := client.Admin().Workspaces().Delete(c.ctx, fs.Arg(0)); err != nil {
		return c.fail("deleting workspace", err)
	}
	fmt.Fprintf(c.stdout, "Successfully deleted workspace %q!\n", fs.Arg(0))
	return 0
}
