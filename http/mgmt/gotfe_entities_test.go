package mgmt

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	tfe "github.com/hashicorp/go-tfe"

	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// TestMgmtGoTFEOrganizationsTeamsTokens drives organizations, teams,
// team membership, and the organization, team and user tokens through
// go-tfe, checking what each call wrote.
func TestMgmtGoTFEOrganizationsTeamsTokens(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	ts := httptest.NewServer(neutralNames(m.srv.Handler()))
	defer ts.Close()
	ctx := context.Background()
	c := tfeClient(t, ts, w.owner)

	// Organizations.
	org, err := c.Organizations.Create(ctx, tfe.OrganizationCreateOptions{Name: tfePtr("globex"), Email: tfePtr("ops@globex.example")})
	if err != nil || org.Name != "globex" || org.Email != "ops@globex.example" || org.ExternalID == "" || org.Permissions == nil || !org.Permissions.CanUpdate {
		t.Fatalf("Organizations.Create = %+v, %v", org, err)
	}
	if got, err := c.Organizations.Read(ctx, "globex"); err != nil || got.ExternalID != org.ExternalID || got.CreatedAt.IsZero() {
		t.Fatalf("Organizations.Read = %+v, %v", got, err)
	}
	orgs, err := c.Organizations.List(ctx, nil)
	if err != nil || len(orgs.Items) != 2 || orgs.TotalCount != 2 {
		t.Fatalf("Organizations.List = %+v, %v", orgs, err)
	}
	if upd, err := c.Organizations.Update(ctx, "globex", tfe.OrganizationUpdateOptions{Email: tfePtr("it@globex.example")}); err != nil || upd.Email != "it@globex.example" {
		t.Fatalf("Organizations.Update = %+v, %v", upd, err)
	}

	// Teams and membership.
	team, err := c.Teams.Create(ctx, "globex", tfe.TeamCreateOptions{Name: tfePtr("devs"), Visibility: tfePtr("organization"),
		OrganizationAccess: &tfe.OrganizationAccessOptions{ManageWorkspaces: tfePtr(true)}})
	if err != nil || team.Name != "devs" || team.Visibility != "organization" || team.OrganizationAccess == nil || !team.OrganizationAccess.ManageWorkspaces {
		t.Fatalf("Teams.Create = %+v, %v", team, err)
	}
	if err := c.TeamMembers.Add(ctx, team.ID, tfe.TeamMemberAddOptions{Usernames: []string{"manny", "rita"}}); err != nil {
		t.Fatalf("TeamMembers.Add: %v", err)
	}
	users, err := c.TeamMembers.List(ctx, team.ID)
	if err != nil || len(users) != 2 {
		t.Fatalf("TeamMembers.List = %v, %v", users, err)
	}
	if err := c.TeamMembers.Remove(ctx, team.ID, tfe.TeamMemberRemoveOptions{Usernames: []string{"rita"}}); err != nil {
		t.Fatalf("TeamMembers.Remove: %v", err)
	}
	if got, err := c.Teams.Read(ctx, team.ID); err != nil || got.UserCount != 1 || len(got.Users) != 1 || got.Users[0].ID != w.managerID {
		t.Fatalf("Teams.Read after remove = %+v, %v", got, err)
	}
	if upd, err := c.Teams.Update(ctx, team.ID, tfe.TeamUpdateOptions{Name: tfePtr("developers"), Visibility: tfePtr("secret")}); err != nil ||
		upd.Name != "developers" || upd.Visibility != "secret" {
		t.Fatalf("Teams.Update = %+v, %v", upd, err)
	}
	teams, err := c.Teams.List(ctx, "globex", nil)
	if err != nil || len(teams.Items) != 2 {
		t.Fatalf("Teams.List = %+v, %v", teams, err)
	}

	// Tokens: a team token acts for its team, an organization token for
	// its organization, a user token for its user.
	tt, err := c.TeamTokens.Create(ctx, team.ID)
	if err != nil || tt.Token == "" || tt.ID == "" {
		t.Fatalf("TeamTokens.Create = %+v, %v", tt, err)
	}
	if got, err := tfeClient(t, ts, tt.Token).Teams.Read(ctx, team.ID); err != nil || got.Name != "developers" {
		t.Fatalf("team token reads its team: %+v, %v", got, err)
	}
	if err := c.TeamTokens.Delete(ctx, team.ID); err != nil {
		t.Fatalf("TeamTokens.Delete: %v", err)
	}
	if _, err := tfeClient(t, ts, "not-a-token").Organizations.List(ctx, nil); !errors.Is(err, tfe.ErrUnauthorized) {
		t.Fatalf("unknown token: %v, want unauthorized", err)
	}
	ot, err := c.OrganizationTokens.Create(ctx, "globex")
	if err != nil || ot.Token == "" {
		t.Fatalf("OrganizationTokens.Create = %+v, %v", ot, err)
	}
	if got, err := tfeClient(t, ts, ot.Token).Organizations.Read(ctx, "globex"); err != nil || got.Name != "globex" {
		t.Fatalf("organization token reads its organization: %+v, %v", got, err)
	}
	if err := c.OrganizationTokens.Delete(ctx, "globex"); err != nil {
		t.Fatalf("OrganizationTokens.Delete: %v", err)
	}
	if _, err := tfeClient(t, ts, ot.Token).Organizations.Read(ctx, "globex"); !errors.Is(err, tfe.ErrUnauthorized) {
		t.Fatalf("deleted organization token: %v, want unauthorized", err)
	}
	me, err := c.Users.ReadCurrent(ctx)
	if err != nil || me.ID != w.ownerID || me.Username != "olivia" {
		t.Fatalf("Users.ReadCurrent = %+v, %v", me, err)
	}
	ut, err := c.UserTokens.Create(ctx, me.ID, tfe.UserTokenCreateOptions{Description: "ci"})
	if err != nil || ut.Token == "" || ut.Description != "ci" {
		t.Fatalf("UserTokens.Create = %+v, %v", ut, err)
	}
	if got, err := c.UserTokens.Read(ctx, ut.ID); err != nil || got.Description != "ci" || got.Token != "" {
		t.Fatalf("UserTokens.Read (no secret) = %+v, %v", got, err)
	}
	uts, err := c.UserTokens.List(ctx, me.ID)
	if err != nil || !slices.ContainsFunc(uts.Items, func(x *tfe.UserToken) bool { return x.ID == ut.ID }) {
		t.Fatalf("UserTokens.List = %+v, %v", uts, err)
	}
	if got, err := tfeClient(t, ts, ut.Token).Users.ReadCurrent(ctx); err != nil || got.ID != me.ID {
		t.Fatalf("user token's Users.ReadCurrent = %+v, %v", got, err)
	}
	if err := c.UserTokens.Delete(ctx, ut.ID); err != nil {
		t.Fatalf("UserTokens.Delete: %v", err)
	}

	// Stacks: the organization has none (sched has no stacks).
	if sl, err := c.Stacks.List(ctx, "globex", nil); err != nil || len(sl.Items) != 0 || sl.Pagination == nil || sl.TotalCount != 0 {
		t.Fatalf("Stacks.List = %+v, %v", sl, err)
	}

	// Deletes, and what is left.
	if err := c.Teams.Delete(ctx, team.ID); err != nil {
		t.Fatalf("Teams.Delete: %v", err)
	}
	if _, err := c.Teams.Read(ctx, team.ID); !errors.Is(err, tfe.ErrResourceNotFound) {
		t.Fatalf("deleted team: %v", err)
	}
	if err := c.Organizations.Delete(ctx, "globex"); err != nil {
		t.Fatalf("Organizations.Delete: %v", err)
	}
	if _, err := c.Organizations.Read(ctx, "globex"); !errors.Is(err, tfe.ErrResourceNotFound) {
		t.Fatalf("deleted organization: %v", err)
	}
}

