package store

import (
	"fmt"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
	"slices"
	"strings"
)

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
		return nil, state.NotFoundf("%s %q not found", what, id)
	}
	return row, nil
}

// stampNew sets the indexes of a row a command creates.
func stampNew(t *writeTxn, create, modify *uint64) { *create, *modify = t.index, t.index }

// requireOrganization returns organization name, or ErrNotFound.
func requireOrganization(t *writeTxn, name string) (*mgmt.Organization, error) {
	return mustGetRow[mgmt.Organization](t, TableOrganizations, "organization", name)
}

// requireNewID fails with ErrConflict when id is already a row of table:
// the leader's random IDs never collide, but Apply must not overwrite.
func requireNewID(t *writeTxn, table, id string) error {
	raw, err := t.First(table, indexID, id)
	if err != nil {
		return fmt.Errorf("read %s: %w", table, err)
	}
	if raw != nil {
		return state.Conflictf("ID %q already exists", id)
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
		return nil, state.Invalidf("/data", "missing organization")
	}
	v := &state.ValidationError{}
	if msg := mgmt.ValidSlug(in.Name, mgmt.OrganizationNameMaxLen); msg != "" {
		v.Add(mgmt.AttrPointer("name"), "%s", msg)
	}
	if msg := mgmt.ValidEmail(in.Email); msg != "" {
		v.Add(mgmt.AttrPointer("email"), "%s", msg)
	}
	if in.DefaultExecutionMode != "" {
		if msg := mgmt.ValidExecutionMode(in.DefaultExecutionMode); msg != "" {
			v.Add(mgmt.AttrPointer("default-execution-mode"), "%s", msg)
		}
	}
	mgmt.CheckID(v, "ExternalID", mgmt.PrefixOrganization, in.ExternalID)
	mgmt.CheckID(v, "OwnersTeamID", mgmt.PrefixTeam, req.OwnersTeamID)
	mgmt.CheckID(v, "DefaultProjectID", mgmt.PrefixProject, req.DefaultProjectID)
	if err := v.Err(); err != nil {
		return nil, err
	}
	same, err := list[*mgmt.Organization](nil, t.Txn, nil, TableOrganizations, indexMgNameLower, strings.ToLower(in.Name))
	if err != nil {
		return nil, err
	}
	if len(same) > 0 {
		return nil, state.Invalidf(mgmt.AttrPointer("name"), "has already been taken")
	}
	if err := requireNewID(t, TableTeams, req.OwnersTeamID); err != nil {
		return nil, err
	}
	if err := requireNewID(t, TableProjects, req.DefaultProjectID); err != nil {
		return nil, err
	}
	if req.OwnerUserID != "" {
		u, err := getRow[*mgmt.User](t, TableUsers, req.OwnerUserID)
		if err != nil {
			return nil, err
		}
		if u == nil {
			return nil, state.NotFoundf("user %q not found", req.OwnerUserID)
		}
	}
	created := mgmt.Time(in.CreatedAt)
	org := &mgmt.Organization{
		Name: in.Name, ExternalID: in.ExternalID, Email: in.Email, CreatedAt: created,
		DefaultProjectID: req.DefaultProjectID, OwnersTeamID: req.OwnersTeamID,
		ApplyTimeout: mgmt.DefaultApplyTimeout, PlanTimeout: mgmt.DefaultPlanTimeout,
		DefaultExecutionMode: in.DefaultExecutionMode,
	}
	stampNew(t, &org.CreateIndex, &org.ModifyIndex)
	owners := &mgmt.Team{ID: req.OwnersTeamID, OrganizationName: in.Name, Name: mgmt.OwnersTeamName,
		Visibility: mgmt.TeamVisibilitySecret, IsOwners: true, CreatedAt: created}
	stampNew(t, &owners.CreateIndex, &owners.ModifyIndex)
	project := &mgmt.Project{ID: req.DefaultProjectID, OrganizationName: in.Name, Name: mgmt.DefaultProjectName,
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
		m := &mgmt.TeamMembership{TeamID: owners.ID, UserID: req.OwnerUserID, OrganizationName: org.Name}
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
		if msg := mgmt.ValidEmail(*req.Email); msg != "" {
			return nil, state.Invalidf(mgmt.AttrPointer("email"), "%s", msg)
		}
	}
	if m := req.DefaultExecutionMode; m != nil && *m != "" {
		if msg := mgmt.ValidExecutionMode(*m); msg != "" {
			return nil, state.Invalidf(mgmt.AttrPointer("default-execution-mode"), "%s", msg)
		}
	}
	out := org.Copy()
	if req.Email != nil {
		out.Email = *req.Email
	}
	if req.DefaultExecutionMode != nil {
		out.DefaultExecutionMode = *req.DefaultExecutionMode
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
	req.Patch.Apply(out)
	out.ModifyIndex = t.index
	return out, t.insert(TableOrganizations, out)
}

func applyOrganizationConsumersReplace(t *writeTxn, req *OrganizationConsumersReplaceRequest) (any, error) {
	org, err := requireOrganization(t, req.Name)
	if err != nil {
		return nil, err
	}
	if req.Kind != ConsumerKindModule && req.Kind != ConsumerKindProvider {
		return nil, state.Invalidf("Kind", "%q is not one of module, provider", req.Kind)
	}
	v := &state.ValidationError{}
	var names []string
	for i, name := range req.Consumers {
		field := fmt.Sprintf("/data/%d/id", i)
		if name == req.Name {
			v.Add(field, "an organization cannot be its own consumer")
			continue
		}
		c, err := getRow[*mgmt.Organization](t, TableOrganizations, name)
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
	workspaces, err := list[*mgmt.Workspace](nil, t.Txn, nil, TableWorkspaces, indexMgOrg, org.Name)
	if err != nil {
		return nil, err
	}
	for _, w := range workspaces {
		if err := deleteWorkspaceRows(t, w); err != nil {
			return nil, err
		}
	}
	projects, err := list[*mgmt.Project](nil, t.Txn, nil, TableProjects, indexMgOrg, org.Name)
	if err != nil {
		return nil, err
	}
	for _, p := range projects {
		if err := deleteProjectRows(t, p); err != nil {
			return nil, err
		}
	}
	teams, err := list[*mgmt.Team](nil, t.Txn, nil, TableTeams, indexMgOrg, org.Name)
	if err != nil {
		return nil, err
	}
	for _, team := range teams {
		if err := deleteTeamRows(t, team); err != nil {
			return nil, err
		}
	}
	sets, err := list[*mgmt.PolicySet](nil, t.Txn, nil, TablePolicySets, indexMgOrg, org.Name)
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
	all, err := list[*mgmt.Organization](nil, t.Txn, nil, TableOrganizations, indexID)
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
		return nil, state.Invalidf("/data", "missing user")
	}
	v := &state.ValidationError{}
	mgmt.CheckID(v, "ID", mgmt.PrefixUser, in.ID)
	switch {
	case in.Username == "":
		v.Add(mgmt.AttrPointer("username"), "is required")
	case len(in.Username) > mgmt.UsernameMaxLen:
		v.Add(mgmt.AttrPointer("username"), "must be at most %d characters long, got %d", mgmt.UsernameMaxLen, len(in.Username))
	case !mgmt.UsernameRE.MatchString(in.Username):
		v.Add(mgmt.AttrPointer("username"), "may contain only letters, numbers, ., - and _")
	}
	if msg := mgmt.ValidEmail(in.Email); msg != "" {
		v.Add(mgmt.AttrPointer("email"), "%s", msg)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	same, err := list[*mgmt.User](nil, t.Txn, func(u *mgmt.User) bool { return u.ID != in.ID },
		TableUsers, indexMgNameLower, strings.ToLower(in.Username))
	if err != nil {
		return nil, err
	}
	if len(same) > 0 {
		return nil, state.Invalidf(mgmt.AttrPointer("username"), "has already been taken")
	}
	old, err := getRow[*mgmt.User](t, TableUsers, in.ID)
	if err != nil {
		return nil, err
	}
	u := &mgmt.User{ID: in.ID, Username: in.Username, Email: in.Email, IsAdmin: in.IsAdmin,
		CreatedAt: mgmt.Time(in.CreatedAt), CreateIndex: t.index, ModifyIndex: t.index}
	if old != nil {
		u.CreatedAt, u.CreateIndex = old.CreatedAt, old.CreateIndex
	}
	return u, t.insert(TableUsers, u)
}

func applyUserDelete(t *writeTxn, req *UserDeleteRequest) (any, error) {
	u, err := getRow[*mgmt.User](t, TableUsers, req.ID)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, state.NotFoundf("user %q not found", req.ID)
	}
	memberships, err := list[*mgmt.TeamMembership](nil, t.Txn, nil, TableTeamMemberships, indexMgUser, u.ID)
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
	team, err := getRow[*mgmt.Team](t, TableTeams, teamID)
	if err != nil || team == nil || !team.IsOwners {
		return err
	}
	members, err := teamMemberIDs(nil, t.Txn, teamID)
	if err != nil {
		return err
	}
	left := slices.DeleteFunc(members, func(id string) bool { return slices.Contains(users, id) })
	if len(members) > 0 && len(left) == 0 {
		return state.Conflictf("the owners team of organization %q must keep at least one member", team.OrganizationName)
	}
	return nil
}

func applyTeamCreate(t *writeTxn, req *TeamCreateRequest) (any, error) {
	org, err := requireOrganization(t, req.OrganizationName)
	if err != nil {
		return nil, err
	}
	v := &state.ValidationError{}
	mgmt.CheckID(v, "ID", mgmt.PrefixTeam, req.ID)
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := req.Attributes.Validate(true); err != nil {
		return nil, err
	}
	if err := requireNewID(t, TableTeams, req.ID); err != nil {
		return nil, err
	}
	if taken, err := nameTaken(t, TableTeams, org.Name, *req.Attributes.Name, func(x *mgmt.Team) string { return x.ID }, req.ID); err != nil {
		return nil, err
	} else if taken {
		return nil, state.Invalidf(mgmt.AttrPointer("name"), "has already been taken")
	}
	team := &mgmt.Team{ID: req.ID, OrganizationName: org.Name, Name: *req.Attributes.Name,
		Visibility: mgmt.TeamVisibilitySecret, CreatedAt: mgmt.Time(req.CreatedAt)}
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
			return nil, state.Invalidf(mgmt.AttrPointer("name"), "the owners team cannot be renamed")
		}
		if !a.Access.IsEmpty() {
			return nil, state.Invalidf(mgmt.AttrPointer("organization-access"), "the owners team always has every permission; it cannot be changed")
		}
	}
	if a.Name != nil {
		if taken, err := nameTaken(t, TableTeams, team.OrganizationName, *a.Name, func(x *mgmt.Team) string { return x.ID }, team.ID); err != nil {
			return nil, err
		} else if taken {
			return nil, state.Invalidf(mgmt.AttrPointer("name"), "has already been taken")
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

func requireTeam(t *writeTxn, id string) (*mgmt.Team, error) {
	return mustGetRow[mgmt.Team](t, TableTeams, "team", id)
}

func applyTeamDelete(t *writeTxn, req *TeamDeleteRequest) (any, error) {
	team, err := requireTeam(t, req.ID)
	if err != nil {
		return nil, err
	}
	if team.IsOwners {
		return nil, state.Conflictf("the owners team cannot be deleted")
	}
	return nil, deleteTeamRows(t, team)
}

// deleteTeamRows deletes a team with its memberships and project access.
func deleteTeamRows(t *writeTxn, team *mgmt.Team) error {
	memberships, err := list[*mgmt.TeamMembership](nil, t.Txn, nil, TableTeamMemberships, indexID+"_prefix", team.ID)
	if err != nil {
		return err
	}
	for _, m := range memberships {
		if err := t.delete(TableTeamMemberships, m); err != nil {
			return err
		}
	}
	records, err := list[*mgmt.TeamProject](nil, t.Txn, nil, TableTeamProjects, indexMgTeam, team.ID)
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
		u, err := getRow[*mgmt.User](t, TableUsers, id)
		if err != nil {
			return nil, err
		}
		if u == nil {
			return nil, state.NotFoundf("user %q not found", id)
		}
		old, err := getRow[*mgmt.TeamMembership](t, TableTeamMemberships, team.ID, id)
		if err != nil {
			return nil, err
		}
		if old != nil {
			continue
		}
		m := &mgmt.TeamMembership{TeamID: team.ID, UserID: id, OrganizationName: team.OrganizationName}
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
		m, err := getRow[*mgmt.TeamMembership](t, TableTeamMemberships, team.ID, id)
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
