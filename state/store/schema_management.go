package store

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state/mgmt"
)

// Management API tables. They are persisted in snapshots: never rename one.
const (
	TableOrganizations   = "organizations"
	TableUsers           = "users"
	TableTeams           = "teams"
	TableTeamMemberships = "team_memberships"
	TableProjects        = "projects"
	TableTeamProjects    = "team_projects"
	TableWorkspaces      = "workspaces"
	TableRuns            = "runs"
	TableStateVersions   = "state_versions"
	TablePolicySets      = "policy_sets"
	TableToolVersions    = "tool_versions"
	// TableOrgCounters holds per-organization row counts (see OrgCounter).
	TableOrgCounters = "org_counters"
)

// Index names of the management tables. Keys that order by CreateIndex
// give lists a stable creation order; keys on a lowercased name enforce
// and look up case-insensitive uniqueness.
const (
	// indexMgOrg: rows of one organization (in creation order where the
	// key holds CreateIndex).
	indexMgOrg = "org"
	// indexMgOrgName: (organization, lowercased name).
	indexMgOrgName = "org_name"
	// indexMgNameLower: lowercased name (organizations, usernames).
	indexMgNameLower = "name_lower"
	// indexMgExternal: an organization's external ID.
	indexMgExternal = "external"
	// indexMgUser: memberships of one user.
	indexMgUser = "user"
	// indexMgOrgUser: memberships of one user in one organization.
	indexMgOrgUser = "org_user"
	// indexMgProject: rows of one project.
	indexMgProject = "project"
	// indexMgTeam: team-projects by (team, project).
	indexMgTeam = "team"
	// indexMgWorkspace: runs and state versions of one workspace, oldest
	// first.
	indexMgWorkspace = "workspace"
	// indexMgCreated: every row in creation order.
	indexMgCreated = "created"
	// indexMgToolVersion: workspaces by the tool version they use.
	indexMgToolVersion = "tool_version"
	// indexMgPolicyVersion: policy sets by the policy version they use.
	indexMgPolicyVersion = "policy_version"
	// indexMgFamily: tool versions of one family, in creation order.
	indexMgFamily = "family"
	// indexMgFamilyVersion: tool versions by (family, version).
	indexMgFamilyVersion = "family_version"
)