// TestMgmtGoTFEWorkspacesRunsStatePolicySets drives workspaces (with
// locking), runs and their actions, state versions and policy sets
// through go-tfe.
func TestMgmtGoTFEWorkspacesRunsStatePolicySets(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	ts := httptest.NewServer(neutralNames(m.srv.Handler()))
	defer ts.Close()
	ctx := context.Background()
	c := tfeClient(t, ts, w.owner)

	ws, err := c.Workspaces.Create(ctx, w.org, tfe.WorkspaceCreateOptions{Name: tfePtr("site"), Description: tfePtr("the site"),
		Project: &tfe.Project{ID: w.appProject}})
	if err != nil || ws.Name != "site" || ws.Description != "the site" || ws.Project == nil || ws.Project.ID != w.appProject {
		t.Fatalf("Workspaces.Create = %+v, %v", ws, err)
	}
	if got, err := c.Workspaces.Read(ctx, w.org, "site"); err != nil || got.ID != ws.ID {
		t.Fatalf("Workspaces.Read = %+v, %v", got, err)
	}
	if got, err := c.Workspaces.ReadByID(ctx, ws.ID); err != nil || got.Name != "site" || got.Permissions == nil || !got.Permissions.CanQueueRun {
		t.Fatalf("Workspaces.ReadByID = %+v, %v", got, err)
	}
	wl, err := c.Workspaces.List(ctx, w.org, &tfe.WorkspaceListOptions{Search: "sit"})
	if err != nil || len(wl.Items) != 1 || wl.Items[0].ID != ws.ID {
		t.Fatalf("Workspaces.List = %+v, %v", wl, err)
	}
	if upd, err := c.Workspaces.UpdateByID(ctx, ws.ID, tfe.WorkspaceUpdateOptions{Description: tfePtr("the new site")}); err != nil || upd.Description != "the new site" {
		t.Fatalf("Workspaces.UpdateByID = %+v, %v", upd, err)
	}
	if l, err := c.Workspaces.Lock(ctx, ws.ID, tfe.WorkspaceLockOptions{Reason: tfePtr("deploying")}); err != nil || !l.Locked {
		t.Fatalf("Workspaces.Lock = %+v, %v", l, err)
	}
	if _, err := c.Workspaces.Lock(ctx, ws.ID, tfe.WorkspaceLockOptions{}); !errors.Is(err, tfe.ErrWorkspaceLocked) {
		t.Fatalf("second lock: %v, want ErrWorkspaceLocked", err)
	}

	// State versions: the locked workspace takes one.
	state := []byte(`{"version":4,"serial":1,"lineage":"l-1","outputs":{}}`)
	sv, err := c.StateVersions.Create(ctx, ws.ID, tfe.StateVersionCreateOptions{Serial: tfePtr(int64(1)), MD5: tfePtr(mgmt.MD5Hex(state)),
		Lineage: tfePtr("l-1"), State: tfePtr(base64.StdEncoding.EncodeToString(state))})
	if err != nil || sv.Serial != 1 || sv.ID == "" {
		t.Fatalf("StateVersions.Create = %+v, %v", sv, err)
	}
	if got, err := c.StateVersions.Read(ctx, sv.ID); err != nil || got.Serial != 1 {
		t.Fatalf("StateVersions.Read = %+v, %v", got, err)
	}
	if got, err := c.StateVersions.ReadCurrent(ctx, ws.ID); err != nil || got.ID != sv.ID {
		t.Fatalf("StateVersions.ReadCurrent = %+v, %v", got, err)
	}
	svl, err := c.StateVersions.List(ctx, &tfe.StateVersionListOptions{Organization: w.org, Workspace: "site"})
	if err != nil || len(svl.Items) != 1 || svl.Items[0].ID != sv.ID {
		t.Fatalf("StateVersions.List = %+v, %v", svl, err)
	}
	if u, err := c.Workspaces.Unlock(ctx, ws.ID); err != nil || u.Locked {
		t.Fatalf("Workspaces.Unlock = %+v, %v", u, err)
	}
	if _, err := tfeClient(t, ts, w.manager).Workspaces.Lock(ctx, ws.ID, tfe.WorkspaceLockOptions{}); err != nil {
		t.Fatalf("manager's Lock: %v", err)
	}
	if u, err := c.Workspaces.ForceUnlock(ctx, ws.ID); err != nil || u.Locked {
		t.Fatalf("Workspaces.ForceUnlock = %+v, %v", u, err)
	}
	if upd, err := c.Workspaces.Update(ctx, w.org, "site", tfe.WorkspaceUpdateOptions{Name: tfePtr("web")}); err != nil || upd.Name != "web" || upd.ID != ws.ID {
		t.Fatalf("Workspaces.Update by name = %+v, %v", upd, err)
	}

	// Runs: queued, discarded; another planned, applied, canceled.
	r1, err := c.Runs.Create(ctx, tfe.RunCreateOptions{Workspace: ws, Message: tfePtr("first")})
	if err != nil || r1.Status != tfe.RunPending || r1.Message != "first" || r1.Workspace == nil || r1.Workspace.ID != ws.ID {
		t.Fatalf("Runs.Create = %+v, %v", r1, err)
	}
	if err := c.Runs.Apply(ctx, r1.ID, tfe.RunApplyOptions{}); err == nil {
		t.Fatal("a pending run was applied")
	}
	if err := c.Runs.Discard(ctx, r1.ID, tfe.RunDiscardOptions{Comment: tfePtr("not now")}); err != nil {
		t.Fatalf("Runs.Discard: %v", err)
	}
	if got, err := c.Runs.Read(ctx, r1.ID); err != nil || got.Status != tfe.RunDiscarded {
		t.Fatalf("discarded run = %+v, %v", got, err)
	}
	r2, err := c.Runs.Create(ctx, tfe.RunCreateOptions{Workspace: ws, IsDestroy: tfePtr(true)})
	if err != nil || !r2.IsDestroy {
		t.Fatalf("Runs.Create destroy = %+v, %v", r2, err)
	}
	for _, st := range []string{"planning", "planned"} {
		m.Apply(store.RunAdvanceRequestType, &store.RunAdvanceRequest{ID: r2.ID, Status: st, Now: m.clock.Now()})
	}
	if err := c.Runs.Apply(ctx, r2.ID, tfe.RunApplyOptions{Comment: tfePtr("ship")}); err != nil {
		t.Fatalf("Runs.Apply: %v", err)
	}
	if err := c.Runs.Cancel(ctx, r2.ID, tfe.RunCancelOptions{}); err != nil {
		t.Fatalf("Runs.Cancel: %v", err)
	}
	if got, err := c.Runs.Read(ctx, r2.ID); err != nil || got.Status != tfe.RunCanceled || got.StatusTimestamps == nil || got.StatusTimestamps.PlannedAt.IsZero() {
		t.Fatalf("canceled run = %+v, %v", got, err)
	}
	rl, err := c.Runs.List(ctx, ws.ID, nil)
	if err != nil || len(rl.Items) != 2 || rl.Items[0].ID != r2.ID || rl.Items[1].ID != r1.ID {
		t.Fatalf("Runs.List = %+v, %v", rl, err)
	}

	// Policy sets.
	ps, err := c.PolicySets.Create(ctx, w.org, tfe.PolicySetCreateOptions{Name: tfePtr("guards"), Description: tfePtr("guard rails"), Overridable: tfePtr(true)})
	if err != nil || ps.Name != "guards" || ps.Description != "guard rails" || ps.Overridable == nil || !*ps.Overridable {
		t.Fatalf("PolicySets.Create = %+v, %v", ps, err)
	}
	if got, err := c.PolicySets.Read(ctx, ps.ID); err != nil || got.Name != "guards" || got.CreatedAt.IsZero() {
		t.Fatalf("PolicySets.Read = %+v, %v", got, err)
	}
	if upd, err := c.PolicySets.Update(ctx, ps.ID, tfe.PolicySetUpdateOptions{Description: tfePtr("stricter")}); err != nil || upd.Description != "stricter" {
		t.Fatalf("PolicySets.Update = %+v, %v", upd, err)
	}
	psl, err := c.PolicySets.List(ctx, w.org, nil)
	if err != nil || len(psl.Items) != 1 || psl.Items[0].ID != ps.ID {
		t.Fatalf("PolicySets.List = %+v, %v", psl, err)
	}
	if err := c.PolicySets.Delete(ctx, ps.ID); err != nil {
		t.Fatalf("PolicySets.Delete: %v", err)
	}
	if _, err := c.PolicySets.Read(ctx, ps.ID); !errors.Is(err, tfe.ErrResourceNotFound) {
		t.Fatalf("deleted policy set: %v", err)
	}

	// A reader sees the workspace but may not delete it; the owner may.
	if err := tfeClient(t, ts, w.reader).Workspaces.DeleteByID(ctx, ws.ID); err == nil {
		t.Fatal("a reader deleted a workspace")
	}
	if err := c.Workspaces.Delete(ctx, w.org, "web"); err != nil {
		t.Fatalf("Workspaces.Delete: %v", err)
	}
	if _, err := c.Workspaces.ReadByID(ctx, ws.ID); !errors.Is(err, tfe.ErrResourceNotFound) {
		t.Fatalf("deleted workspace: %v", err)
	}
}

