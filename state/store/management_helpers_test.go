package store

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

// Fixtures of the management tests. Names start with "mg" so they do not
// collide with the helpers of the other tests of the package.

// mgT0 is the leader's clock at the start of every fixture: with
// nanoseconds, so that millisecond truncation shows.
var mgT0 = time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)

func mgPtr[T any](v T) *T { return &v }

// mgEnv applies management commands to a fresh store at increasing
// indexes, with a clock that advances one second per command.
type mgEnv struct {
	t   testing.TB
	s   *Store
	idx uint64
	// fast skips the invariant check after every command (benchmarks).
	fast bool
}

func newMgEnv(t testing.TB) *mgEnv {
	t.Helper()
	return &mgEnv{t: t, s: stStore(t, Config{}), idx: 100}
}

// checkCounters is an invariant: every organization counter equals the
// number of rows it counts, and no counter is kept at 0.
func (e *mgEnv) checkCounters() {
	e.t.Helper()
	dump := stDump(e.t, e.s)
	real := map[[2]string]int{}
	for _, row := range dump[TableProjects] {
		real[[2]string{TableProjects, row.(*mgmt.Project).OrganizationName}]++
	}
	for _, row := range dump[TableWorkspaces] {
		real[[2]string{TableWorkspaces, row.(*mgmt.Workspace).OrganizationName}]++
	}
	kept := map[[2]string]int{}
	for _, row := range dump[TableOrgCounters] {
		c := row.(*OrgCounter)
		if c.Count <= 0 {
			e.t.Errorf("counter %s/%s kept at %d", c.Table, c.OrganizationName, c.Count)
		}
		kept[[2]string{c.Table, c.OrganizationName}] = c.Count
	}
	if !reflect.DeepEqual(real, kept) {
		e.t.Errorf("organization counters %v, rows %v", kept, real)
	}
}

func (e *mgEnv) now() time.Time { return mgT0.Add(time.Duration(e.idx) * time.Second) }

// apply applies a command that must succeed and returns its response.
func (e *mgEnv) apply(mt MessageType, req any) any {
	e.t.Helper()
	e.idx++
	resp := stApply(e.t, e.s, e.idx, mt, req)
	if !e.fast {
		e.checkCounters()
	}
	return resp
}

// fail applies a command that must fail, checks that it wrote nothing and
// that its error matches want, and returns the error.
func (e *mgEnv) fail(mt MessageType, req any, want error) error {
	e.t.Helper()
	before, beforeIndex := stDump(e.t, e.s), e.s.LatestIndex()
	e.idx++
	resp := stApplyErr(e.t, e.s, e.idx, mt, req)
	err, ok := resp.(error)
	if !ok {
		e.t.Fatalf("command %d succeeded (%#v), want an error matching %v", mt, resp, want)
	}
	if !errors.Is(err, want) {
		e.t.Errorf("command %d: error %q does not match %v", mt, err, want)
	}
	if e.s.LatestIndex() != beforeIndex {
		e.t.Errorf("command %d: a failed command moved LatestIndex", mt)
	}
	stCompareDumps(e.t, before, stDump(e.t, e.s))
	return err
}

// mgFields returns the fields a validation error names.
func mgFields(err error) []string { return state.InvalidFields(err) }

// failField is fail for an ErrInvalid that must name field.
func (e *mgEnv) failField(mt MessageType, req any, field string) {
	e.t.Helper()
	err := e.fail(mt, req, state.ErrInvalid)
	for _, f := range mgFields(err) {
		if f == field {
			return
		}
	}
	e.t.Errorf("command %d: error %q does not name %s (names %v)", mt, err, field, mgFields(err))
}

func (e *mgEnv) user(id, username string, admin bool) *mgmt.User {
	e.t.Helper()
	return e.apply(UserUpsertRequestType, &UserUpsertRequest{User: &mgmt.User{
		ID: id, Username: username, Email: username + "@example.com", IsAdmin: admin, CreatedAt: e.now()}}).(*mgmt.User)
}

