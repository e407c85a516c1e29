package state

import (
	"fmt"
	"slices"
	"strings"
)

// OrganizationAdminPatch is a site administrator's update of an
// organization (spec §4 Admin organizations): a nil field keeps the
// current value.
type OrganizationAdminPatch struct {
	AccessBetaTools *bool
	// GlobalModuleSharing and GlobalProviderSharing set to true clear the
	// configured consumers of that kind (spec §3).
	GlobalModuleSharing   *bool
	GlobalProviderSharing *bool
	IsDisabled            *bool
	ToolWorkerSudoEnabled *bool
	// ApplyTimeout and PlanTimeout are Go durations; "" (JSON null)
	// restores the default (24h, 2h).
	ApplyTimeout *string
	PlanTimeout  *string
	// BuildWorkerApplyTimeout and BuildWorkerPlanTimeout are the
	// deprecated aliases tool-build-worker-apply-timeout and
	// tool-build-worker-plan-timeout. An alias is used when its
	// replacement is absent; given both with different values is a 422.
	BuildWorkerApplyTimeout *string
	BuildWorkerPlanTimeout  *string
	// SetWorkspaceLimit says the request carries workspace-limit; then
	// WorkspaceLimit nil (JSON null) removes the limit.
	SetWorkspaceLimit bool
	WorkspaceLimit    *int
}

// Validate checks the patch's values, naming attributes by JSON pointer.
func (p *OrganizationAdminPatch) Validate() error {
	v := &ValidationError{}
	timeouts := []struct {
		attr string
		val  *string
	}{
		{"apply-timeout", p.ApplyTimeout},
		{"plan-timeout", p.PlanTimeout},
		{"tool-build-worker-apply-timeout", p.BuildWorkerApplyTimeout},
		{"tool-build-worker-plan-timeout", p.BuildWorkerPlanTimeout},
	}
	for _, to := range timeouts {
		if to.val != nil && *to.val != "" {
			if msg := ValidTimeout(*to.val); msg != "" {
				v.Add(AttrPointer(to.attr), "%s", msg)
			}
		}
	}
	if p.ApplyTimeout != nil && p.BuildWorkerApplyTimeout != nil && *p.ApplyTimeout != *p.BuildWorkerApplyTimeout {
		v.Add(AttrPointer("tool-build-worker-apply-timeout"), "is a deprecated alias of apply-timeout and differs from it; send only apply-timeout")
	}
	if p.PlanTimeout != nil && p.BuildWorkerPlanTimeout != nil && *p.PlanTimeout != *p.BuildWorkerPlanTimeout {
		v.Add(AttrPointer("tool-build-worker-plan-timeout"), "is a deprecated alias of plan-timeout and differs from it; send only plan-timeout")
	}
	if p.SetWorkspaceLimit && p.WorkspaceLimit != nil && *p.WorkspaceLimit < 0 {
		v.Add(AttrPointer("workspace-limit"), "must not be negative, got %d", *p.WorkspaceLimit)
	}
	return v.Err()
}

// apply changes o (a copy) as the patch says.
func (p *OrganizationAdminPatch) apply(o *Organization) {
	setBool := func(dst *bool, src *bool) {
		if src != nil {
			*dst = *src
		}
	}
	setBool(&o.AccessBetaTools, p.AccessBetaTools)
	setBool(&o.GlobalModuleSharing, p.GlobalModuleSharing)
	setBool(&o.GlobalProviderSharing, p.GlobalProviderSharing)
	setBool(&o.IsDisabled, p.IsDisabled)
	setBool(&o.ToolWorkerSudoEnabled, p.ToolWorkerSudoEnabled)
	timeout := func(dst *string, val, alias *string, def string) {
		if val == nil {
			val = alias
		}
		if val == nil {
			return
		}
		*dst = *val
		if *dst == "" {
			*dst = def
		}
	}
	timeout(&o.ApplyTimeout, p.ApplyTimeout, p.BuildWorkerApplyTimeout, DefaultApplyTimeout)
	timeout(&o.PlanTimeout, p.PlanTimeout, p.BuildWorkerPlanTimeout, DefaultPlanTimeout)
	if p.SetWorkspaceLimit {
		o.WorkspaceLimit = clonePtr(p.WorkspaceLimit)
	}
	if o.GlobalModuleSharing {
		o.ModuleConsumers = nil
	}
	if o.GlobalProviderSharing {
		o.ProviderConsumers = nil
	}
}