// TestMgmtGoTFEAdminUsers drives the admin users endpoints go-tfe has:
// list, grant and revoke administration, delete.
func TestMgmtGoTFEAdminUsers(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	ts := httptest.NewServer(neutralNames(m.srv.Handler()))
	defer ts.Close()
	ctx := context.Background()
	c := tfeClient(t, ts, m.root)

	ul, err := c.Admin.Users.List(ctx, &tfe.AdminUserListOptions{Query: "rit"})
	if err != nil || len(ul.Items) != 1 || ul.Items[0].ID != w.readerID || ul.Items[0].Username != "rita" || ul.Items[0].IsAdmin {
		t.Fatalf("Admin.Users.List = %+v, %v", ul, err)
	}
	if u, err := c.Admin.Users.GrantAdmin(ctx, w.readerID); err != nil || !u.IsAdmin {
		t.Fatalf("GrantAdmin = %+v, %v", u, err)
	}
	// The new administrator reaches the admin API.
	if l, err := tfeClient(t, ts, w.reader).Admin.Organizations.List(ctx, nil); err != nil || len(l.Items) != 1 {
		t.Fatalf("new admin's Admin.Organizations.List = %+v, %v", l, err)
	}
	if u, err := c.Admin.Users.RevokeAdmin(ctx, w.readerID); err != nil || u.IsAdmin {
		t.Fatalf("RevokeAdmin = %+v, %v", u, err)
	}
	if _, err := tfeClient(t, ts, w.reader).Admin.Organizations.List(ctx, nil); !errors.Is(err, tfe.ErrResourceNotFound) {
		t.Fatalf("revoked admin: %v, want not found", err)
	}
	if err := c.Admin.Users.Delete(ctx, w.readerID); err != nil {
		t.Fatalf("Admin.Users.Delete: %v", err)
	}
	if ul, err := c.Admin.Users.List(ctx, &tfe.AdminUserListOptions{Query: "rit"}); err != nil || len(ul.Items) != 0 {
		t.Fatalf("deleted user listed: %+v, %v", ul, err)
	}
	m.clock.Advance(time.Second)
}