// org creates organization name with owner (may be "") on its owners
// team. Its owners team is "team-owners"+name and its default project
// "prj-default"+name (names of the fixtures are letters and digits).
func (e *mgEnv) org(name, owner string) *mgmt.Organization {
	e.t.Helper()
	return e.apply(OrganizationCreateRequestType, &OrganizationCreateRequest{
		Organization:     &mgmt.Organization{Name: name, ExternalID: "org-" + name, Email: "admin@" + name + ".example", CreatedAt: e.now()},
		OwnersTeamID:     mgOwners(name),
		DefaultProjectID: mgDefault(name),
		OwnerUserID:      owner,
	}).(*mgmt.Organization)
}

func mgOwners(org string) string  { return "team-owners" + org }
func mgDefault(org string) string { return "prj-default" + org }

func (e *mgEnv) team(id, org, visibility string, access *mgmt.TeamOrganizationAccessPatch, members ...string) *mgmt.Team {
	e.t.Helper()
	team := e.apply(TeamCreateRequestType, &TeamCreateRequest{ID: id, OrganizationName: org, CreatedAt: e.now(),
		Attributes: mgmt.TeamPatch{Name: mgPtr(strings.TrimPrefix(id, "team-")), Visibility: mgPtr(visibility), Access: access}}).(*mgmt.Team)
	if len(members) > 0 {
		e.apply(TeamMembersAddRequestType, &TeamMembersAddRequest{TeamID: id, UserIDs: members})
	}
	return team
}

func (e *mgEnv) project(id, org, name, duration string) *mgmt.Project {
	e.t.Helper()
	a := mgmt.ProjectPatch{Name: mgPtr(name)}
	if duration != "" {
		a.AutoDestroyActivityDuration = mgPtr(duration)
	}
	return e.apply(ProjectCreateRequestType, &ProjectCreateRequest{ID: id, OrganizationName: org, CreatedAt: e.now(), Attributes: a}).(*mgmt.Project)
}

func (e *mgEnv) workspace(id, org, projectID, name string) *mgmt.Workspace {
	e.t.Helper()
	a := mgmt.WorkspacePatch{Name: mgPtr(name)}
	if projectID != "" {
		a.ProjectID = mgPtr(projectID)
	}
	return e.apply(WorkspaceCreateRequestType, &WorkspaceCreateRequest{ID: id, OrganizationName: org, CreatedAt: e.now(), Attributes: a}).(*mgmt.Workspace)
}

func (e *mgEnv) teamProject(id, teamID, projectID, access string, perms mgmt.TeamProjectPermissionsPatch) *mgmt.TeamProject {
	e.t.Helper()
	return e.apply(TeamProjectCreateRequestType, &TeamProjectCreateRequest{ID: id, TeamID: teamID, ProjectID: projectID,
		CreatedAt: e.now(), Access: access, Permissions: perms}).(*mgmt.TeamProject)
}

func (e *mgEnv) toolVersion(id, family, version string, attrs mgmt.ToolVersionPatch) *mgmt.ToolVersion {
	e.t.Helper()
	attrs.Version = mgPtr(version)
	if attrs.URL == nil && attrs.Archs == nil {
		attrs.URL = mgPtr("https://releases.example.com/tool/" + version + "/tool_linux_amd64.zip")
	}
	if attrs.SHA == nil && attrs.Archs == nil {
		attrs.SHA = mgPtr(strings.Repeat("ab", 32))
	}
	return e.apply(ToolVersionCreateRequestType, &ToolVersionCreateRequest{ID: id, Family: family, CreatedAt: e.now(), Attributes: attrs}).(*mgmt.ToolVersion)
}

// authority resolves a subject and its authority in org, failing the test
// on an error.
func (e *mgEnv) authority(kind, id, org string) *mgmt.OrgAuthority {
	e.t.Helper()
	c, err := e.s.CallerForSubject(nil, kind, id)
	if err != nil {
		e.t.Fatalf("CallerForSubject(%s, %s): %v", kind, id, err)
	}
	a, err := e.s.OrgAuthorityFor(nil, c, org)
	if err != nil {
		e.t.Fatalf("OrgAuthorityFor: %v", err)
	}
	return a
}

func (e *mgEnv) projectAccess(a *mgmt.OrgAuthority, projectID string) mgmt.ProjectAccess {
	e.t.Helper()
	p := stMust[*mgmt.Project](e.t)(e.s.ProjectByID(nil, projectID))
	if p == nil {
		e.t.Fatalf("project %s not found", projectID)
	}
	pa, err := e.s.ProjectAccessFor(nil, a, p)
	if err != nil {
		e.t.Fatal(err)
	}
	return pa
}