// TeamPatch carries a team's writable attributes; nil keeps the current
// value.
type TeamPatch struct {
	Name       *string
	Visibility *string
	Access     *TeamOrganizationAccessPatch
}

// TeamOrganizationAccessPatch changes some of a team's organization-level
// permissions; nil keeps the current value.
type TeamOrganizationAccessPatch struct {
	ManagePolicies           *bool
	ManagePolicyOverrides    *bool
	ManageWorkspaces         *bool
	ManageVCSSettings        *bool
	ManageProviders          *bool
	ManageModules            *bool
	ManageRunTasks           *bool
	ManageProjects           *bool
	ReadWorkspaces           *bool
	ReadProjects             *bool
	ManageMembership         *bool
	ManageTeams              *bool
	ManageOrganizationAccess *bool
	AccessSecretTeams        *bool
	ManageAgentPools         *bool
}

// pairs lists each field of the patch with the permission it sets.
func (p *TeamOrganizationAccessPatch) pairs(a *TeamOrganizationAccess) []struct {
	src *bool
	dst *bool
} {
	return []struct {
		src *bool
		dst *bool
	}{
		{p.ManagePolicies, &a.ManagePolicies}, {p.ManagePolicyOverrides, &a.ManagePolicyOverrides},
		{p.ManageWorkspaces, &a.ManageWorkspaces}, {p.ManageVCSSettings, &a.ManageVCSSettings},
		{p.ManageProviders, &a.ManageProviders}, {p.ManageModules, &a.ManageModules},
		{p.ManageRunTasks, &a.ManageRunTasks}, {p.ManageProjects, &a.ManageProjects},
		{p.ReadWorkspaces, &a.ReadWorkspaces}, {p.ReadProjects, &a.ReadProjects},
		{p.ManageMembership, &a.ManageMembership}, {p.ManageTeams, &a.ManageTeams},
		{p.ManageOrganizationAccess, &a.ManageOrganizationAccess}, {p.AccessSecretTeams, &a.AccessSecretTeams},
		{p.ManageAgentPools, &a.ManageAgentPools},
	}
}

// Apply returns a with the patch's permissions set.
func (p *TeamOrganizationAccessPatch) Apply(a TeamOrganizationAccess) TeamOrganizationAccess {
	if p == nil {
		return a
	}
	for _, f := range p.pairs(&a) {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return a
}

// isEmpty reports whether the patch changes nothing.
func (p *TeamOrganizationAccessPatch) isEmpty() bool {
	if p == nil {
		return true
	}
	var a TeamOrganizationAccess
	for _, f := range p.pairs(&a) {
		if f.src != nil {
			return false
		}
	}
	return true
}

// Validate checks the patch; create requires a name.
func (p *TeamPatch) Validate(create bool) error {
	v := &ValidationError{}
	switch {
	case p.Name != nil:
		if msg := validSlug(*p.Name, TeamNameMaxLen); msg != "" {
			v.Add(AttrPointer("name"), "%s", msg)
		}
	case create:
		v.Add(AttrPointer("name"), "is required")
	}
	if p.Visibility != nil && *p.Visibility != TeamVisibilitySecret && *p.Visibility != TeamVisibilityOrganization {
		v.Add(AttrPointer("visibility"), "%q is not one of secret, organization", *p.Visibility)
	}
	return v.Err()
}

// getRow reads the row of table with primary key id inside a command.
func getRow[T any](t *writeTxn, table string, id ...any) (T, error) {
	return first[T](nil, t.Txn, table, indexID, id...)
}

// mustGetRow is getRow for a row that must exist: a missing one is
// ErrNotFound, "<what> "<id>" not found".
func mustGetRow[R any](t *writeTxn, table, what, id string) (*R, error) {
	row, err := getRow[*R](t, table, id)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, NotFoundf("%s %q not found", what, id)
	}
	return row, nil
}

// stampNew sets the indexes of a row a command creates.
func stampNew(t *writeTxn, create, modify *uint64) { *create, *modify = t.index, t.index }

// requireOrganization returns organization name, or ErrNotFound.
func requireOrganization(t *writeTxn, name string) (*Organization, error) {
	return mustGetRow[Organization](t, TableOrganizations, "organization", name)
}