// mgmtTableDefs are the management API's tables; managementTables returns
// them.
func mgmtTableDefs() []tableDef {
	lower := strings.ToLower
	return []tableDef{
		{
			name: TableOrganizations,
			indexes: map[string]keyFunc{
				indexID:          func(o any) []any { return []any{o.(*mgmt.Organization).Name} },
				indexMgNameLower: func(o any) []any { return []any{lower(o.(*mgmt.Organization).Name)} },
				indexMgExternal:  func(o any) []any { return []any{o.(*mgmt.Organization).ExternalID} },
			},
			newRow: func() any { return new(mgmt.Organization) },
		},
		{
			name: TableUsers,
			indexes: map[string]keyFunc{
				indexID:          func(o any) []any { return []any{o.(*mgmt.User).ID} },
				indexMgNameLower: func(o any) []any { return []any{lower(o.(*mgmt.User).Username)} },
			},
			newRow: func() any { return new(mgmt.User) },
		},
		{
			name: TableTeams,
			indexes: map[string]keyFunc{
				indexID:        func(o any) []any { return []any{o.(*mgmt.Team).ID} },
				indexMgOrg:     func(o any) []any { t := o.(*mgmt.Team); return []any{t.OrganizationName, t.CreateIndex} },
				indexMgOrgName: func(o any) []any { t := o.(*mgmt.Team); return []any{t.OrganizationName, lower(t.Name)} },
			},
			newRow: func() any { return new(mgmt.Team) },
		},
		{
			name: TableTeamMemberships,
			indexes: map[string]keyFunc{
				indexID:        func(o any) []any { m := o.(*mgmt.TeamMembership); return []any{m.TeamID, m.UserID} },
				indexMgUser:    func(o any) []any { return []any{o.(*mgmt.TeamMembership).UserID} },
				indexMgOrgUser: func(o any) []any { m := o.(*mgmt.TeamMembership); return []any{m.OrganizationName, m.UserID} },
			},
			newRow: func() any { return new(mgmt.TeamMembership) },
		},
		{
			name: TableProjects,
			indexes: map[string]keyFunc{
				indexID:        func(o any) []any { return []any{o.(*mgmt.Project).ID} },
				indexMgOrg:     func(o any) []any { p := o.(*mgmt.Project); return []any{p.OrganizationName, p.CreateIndex} },
				indexMgOrgName: func(o any) []any { p := o.(*mgmt.Project); return []any{p.OrganizationName, lower(p.Name)} },
			},
			newRow: func() any { return new(mgmt.Project) },
		},
		{
			name: TableTeamProjects,
			indexes: map[string]keyFunc{
				indexID:        func(o any) []any { return []any{o.(*mgmt.TeamProject).ID} },
				indexMgProject: func(o any) []any { r := o.(*mgmt.TeamProject); return []any{r.ProjectID, r.CreateIndex} },
				indexMgTeam:    func(o any) []any { r := o.(*mgmt.TeamProject); return []any{r.TeamID, r.ProjectID} },
			},
			newRow: func() any { return new(mgmt.TeamProject) },
		},
		{
			name: TableWorkspaces,
			indexes: map[string]keyFunc{
				indexID:            func(o any) []any { return []any{o.(*mgmt.Workspace).ID} },
				indexMgOrg:         func(o any) []any { w := o.(*mgmt.Workspace); return []any{w.OrganizationName, w.CreateIndex} },
				indexMgOrgName:     func(o any) []any { w := o.(*mgmt.Workspace); return []any{w.OrganizationName, lower(w.Name)} },
				indexMgProject:     func(o any) []any { w := o.(*mgmt.Workspace); return []any{w.ProjectID, w.CreateIndex} },
				indexMgCreated:     func(o any) []any { return []any{o.(*mgmt.Workspace).CreateIndex} },
				indexMgToolVersion: func(o any) []any { return []any{o.(*mgmt.Workspace).ToolVersion} },
			},
			newRow: func() any { return new(mgmt.Workspace) },
		},
		{
			name: TableRuns,
			indexes: map[string]keyFunc{
				indexID:          func(o any) []any { return []any{o.(*mgmt.Run).ID} },
				indexMgWorkspace: func(o any) []any { r := o.(*mgmt.Run); return []any{r.WorkspaceID, r.CreateIndex} },
			},
			newRow: func() any { return new(mgmt.Run) },
		},
		{
			name: TableStateVersions,
			indexes: map[string]keyFunc{
				indexID:          func(o any) []any { return []any{o.(*mgmt.StateVersion).ID} },
				indexMgWorkspace: func(o any) []any { v := o.(*mgmt.StateVersion); return []any{v.WorkspaceID, v.CreateIndex} },
			},
			newRow: func() any { return new(mgmt.StateVersion) },
		},
		{
			name: TablePolicySets,
			indexes: map[string]keyFunc{
				indexID:              func(o any) []any { return []any{o.(*mgmt.PolicySet).ID} },
				indexMgOrg:           func(o any) []any { p := o.(*mgmt.PolicySet); return []any{p.OrganizationName, p.CreateIndex} },
				indexMgOrgName:       func(o any) []any { p := o.(*mgmt.PolicySet); return []any{p.OrganizationName, lower(p.Name)} },
				indexMgPolicyVersion: func(o any) []any { return []any{o.(*mgmt.PolicySet).PolicyToolVersion} },
			},
			newRow: func() any { return new(mgmt.PolicySet) },
		},
		{
			name: TableToolVersions,
			indexes: map[string]keyFunc{
				indexID:              func(o any) []any { return []any{o.(*mgmt.ToolVersion).ID} },
				indexMgFamily:        func(o any) []any { v := o.(*mgmt.ToolVersion); return []any{v.Family, v.CreateIndex} },
				indexMgFamilyVersion: func(o any) []any { v := o.(*mgmt.ToolVersion); return []any{v.Family, v.Version} },
			},
			newRow: func() any { return new(mgmt.ToolVersion) },
		},
		{
			name: TableOrgCounters,
			indexes: map[string]keyFunc{
				indexID: func(o any) []any { c := o.(*OrgCounter); return []any{c.Table, c.OrganizationName} },
			},
			newRow: func() any { return new(OrgCounter) },
		},
	}
}

// OrgCounter counts the rows of one table (projects, workspaces) that one
// organization holds. Apply keeps it with every create and delete, so that
// an unfiltered list answers its total, and a workspace create checks the
// workspace limit, without walking every row. A missing counter is 0.
type OrgCounter struct {
	Table            string
	OrganizationName string
	Count            int
	CreateIndex      uint64
	ModifyIndex      uint64
}

// orgCount returns organization org's count of table's rows.
func orgCount(ws memdb.WatchSet, txn *memdb.Txn, table, org string) (int, error) {
	c, err := first[*OrgCounter](ws, txn, TableOrgCounters, indexID, table, org)
	if err != nil || c == nil {
		return 0, err
	}
	return c.Count, nil
}

// bumpOrgCount adds delta to organization org's count of table's rows; a
// count that reaches 0 is removed.
func bumpOrgCount(t *writeTxn, table, org string, delta int) error {
	old, err := getRow[*OrgCounter](t, TableOrgCounters, table, org)
	if err != nil {
		return err
	}
	c := &OrgCounter{Table: table, OrganizationName: org, Count: delta, CreateIndex: t.index, ModifyIndex: t.index}
	if old != nil {
		c.Count += old.Count
		c.CreateIndex = old.CreateIndex
	}
	switch {
	case c.Count < 0:
		return fmt.Errorf("count of %s in organization %q would go negative", table, org)
	case c.Count == 0 && old != nil:
		return t.delete(TableOrgCounters, old)
	case c.Count == 0:
		return nil
	}
	return t.insert(TableOrgCounters, c)
}

// insertCounted inserts a new row of a counted table (projects,
// workspaces) and bumps its organization's count.
func insertCounted(t *writeTxn, table, org string, row any) error {
	if err := t.insert(table, row); err != nil {
		return err
	}
	return bumpOrgCount(t, table, org, 1)
}

// deleteCounted deletes a row of a counted table and lowers its
// organization's count.
func deleteCounted(t *writeTxn, table, org string, row any) error {
	if err := t.delete(table, row); err != nil {
		return err
	}
	return bumpOrgCount(t, table, org, -1)
}