// TestMgmtGoTFEErrorPaths: go-tfe sees 401, 403, 404 and 422 as it does
// from TFE (ErrUnauthorized, ErrResourceNotFound, the error details), and
// the same requests answer JSON:API error objects with status, title,
// detail and, for a body at fault, the JSON pointer. The malformed bodies
// of issue 16: a team-project PATCH whose data.id is not the path's, an
// admin organization PATCH carrying name, a wrong type, no data.
func TestMgmtGoTFEErrorPaths(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	ts := httptest.NewServer(neutralNames(m.srv.Handler()))
	defer ts.Close()
	ctx := context.Background()
	owner, reader := tfeClient(t, ts, w.owner), tfeClient(t, ts, w.reader)

	// 401: an unknown token.
	if _, err := tfeClient(t, ts, "not-a-token").Projects.List(ctx, w.org, nil); !errors.Is(err, tfe.ErrUnauthorized) {
		t.Errorf("unknown token: %v, want ErrUnauthorized", err)
	}
	m.fail("not-a-token", "GET", "/organizations/acme/projects", nil, 401, "")
	m.fail("", "GET", "/organizations/acme/projects", nil, 401, "")

	// 403: visible but not allowed.
	if _, err := reader.Projects.Create(ctx, w.org, tfe.ProjectCreateOptions{Name: "nope"}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("reader creating a project: %v, want forbidden", err)
	}
	m.fail(w.reader, "POST", "/organizations/acme/projects", docBody("projects", map[string]any{"name": "nope"}), 403, "")

	// 404: unknown, or invisible to the caller.
	if _, err := owner.Projects.Read(ctx, "prj-doesnotexist"); !errors.Is(err, tfe.ErrResourceNotFound) {
		t.Errorf("unknown project: %v, want ErrResourceNotFound", err)
	}
	m.fail(w.owner, "GET", "/projects/prj-doesnotexist", nil, 404, "")
	if _, err := tfeClient(t, ts, w.outsider).Projects.Read(ctx, w.appProject); !errors.Is(err, tfe.ErrResourceNotFound) {
		t.Errorf("outsider reading a project: %v, want ErrResourceNotFound", err)
	}
	if _, err := owner.Admin.Organizations.List(ctx, nil); !errors.Is(err, tfe.ErrResourceNotFound) {
		t.Errorf("non-admin on the admin API: %v, want ErrResourceNotFound", err)
	}

	// 422: invalid attributes, named by pointer.
	if _, err := owner.Projects.Create(ctx, w.org, tfe.ProjectCreateOptions{Name: "x"}); err == nil || !strings.Contains(err.Error(), "Name") {
		t.Errorf("a one-letter project name: %v", err)
	}
	m.fail(w.owner, "POST", "/organizations/acme/projects", docBody("projects", map[string]any{"name": "x"}), 422, "/data/attributes/name")
	tp, err := owner.TeamProjectAccess.Add(ctx, tfe.TeamProjectAccessAddOptions{Access: tfe.TeamProjectAccessRead,
		Team: &tfe.Team{ID: w.managersTeam}, Project: &tfe.Project{ID: w.appProject}})
	if err != nil {
		t.Fatalf("TeamProjectAccess.Add: %v", err)
	}
	m.fail(w.owner, "PATCH", "/team-projects/"+tp.ID, map[string]any{"data": map[string]any{"type": "team-projects", "id": "tprj-other",
		"attributes": map[string]any{"access": "write"}}}, 422, "/data/id")
	m.fail(w.owner, "PATCH", "/team-projects/"+tp.ID, docBody("teams", map[string]any{"access": "write"}), 422, "/data/type")
	m.fail(w.owner, "PATCH", "/team-projects/"+tp.ID, map[string]any{"meta": map[string]any{}}, 422, "/data")
	if got, err := owner.TeamProjectAccess.Read(ctx, tp.ID); err != nil || got.Access != tfe.TeamProjectAccessRead {
		t.Errorf("a refused PATCH changed the record: %+v, %v", got, err)
	}
	m.fail(m.root, "PATCH", "/admin/organizations/acme", docBody("organizations", map[string]any{"name": "renamed"}), 422, "/data/attributes/name", "read-only")
	if got, err := tfeClient(t, ts, m.root).Admin.Organizations.Read(ctx, "acme"); err != nil || got.Name != "acme" {
		t.Errorf("admin organization after a refused rename: %+v, %v", got, err)
	}
}