// requireNewID fails with ErrConflict when id is already a row of table:
// the leader's random IDs never collide, but Apply must not overwrite.
func requireNewID(t *writeTxn, table, id string) error {
	raw, err := t.First(table, indexID, id)
	if err != nil {
		return fmt.Errorf("read %s: %w", table, err)
	}
	if raw != nil {
		return Conflictf("ID %q already exists", id)
	}
	return nil
}

// nameTaken reports whether another row than selfID holds name in org,
// compared case-insensitively, in a table with an org_name index.
func nameTaken[T any](t *writeTxn, table, org, name string, idOf func(T) string, selfID string) (bool, error) {
	rows, err := list[T](nil, t.Txn, nil, table, indexMgOrgName, org, strings.ToLower(name))
	if err != nil {
		return false, err
	}
	for _, r := range rows {
		if idOf(r) != selfID {
			return true, nil
		}
	}
	return false, nil
}

func applyOrganizationCreate(t *writeTxn, req *OrganizationCreateRequest) (any, error) {
	in := req.Organization
	if in == nil {
		return nil, Invalidf("/data", "missing organization")
	}
	v := &ValidationError{}
	if msg := validSlug(in.Name, OrganizationNameMaxLen); msg != "" {
		v.Add(AttrPointer("name"), "%s", msg)
	}
	if msg := validEmail(in.Email); msg != "" {
		v.Add(AttrPointer("email"), "%s", msg)
	}
	checkID(v, "ExternalID", PrefixOrganization, in.ExternalID)
	checkID(v, "OwnersTeamID", PrefixTeam, req.OwnersTeamID)
	checkID(v, "DefaultProjectID", PrefixProject, req.DefaultProjectID)
	if err := v.Err(); err != nil {
		return nil, err
	}
	same, err := list[*Organization](nil, t.Txn, nil, TableOrganizations, indexMgNameLower, strings.ToLower(in.Name))
	if err != nil {
		return nil, err
	}
	if len(same) > 0 {
		return nil, Invalidf(AttrPointer("name"), "has already been taken")
	}
	if err := requireNewID(t, TableTeams, req.OwnersTeamID); err != nil {
		return nil, err
	}
	if err := requireNewID(t, TableProjects, req.DefaultProjectID); err != nil {
		return nil, err
	}
	if req.OwnerUserID != "" {
		u, err := getRow[*User](t, TableUsers, req.OwnerUserID)
		if err != nil {
			return nil, err
		}
		if u == nil {
			return nil, NotFoundf("user %q not found", req.OwnerUserID)
		}
	}
	created := MgmtTime(in.CreatedAt)
	org := &Organization{
		Name: in.Name, ExternalID: in.ExternalID, Email: in.Email, CreatedAt: created,
		DefaultProjectID: req.DefaultProjectID, OwnersTeamID: req.OwnersTeamID,
		ApplyTimeout: DefaultApplyTimeout, PlanTimeout: DefaultPlanTimeout,
	}
	stampNew(t, &org.CreateIndex, &org.ModifyIndex)
	owners := &Team{ID: req.OwnersTeamID, OrganizationName: in.Name, Name: OwnersTeamName,
		Visibility: TeamVisibilitySecret, IsOwners: true, CreatedAt: created}
	stampNew(t, &owners.CreateIndex, &owners.ModifyIndex)
	project := &Project{ID: req.DefaultProjectID, OrganizationName: in.Name, Name: DefaultProjectName,
		IsDefault: true, CreatedAt: created}
	stampNew(t, &project.CreateIndex, &project.ModifyIndex)
	for _, w := range []struct {
		table string
		row   any
	}{{TableOrganizations, org}, {TableTeams, owners}} {
		if err := t.insert(w.table, w.row); err != nil {
			return nil, err
		}
	}
	if err := insertCounted(t, TableProjects, org.Name, project); err != nil {
		return nil, err
	}
	if req.OwnerUserID != "" {
		m := &TeamMembership{TeamID: owners.ID, UserID: req.OwnerUserID, OrganizationName: org.Name}
		stampNew(t, &m.CreateIndex, &m.ModifyIndex)
		if err := t.insert(TableTeamMemberships, m); err != nil {
			return nil, err
		}
	}
	return org, nil
}

