package mgmt

import (
	"net/url"
	"strings"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

// Resource objects of the management API, built from state objects. Go
// names become the kebab-case attributes of the spec; absent optional
// values are null; every resource links to itself and its relationships
// link to what they name.

// JSON:API types of the management API's resources.
const (
	typeOrganizations  = "organizations"
	typeUsers          = "users"
	typeTeams          = "teams"
	typeProjects       = "projects"
	typeTeamProjects   = "team-projects"
	typeWorkspaces     = "workspaces"
	typeRuns           = "runs"
	typeStateVersions  = "state-versions"
	typePolicySets     = "policy-sets"
	typeToolVersions   = "tool-versions"
	typePolicyVersions = "policy-versions"
	typeAuthTokens     = "authentication-tokens"
	typeTagBindings    = "tag-bindings"
	typeEffectiveTags  = "effective-tag-bindings"
	typeAgentPools     = "agent-pools"
)

func orgPath(name string) string   { return apiPrefix + "/organizations/" + url.PathEscape(name) }
func projectPath(id string) string { return apiPrefix + "/projects/" + url.PathEscape(id) }
func teamPath(id string) string    { return apiPrefix + "/teams/" + url.PathEscape(id) }
func userPath(id string) string    { return apiPrefix + "/users/" + url.PathEscape(id) }
func runPath(id string) string     { return apiPrefix + "/runs/" + url.PathEscape(id) }

// workspacePath is a workspace's address under its organization, the self
// link TFE gives workspaces (spec §2, admin workspace view).
func workspacePath(w *mgmt.Workspace) string {
	return orgPath(w.OrganizationName) + "/workspaces/" + url.PathEscape(w.Name)
}

func selfLink(path string) map[string]string { return map[string]string{"self": path} }

func orgRel(name string) *jsonapi.Relationship {
	return jsonapi.ToOne(typeOrganizations, name).Related(orgPath(name))
}

// organizationResource is the ordinary organization view: what its members
// see, with the caller's permissions in it.
func organizationResource(o *mgmt.Organization, a *mgmt.OrgAuthority) *jsonapi.Resource {
	perms := map[string]any{
		"can-update":           a.CanUpdateOrganization(),
		"can-destroy":          a.CanDestroyOrganization(),
		"can-create-team":      a.CanManageTeams(),
		"can-create-project":   a.CanCreateProject(),
		"can-manage-policies":  a.CanManagePolicies(),
		"can-create-workspace": a.Owner || a.Access.ManageWorkspaces,
		"can-manage-users":     a.CanManageMembership(),
	}
	return &jsonapi.Resource{
		ID:   o.Name,
		Type: typeOrganizations,
		Attributes: map[string]any{
			"name":                   o.Name,
			"external-id":            o.ExternalID,
			"email":                  o.Email,
			"created-at":             jsonapi.Time(o.CreatedAt),
			"default-execution-mode": mgmt.EffectiveExecutionMode(o, nil, nil),
			"permissions":            perms,
		},
		Relationships: map[string]*jsonapi.Relationship{
			"default-project": jsonapi.ToOne(typeProjects, o.DefaultProjectID).Related(projectPath(o.DefaultProjectID)),
			"owners-team":     jsonapi.ToOne(typeTeams, o.OwnersTeamID).Related(teamPath(o.OwnersTeamID)),
		},
		Links: selfLink(orgPath(o.Name)),
	}
}

// adminOrganizationResource is the site administrator's view (spec §2).
// The deprecated tool-build-worker timeouts show the same values as their
// replacements.
func adminOrganizationResource(o *mgmt.Organization, owners []*mgmt.User) *jsonapi.Resource {
	var limit any
	if o.WorkspaceLimit != nil {
		limit = *o.WorkspaceLimit
	}
	ids := make([]jsonapi.Identifier, len(owners))
	for i, u := range owners {
		ids[i] = jsonapi.Identifier{Type: typeUsers, ID: u.ID}
	}
	path := apiPrefix + "/admin/organizations/" + url.PathEscape(o.Name)
	return &jsonapi.Resource{
		ID:   o.Name,
		Type: typeOrganizations,
		Attributes: map[string]any{
			"name":                            o.Name,
			"external-id":                     o.ExternalID,
			"access-beta-tools":               o.AccessBetaTools,
			"is-disabled":                     o.IsDisabled,
			"apply-timeout":                   jsonapi.NullString(o.ApplyTimeout),
			"plan-timeout":                    jsonapi.NullString(o.PlanTimeout),
			"tool-build-worker-apply-timeout": jsonapi.NullString(o.ApplyTimeout),
			"tool-build-worker-plan-timeout":  jsonapi.NullString(o.PlanTimeout),
			"tool-worker-sudo-enabled":        o.ToolWorkerSudoEnabled,
			"notification-email":              o.Email,
			"global-module-sharing":           o.GlobalModuleSharing,
			"global-provider-sharing":         o.GlobalProviderSharing,
			"sso-enabled":                     o.SSOEnabled,
			"workspace-limit":                 limit,
			"created-at":                      jsonapi.Time(o.CreatedAt),
		},
		Relationships: map[string]*jsonapi.Relationship{
			"owners":             jsonapi.ToMany(ids),
			"subscription":       jsonapi.ToOne("subscriptions", ""),
			"feature-set":        jsonapi.ToOne("feature-sets", ""),
			"module-consumers":   jsonapi.LinksOnly(path + "/relationships/module-consumers"),
			"provider-consumers": jsonapi.LinksOnly(path + "/relationships/provider-consumers"),
		},
		Links: selfLink(path),
	}
}

// userResource is a user. E-mail addresses are shown to the user
// themselves and to site administrators only.
func userResource(u *mgmt.User, showEmail bool) *jsonapi.Resource {
	attrs := map[string]any{
		"username":      u.Username,
		"is-site-admin": u.IsAdmin,
		"is-admin":      u.IsAdmin,
		"created-at":    jsonapi.Time(u.CreatedAt),
	}
	if showEmail {
		attrs["email"] = u.Email
	}
	return &jsonapi.Resource{ID: u.ID, Type: typeUsers, Attributes: attrs, Links: selfLink(userPath(u.ID))}
}

// organizationAccessNames ties a team's organization-access attribute
// names to its permissions, in the order TFE lists them.
func organizationAccessNames(a *mgmt.TeamOrganizationAccess) []struct {
	name string
	v    *bool
} {
	return []struct {
		name string
		v    *bool
	}{
		{"manage-policies", &a.ManagePolicies}, {"manage-policy-overrides", &a.ManagePolicyOverrides},
		{"manage-workspaces", &a.ManageWorkspaces}, {"manage-vcs-settings", &a.ManageVCSSettings},
		{"manage-providers", &a.ManageProviders}, {"manage-modules", &a.ManageModules},
		{"manage-run-tasks", &a.ManageRunTasks}, {"manage-projects", &a.ManageProjects},
		{"read-workspaces", &a.ReadWorkspaces}, {"read-projects", &a.ReadProjects},
		{"manage-membership", &a.ManageMembership}, {"manage-teams", &a.ManageTeams},
		{"manage-organization-access", &a.ManageOrganizationAccess}, {"access-secret-teams", &a.AccessSecretTeams},
		{"manage-agent-pools", &a.ManageAgentPools},
	}
}

// teamResource is a team with its members (user IDs) and the caller's
// permissions on it. The owners team shows every organization permission:
// its members may do everything.
func teamResource(t *mgmt.Team, memberIDs []string, a *mgmt.OrgAuthority) *jsonapi.Resource {
	access := t.Access
	oa := map[string]any{}
	for _, f := range organizationAccessNames(&access) {
		oa[f.name] = *f.v || t.IsOwners
	}
	users := make([]jsonapi.Identifier, len(memberIDs))
	for i, id := range memberIDs {
		users[i] = jsonapi.Identifier{Type: typeUsers, ID: id}
	}
	return &jsonapi.Resource{
		ID:   t.ID,
		Type: typeTeams,
		Attributes: map[string]any{
			"name":                t.Name,
			"visibility":          t.Visibility,
			"is-owners":           t.IsOwners,
			"users-count":         len(memberIDs),
			"created-at":          jsonapi.Time(t.CreatedAt),
			"organization-access": oa,
			"permissions": map[string]any{
				"can-update-membership": a.CanManageMembership(),
				"can-destroy":           a.CanManageTeams() && !t.IsOwners,
				"can-update-visibility": a.CanManageTeams(),
			},
		},
		Relationships: map[string]*jsonapi.Relationship{
			"organization": orgRel(t.OrganizationName),
			"users":        jsonapi.ToMany(users),
		},
		Links: selfLink(teamPath(t.ID)),
	}
}

// tagBindingID is a stable id of a project's tag binding: bindings are
// stored as key/value pairs, and clients that join included resources by
// id need one.
func tagBindingID(projectID, key string) string {
	return "tb-" + strings.TrimPrefix(projectID, mgmt.PrefixProject) + "-" + url.PathEscape(key)
}

// tagBindingResources returns a project's tag bindings as resources of typ
// (tag-bindings or effective-tag-bindings; a project's effective bindings
// are its own, as projects inherit none).
func tagBindingResources(p *mgmt.Project, typ string) []*jsonapi.Resource {
	out := make([]*jsonapi.Resource, len(p.TagBindings))
	for i, tb := range p.TagBindings {
		out[i] = &jsonapi.Resource{ID: tagBindingID(p.ID, tb.Key), Type: typ,
			Attributes: map[string]any{"key": tb.Key, "value": tb.Value}}
	}
	return out
}

// projectAttributes are a project's attributes: a struct, not a map, as
// projects are listed by the hundred and a struct encodes several times
// faster.
type projectAttributes struct {
	Name        string `json:"name"`
	Description any    `json:"description"`
	AutoDestroy any    `json:"auto-destroy-activity-duration"`
	// WorkspaceCount and TeamCount are counted for each answer.
	WorkspaceCount int  `json:"workspace-count"`
	TeamCount      int  `json:"team-count"`
	IsDefault      bool `json:"is-default"`
	// IsUnified is go-tfe's; sched's projects are never unified.
	IsUnified            bool               `json:"is-unified"`
	CreatedAt            any                `json:"created-at"`
	DefaultExecutionMode string             `json:"default-execution-mode"`
	SettingOverwrites    projectOverwrites  `json:"setting-overwrites"`
	Permissions          projectPermissions `json:"permissions"`
}

type projectOverwrites struct {
	ExecutionMode bool `json:"default-execution-mode"`
	AgentPool     bool `json:"default-agent-pool"`
}

// projectPermissions are the caller's permissions on a project.
type projectPermissions struct {
	CanRead            bool `json:"can-read"`
	CanUpdate          bool `json:"can-update"`
	CanDestroy         bool `json:"can-destroy"`
	CanCreateWorkspace bool `json:"can-create-workspace"`
	CanMoveWorkspace   bool `json:"can-move-workspace"`
	CanManageTeams     bool `json:"can-manage-teams"`
}

// projectResource is a project as the caller sees it (spec §2), with the
// attributes go-tfe also reads: default-execution-mode (effective),
// setting-overwrites and tag bindings.
func projectResource(p *mgmt.Project, org *mgmt.Organization, pa mgmt.ProjectAccess, workspaces, teams int) *jsonapi.Resource {
	overwrites := p.SettingOverwrites()
	tags := tagBindingResources(p, typeEffectiveTags)
	tagIDs := make([]jsonapi.Identifier, len(tags))
	for i, t := range tags {
		tagIDs[i] = jsonapi.Identifier{Type: t.Type, ID: t.ID}
	}
	return &jsonapi.Resource{
		ID:   p.ID,
		Type: typeProjects,
		Attributes: &projectAttributes{
			Name:                 p.Name,
			Description:          jsonapi.NullString(p.Description),
			AutoDestroy:          jsonapi.NullString(p.AutoDestroyActivityDuration),
			WorkspaceCount:       workspaces,
			TeamCount:            teams,
			IsDefault:            p.IsDefault,
			CreatedAt:            jsonapi.Time(p.CreatedAt),
			DefaultExecutionMode: mgmt.EffectiveExecutionMode(org, p, nil),
			SettingOverwrites:    projectOverwrites{ExecutionMode: overwrites.ExecutionMode, AgentPool: overwrites.AgentPool},
			Permissions: projectPermissions{
				CanRead:            pa.Visible,
				CanUpdate:          pa.CanUpdate(),
				CanDestroy:         pa.CanDestroy(),
				CanCreateWorkspace: pa.CanCreateWorkspace(),
				CanMoveWorkspace:   pa.CanMoveWorkspaces(),
				CanManageTeams:     pa.CanManageTeamAccess(),
			},
		},
		Relationships: map[string]*jsonapi.Relationship{
			"organization":           orgRel(p.OrganizationName),
			"default-agent-pool":     jsonapi.ToOne(typeAgentPools, p.DefaultAgentPoolID),
			"tag-bindings":           jsonapi.LinksOnly(projectPath(p.ID) + "/tag-bindings"),
			"effective-tag-bindings": jsonapi.ToMany(tagIDs).Related(projectPath(p.ID) + "/effective-tag-bindings"),
		},
		Links: selfLink(projectPath(p.ID)),
	}
}

// teamProjectResource is a team's access to a project (spec §2). The
// permission attributes always show the record's permissions: the implied
// ones of its level, or the chosen ones for custom.
func teamProjectResource(tp *mgmt.TeamProject) *jsonapi.Resource {
	pp, wp := tp.Permissions.Project, tp.Permissions.Workspace
	return &jsonapi.Resource{
		ID:   tp.ID,
		Type: typeTeamProjects,
		Attributes: map[string]any{
			"access": tp.Access,
			"project-access": map[string]any{
				"settings":      pp.Settings,
				"teams":         pp.Teams,
				"variable-sets": pp.VariableSets,
			},
			"workspace-access": map[string]any{
				"runs":           wp.Runs,
				"variables":      wp.Variables,
				"state-versions": wp.StateVersions,
				"gate-mocks":     wp.GateMocks,
				"create":         wp.Create,
				"move":           wp.Move,
				"locking":        wp.Locking,
				"delete":         wp.Delete,
				"run-tasks":      wp.RunTasks,
			},
		},
		Relationships: map[string]*jsonapi.Relationship{
			"team":    jsonapi.ToOne(typeTeams, tp.TeamID).Related(teamPath(tp.TeamID)),
			"project": jsonapi.ToOne(typeProjects, tp.ProjectID).Related(projectPath(tp.ProjectID)),
		},
		Links: selfLink(apiPrefix + "/team-projects/" + url.PathEscape(tp.ID)),
	}
}

func vcsRepoAttr(repo *mgmt.WorkspaceVCSRepo) any {
	if repo == nil {
		return nil
	}
	return map[string]any{
		"identifier":     repo.Identifier,
		"branch":         repo.Branch,
		"oauth-token-id": jsonapi.NullString(repo.OAuthTokenID),
	}
}

// adminWorkspaceResource is the site administrator's view of a workspace
// (spec §2: fields beyond these are not shown).
func adminWorkspaceResource(w *mgmt.Workspace) *jsonapi.Resource {
	return &jsonapi.Resource{
		ID:   w.ID,
		Type: typeWorkspaces,
		Attributes: map[string]any{
			"name":     w.Name,
			"locked":   w.Locked,
			"vcs-repo": vcsRepoAttr(w.VCSRepo),
		},
		Relationships: map[string]*jsonapi.Relationship{
			"organization": jsonapi.ToOne(typeOrganizations, w.OrganizationName),
			"current-run":  jsonapi.ToOne(typeRuns, w.CurrentRunID),
		},
		Links: selfLink(workspacePath(w)),
	}
}

// workspaceResource is a workspace as its organization's members see it,
// with the caller's permissions (from its access to the project).
func workspaceResource(w *mgmt.Workspace, pa mgmt.ProjectAccess, mode string) *jsonapi.Resource {
	current := jsonapi.ToOne(typeRuns, w.CurrentRunID)
	if w.CurrentRunID != "" {
		current.Related(runPath(w.CurrentRunID))
	}
	return &jsonapi.Resource{
		ID:   w.ID,
		Type: typeWorkspaces,
		Attributes: map[string]any{
			"name":                           w.Name,
			"description":                    jsonapi.NullString(w.Description),
			"locked":                         w.Locked,
			"lock-reason":                    jsonapi.NullString(w.LockReason),
			"vcs-repo":                       vcsRepoAttr(w.VCSRepo),
			"vcs-repo-identifier":            vcsIdentifier(w.VCSRepo),
			"tool-version":                   jsonapi.NullString(w.ToolVersion),
			"auto-destroy-activity-duration": jsonapi.NullString(w.AutoDestroyActivityDuration),
			"inherits-project-auto-destroy":  w.InheritsProjectAutoDestroy,
			"execution-mode":                 mode,
			"operations":                     mode != mgmt.ExecutionModeLocal,
			"setting-overwrites": map[string]any{
				"execution-mode": w.ExecutionMode != "",
				"agent-pool":     w.AgentPoolID != "",
			},
			"created-at":       jsonapi.Time(w.CreatedAt),
			"updated-at":       jsonapi.Time(w.UpdatedAt),
			"latest-change-at": jsonapi.Time(w.LatestChangeAt),
			"permissions": map[string]any{
				"can-update":                pa.CanUpdateWorkspaces(),
				"can-destroy":               pa.CanDeleteWorkspaces(),
				"can-lock":                  pa.CanLockWorkspaces(),
				"can-unlock":                pa.CanLockWorkspaces(),
				"can-force-unlock":          pa.CanUpdateWorkspaces(),
				"can-queue-run":             pa.CanQueueRuns(),
				"can-queue-apply":           pa.CanApplyRuns(),
				"can-queue-destroy":         pa.CanApplyRuns(),
				"can-read-state-versions":   pa.CanReadStateVersions(),
				"can-create-state-versions": pa.CanWriteStateVersions(),
				"can-move":                  pa.CanMoveWorkspaces(),
			},
		},
		Relationships: map[string]*jsonapi.Relationship{
			"organization":         orgRel(w.OrganizationName),
			"project":              jsonapi.ToOne(typeProjects, w.ProjectID).Related(projectPath(w.ProjectID)),
			"current-run":          current,
			"latest-state-version": jsonapi.ToOne(typeStateVersions, w.LatestStateVersionID),
			"agent-pool":           jsonapi.ToOne(typeAgentPools, w.AgentPoolID),
		},
		Links: selfLink(workspacePath(w)),
	}
}

func vcsIdentifier(repo *mgmt.WorkspaceVCSRepo) any {
	if repo == nil {
		return nil
	}
	return repo.Identifier
}

// kebabCase turns a run status into its key form: statuses are written
// with underscores as values (status: "plan_queued") but with dashes as
// attribute keys (plan-queued-at, status-counts' policy-checking).
func kebabCase(s string) string { return strings.ReplaceAll(s, "_", "-") }

// runResource is a run with its status history and the actions its status
// allows.
func runResource(r *mgmt.Run) *jsonapi.Resource {
	ts := map[string]any{}
	for status, at := range r.StatusTimestamps {
		ts[kebabCase(status)+"-at"] = jsonapi.Time(at)
	}
	_, confirmable := mgmt.RunActionTarget(r.Status, mgmt.RunActionApply)
	_, discardable := mgmt.RunActionTarget(r.Status, mgmt.RunActionDiscard)
	_, cancelable := mgmt.RunActionTarget(r.Status, mgmt.RunActionCancel)
	_, forceCancelable := mgmt.RunActionTarget(r.Status, mgmt.RunActionForceCancel)
	return &jsonapi.Resource{
		ID:   r.ID,
		Type: typeRuns,
		Attributes: map[string]any{
			"status":            r.Status,
			"message":           r.Message,
			"is-destroy":        r.IsDestroy,
			"created-at":        jsonapi.Time(r.CreatedAt),
			"status-timestamps": ts,
			"actions": map[string]any{
				"is-confirmable":      confirmable,
				"is-discardable":      discardable,
				"is-cancelable":       cancelable,
				"is-force-cancelable": forceCancelable,
			},
			"has-changes":       r.Plan.HasChanges,
			"auto-apply":        r.AutoApply,
			"plan-only":         r.PlanOnly,
			"refresh":           !r.NoRefresh,
			"terraform-version": jsonapi.NullString(r.TerraformVersion),
			"source":            "tfe-api",
			"error-message":     jsonapi.NullString(r.ErrorMessage),
			"permissions":       map[string]any{},
			"variables":         runVariables(r.Variables),
		},
		Relationships: map[string]*jsonapi.Relationship{
			"workspace":             jsonapi.ToOne(typeWorkspaces, r.WorkspaceID),
			"created-by":            jsonapi.ToOne(typeUsers, userIDOf(r.CreatedBy)),
			"configuration-version": jsonapi.ToOne(typeConfigurationVersions, r.ConfigurationVersionID),
			"plan":                  jsonapi.ToOne(typePlans, mgmt.PlanID(r.ID)),
			"apply":                 jsonapi.ToOne(typeApplies, mgmt.ApplyID(r.ID)),
		},
		Links: selfLink(runPath(r.ID)),
	}
}

// runVariables renders a run's variables as go-tfe reads them.
func runVariables(vars []mgmt.RunVariable) []map[string]any {
	out := make([]map[string]any, 0, len(vars))
	for _, v := range vars {
		out = append(out, map[string]any{"key": v.Key, "value": v.Value})
	}
	return out
}

// userIDOf returns id when it names a user ("" otherwise): who created a
// run may be a team or an organization, which the created-by relationship
// (to users) cannot show.
func userIDOf(id string) string {
	if strings.HasPrefix(id, mgmt.PrefixUser) {
		return id
	}
	return ""
}

// policySetResource is a policy set with the policy version it runs on.
func policySetResource(ps *mgmt.PolicySet) *jsonapi.Resource {
	return &jsonapi.Resource{
		ID:   ps.ID,
		Type: typePolicySets,
		Attributes: map[string]any{
			"name":                ps.Name,
			"description":         jsonapi.NullString(ps.Description),
			"kind":                jsonapi.NullString(ps.Kind),
			"overridable":         ps.Overridable,
			"global":              ps.Global,
			"policy-tool-version": jsonapi.NullString(ps.PolicyToolVersion),
			"created-at":          jsonapi.Time(ps.CreatedAt),
			"updated-at":          jsonapi.Time(ps.UpdatedAt),
		},
		Relationships: map[string]*jsonapi.Relationship{
			"organization": orgRel(ps.OrganizationName),
		},
		Links: selfLink(apiPrefix + "/policy-sets/" + url.PathEscape(ps.ID)),
	}
}

// versionFamilies ties the two admin version families to their path
// segment and type.
var versionFamilies = map[string]string{
	mgmt.VersionFamilyTool:   typeToolVersions,
	mgmt.VersionFamilyPolicy: typePolicyVersions,
}

// toolVersionResource is a tool or policy version (spec §2); created-at
// has milliseconds and deprecated-reason is null unless deprecated.
func toolVersionResource(tv *mgmt.ToolVersion, usage int) *jsonapi.Resource {
	typ := versionFamilies[tv.Family]
	archs := make([]map[string]any, len(tv.Archs))
	for i, a := range tv.Archs {
		archs[i] = map[string]any{"url": a.URL, "sha": a.SHA, "os": a.OS, "arch": a.Arch}
	}
	var reason any
	if tv.Deprecated && tv.DeprecatedReason != nil {
		reason = *tv.DeprecatedReason
	}
	return &jsonapi.Resource{
		ID:   tv.ID,
		Type: typ,
		Attributes: map[string]any{
			"version":           tv.Version,
			"url":               tv.URL,
			"sha":               tv.SHA,
			"deprecated":        tv.Deprecated,
			"deprecated-reason": reason,
			"official":          tv.Official,
			"enabled":           tv.Enabled,
			"beta":              tv.Beta,
			"usage":             usage,
			"created-at":        jsonapi.Time(tv.CreatedAt),
			"archs":             archs,
		},
		Links: selfLink(apiPrefix + "/admin/" + typ + "/" + url.PathEscape(tv.ID)),
	}
}

// tokenResource is an API token; secret is shown only in the answer to
// the request that created it ("" elsewhere: null).
func tokenResource(tok *state.ACLToken, secret string) *jsonapi.Resource {
	var expires any
	if tok.ExpirationTime != nil {
		expires = jsonapi.Time(*tok.ExpirationTime)
	}
	rels := map[string]*jsonapi.Relationship{}
	if s := tok.Subject; s != nil {
		switch s.Kind {
		case state.SubjectKindUser:
			rels["user"] = jsonapi.ToOne(typeUsers, s.ID)
		case state.SubjectKindTeam:
			rels["team"] = jsonapi.ToOne(typeTeams, s.ID)
		}
	}
	return &jsonapi.Resource{
		ID:   tok.AccessorID,
		Type: typeAuthTokens,
		Attributes: map[string]any{
			"description":  jsonapi.NullString(tok.Name),
			"created-at":   jsonapi.Time(tok.CreateTime),
			"last-used-at": nil,
			"expired-at":   expires,
			"token":        jsonapi.NullString(secret),
		},
		Relationships: rels,
		Links:         selfLink(apiPrefix + "/authentication-tokens/" + url.PathEscape(tok.AccessorID)),
	}
}