func applyOrganizationUpdate(t *writeTxn, req *OrganizationUpdateRequest) (any, error) {
	org, err := requireOrganization(t, req.Name)
	if err != nil {
		return nil, err
	}
	if req.Email != nil {
		if msg := validEmail(*req.Email); msg != "" {
			return nil, Invalidf(AttrPointer("email"), "%s", msg)
		}
	}
	out := org.Copy()
	if req.Email != nil {
		out.Email = *req.Email
	}
	out.ModifyIndex = t.index
	return out, t.insert(TableOrganizations, out)
}

func applyOrganizationAdminUpdate(t *writeTxn, req *OrganizationAdminUpdateRequest) (any, error) {
	org, err := requireOrganization(t, req.Name)
	if err != nil {
		return nil, err
	}
	if err := req.Patch.Validate(); err != nil {
		return nil, err
	}
	out := org.Copy()
	req.Patch.apply(out)
	out.ModifyIndex = t.index
	return out, t.insert(TableOrganizations, out)
}

func applyOrganizationConsumersReplace(t *writeTxn, req *OrganizationConsumersReplaceRequest) (any, error) {
	org, err := requireOrganization(t, req.Name)
	if err != nil {
		return nil, err
	}
	if req.Kind != ConsumerKindModule && req.Kind != ConsumerKindProvider {
		return nil, Invalidf("Kind", "%q is not one of module, provider", req.Kind)
	}
	v := &ValidationError{}
	var names []string
	for i, name := range req.Consumers {
		field := fmt.Sprintf("/data/%d/id", i)
		if name == req.Name {
			v.Add(field, "an organization cannot be its own consumer")
			continue
		}
		c, err := getRow[*Organization](t, TableOrganizations, name)
		if err != nil {
			return nil, err
		}
		if c == nil {
			v.Add(field, "organization %q does not exist", name)
			continue
		}
		names = append(names, name)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	slices.Sort(names)
	names = slices.Compact(names)
	out := org.Copy()
	if req.Kind == ConsumerKindModule {
		out.ModuleConsumers, out.GlobalModuleSharing = names, false
	} else {
		out.ProviderConsumers, out.GlobalProviderSharing = names, false
	}
	out.ModifyIndex = t.index
	return out, t.insert(TableOrganizations, out)
}

func applyOrganizationDelete(t *writeTxn, req *OrganizationDeleteRequest) (any, error) {
	org, err := requireOrganization(t, req.Name)
	if err != nil {
		return nil, err
	}
	workspaces, err := list[*Workspace](nil, t.Txn, nil, TableWorkspaces, indexMgOrg, org.Name)
	if err != nil {
		return nil, err
	}
	for _, w := range workspaces {
		if err := deleteWorkspaceRows(t, w); err != nil {
			return nil, err
		}
	}
	projects, err := list[*Project](nil, t.Txn, nil, TableProjects, indexMgOrg, org.Name)
	if err != nil {
		return nil, err
	}
	for _, p := range projects {
		if err := deleteProjectRows(t, p); err != nil {
			return nil, err
		}
	}
	teams, err := list[*Team](nil, t.Txn, nil, TableTeams, indexMgOrg, org.Name)
	if err != nil {
		return nil, err
	}
	for _, team := range teams {
		if err := deleteTeamRows(t, team); err != nil {
			return nil, err
		}
	}
	sets, err := list[*PolicySet](nil, t.Txn, nil, TablePolicySets, indexMgOrg, org.Name)
	if err != nil {
		return nil, err
	}
	for _, s := range sets {
		if err := t.delete(TablePolicySets, s); err != nil {
			return nil, err
		}
	}
	if err := t.delete(TableOrganizations, org); err != nil {
		return nil, err
	}
	// Other organizations stop naming it as a consumer.
	all, err := list[*Organization](nil, t.Txn, nil, TableOrganizations, indexID)
	if err != nil {
		return nil, err
	}
	for _, o := range all {
		if !slices.Contains(o.ModuleConsumers, org.Name) && !slices.Contains(o.ProviderConsumers, org.Name) {
			continue
		}
		c := o.Copy()
		c.ModuleConsumers = slices.DeleteFunc(c.ModuleConsumers, func(n string) bool { return n == org.Name })
		c.ProviderConsumers = slices.DeleteFunc(c.ProviderConsumers, func(n string) bool { return n == org.Name })
		c.ModifyIndex = t.index
		if err := t.insert(TableOrganizations, c); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func applyUserUpsert(t *writeTxn, req *UserUpsertRequest) (any, error) {
	in := req.User
	if in == nil {
		return nil, Invalidf("/data", "missing user")
	}
	v := &ValidationError{}
	checkID(v, "ID", PrefixUser, in.ID)
	switch {
	case in.Username == "":
		v.Add(AttrPointer("username"), "is required")
	case len(in.Username) > UsernameMaxLen:
		v.Add(AttrPointer("username"), "must be at most %d characters long, got %d", UsernameMaxLen, len(in.Username))
	case !usernameRE.MatchString(in.Username):
		v.Add(AttrPointer("username"), "may contain only letters, numbers, ., - and _")
	}
	if msg := validEmail(in.Email); msg != "" {
		v.Add(AttrPointer("email"), "%s", msg)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	same, err := list[*User](nil, t.Txn, func(u *User) bool { return u.ID != in.ID },
		TableUsers, indexMgNameLower, strings.ToLower(in.Username))
	if err != nil {
		return nil, err
	}
	if len(same) > 0 {
		return nil, Invalidf(AttrPointer("username"), "has already been taken")
	}
	old, err := getRow[*User](t, TableUsers, in.ID)
	if err != nil {
		return nil, err
	}
	u := &User{ID: in.ID, Username: in.Username, Email: in.Email, IsAdmin: in.IsAdmin,
		CreatedAt: MgmtTime(in.CreatedAt), CreateIndex: t.index, ModifyIndex: t.index}
	if old != nil {
		u.CreatedAt, u.CreateIndex = old.CreatedAt, old.CreateIndex
	}
	return u, t.insert(TableUsers, u)
}

func applyUserDelete(t *writeTxn, req *UserDeleteRequest) (any, error) {
	u, err := getRow[*User](t, TableUsers, req.ID)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, NotFoundf("user %q not found", req.ID)
	}
	memberships, err := list[*TeamMembership](nil, t.Txn, nil, TableTeamMemberships, indexMgUser, u.ID)
	if err != nil {
		return nil, err
	}
	for _, m := range memberships {
		if err := checkOwnersKeepMember(t, m.TeamID, []string{u.ID}); err != nil {
			return nil, err
		}
		if err := t.delete(TableTeamMemberships, m); err != nil {
			return nil, err
		}
	}
	return nil, t.delete(TableUsers, u)
}

// checkOwnersKeepMember fails with ErrConflict when removing users from team
// would leave an owners team that has members with none: an organization
// must keep an owner who can sign in.
func checkOwnersKeepMember(t *writeTxn, teamID string, users []string) error {
	team, err := getRow[*Team](t, TableTeams, teamID)
	if err != nil || team == nil || !team.IsOwners {
		return err
	}
	members, err := teamMemberIDs(nil, t.Txn, teamID)
	if err != nil {
		return err
	}
	left := slices.DeleteFunc(members, func(id string) bool { return slices.Contains(users, id) })
	if len(members) > 0 && len(left) == 0 {
		return Conflictf("the owners team of organization %q must keep at least one member", team.OrganizationName)
	}
	return nil
}

func applyTeamCreate(t *writeTxn, req *TeamCreateRequest) (any, error) {
	org, err := requireOrganization(t, req.OrganizationName)
	if err != nil {
		return nil, err
	}
	v := &ValidationError{}
	checkID(v, "ID", PrefixTeam, req.ID)
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := req.Attributes.Validate(true); err != nil {
		return nil, err
	}
	if err := requireNewID(t, TableTeams, req.ID); err != nil {
		return nil, err
	}
	if taken, err := nameTaken(t, TableTeams, org.Name, *req.Attributes.Name, func(x *Team) string { return x.ID }, req.ID); err != nil {
		return nil, err
	} else if taken {
		return nil, Invalidf(AttrPointer("name"), "has already been taken")
	}
	team := &Team{ID: req.ID, OrganizationName: org.Name, Name: *req.Attributes.Name,
		Visibility: TeamVisibilitySecret, CreatedAt: MgmtTime(req.CreatedAt)}
	if req.Attributes.Visibility != nil {
		team.Visibility = *req.Attributes.Visibility
	}
	team.Access = req.Attributes.Access.Apply(team.Access)
	stampNew(t, &team.CreateIndex, &team.ModifyIndex)
	return team, t.insert(TableTeams, team)
}

func applyTeamUpdate(t *writeTxn, req *TeamUpdateRequest) (any, error) {
	team, err := requireTeam(t, req.ID)
	if err != nil {
		return nil, err
	}
	if err := req.Attributes.Validate(false); err != nil {
		return nil, err
	}
	a := req.Attributes
	if team.IsOwners {
		if a.Name != nil && *a.Name != team.Name {
			return nil, Invalidf(AttrPointer("name"), "the owners team cannot be renamed")
		}
		if !a.Access.isEmpty() {
			return nil, Invalidf(AttrPointer("organization-access"), "the owners team always has every permission; it cannot be changed")
		}
	}
	if a.Name != nil {
		if taken, err := nameTaken(t, TableTeams, team.OrganizationName, *a.Name, func(x *Team) string { return x.ID }, team.ID); err != nil {
			return nil, err
		} else if taken {
			return nil, Invalidf(AttrPointer("name"), "has already been taken")
		}
	}
	out := *team
	if a.Name != nil {
		out.Name = *a.Name
	}
	if a.Visibility != nil {
		out.Visibility = *a.Visibility
	}
	out.Access = a.Access.Apply(out.Access)
	out.ModifyIndex = t.index
	return &out, t.insert(TableTeams, &out)
}

func requireTeam(t *writeTxn, id string) (*Team, error) {
	return mustGetRow[Team](t, TableTeams, "team", id)
}

func applyTeamDelete(t *writeTxn, req *TeamDeleteRequest) (any, error) {
	team, err := requireTeam(t, req.ID)
	if err != nil {
		return nil, err
	}
	if team.IsOwners {
		return nil, Conflictf("the owners team cannot be deleted")
	}
	return nil, deleteTeamRows(t, team)
}

// deleteTeamRows deletes a team with its memberships and project access.
func deleteTeamRows(t *writeTxn, team *Team) error {
	memberships, err := list[*TeamMembership](nil, t.Txn, nil, TableTeamMemberships, indexID+"_prefix", team.ID)
	if err != nil {
		return err
	}
	for _, m := range memberships {
		if err := t.delete(TableTeamMemberships, m); err != nil {
			return err
		}
	}
	records, err := list[*TeamProject](nil, t.Txn, nil, TableTeamProjects, indexMgTeam, team.ID)
	if err != nil {
		return err
	}
	for _, r := range records {
		if err := t.delete(TableTeamProjects, r); err != nil {
			return err
		}
	}
	return t.delete(TableTeams, team)
}

func applyTeamMembersAdd(t *writeTxn, req *TeamMembersAddRequest) (any, error) {
	team, err := requireTeam(t, req.TeamID)
	if err != nil {
		return nil, err
	}
	for _, id := range req.UserIDs {
		u, err := getRow[*User](t, TableUsers, id)
		if err != nil {
			return nil, err
		}
		if u == nil {
			return nil, NotFoundf("user %q not found", id)
		}
		old, err := getRow[*TeamMembership](t, TableTeamMemberships, team.ID, id)
		if err != nil {
			return nil, err
		}
		if old != nil {
			continue
		}
		m := &TeamMembership{TeamID: team.ID, UserID: id, OrganizationName: team.OrganizationName}
		stampNew(t, &m.CreateIndex, &m.ModifyIndex)
		if err := t.insert(TableTeamMemberships, m); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func applyTeamMembersRemove(t *writeTxn, req *TeamMembersRemoveRequest) (any, error) {
	team, err := requireTeam(t, req.TeamID)
	if err != nil {
		return nil, err
	}
	if err := checkOwnersKeepMember(t, team.ID, req.UserIDs); err != nil {
		return nil, err
	}
	for _, id := range req.UserIDs {
		m, err := getRow[*TeamMembership](t, TableTeamMemberships, team.ID, id)
		if err != nil {
			return nil, err
		}
		if m == nil {
			continue
		}
		if err := t.delete(TableTeamMemberships, m); err != nil {
			return nil, err
		}
	}
	return nil, nil
}
