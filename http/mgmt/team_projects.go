package mgmt

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// Project team access (spec §4 Project team access).
//
// Who may do what (spec §5.3, §7): any member of the project's
// organization lists and shows the records of the teams it can see (its
// own teams, organization-visible teams; owners and project admins see
// every record, secret teams included). Owners (the organization and
// owners-team tokens included) and project admins add, update and remove
// records. Everything else is 404: an unknown project, team or record
// and a caller who may not act look the same, as the error table says.
// Adding answers 200, as the spec says (not 201).
func (m *router) teamProjectRoutes() {
	s := m.s
	newTeamProjects(s).mount(m, "/team-projects", "/team-projects/:id")
	m.handle(http.MethodPost, "/team-projects", s.teamProjectAdd)
	m.handle(http.MethodPatch, "/team-projects/:id", s.teamProjectUpdate)
}

// teamProjectView is a team access record with the caller's authority in
// its organization and access to its project.
type teamProjectView struct {
	tp *mgmt.TeamProject
	a  *mgmt.OrgAuthority
	pa mgmt.ProjectAccess
}

// newTeamProjects is the team access resource's read and delete (adding
// answers 200, not 201, and checks the access level after the document:
// teamProjectAdd). A record the caller may not see or change is a 404.
func newTeamProjects(s *Server) *resource[struct{}, teamProjectView, struct{}] {
	return &resource[struct{}, teamProjectView, struct{}]{
		s: s, list: s.teamProjectList,
		load: func(c *call, p httprouter.Params) (teamProjectView, error) {
			tp, a, pa, err := s.teamProjectAuthority(c, p.ByName("id"))
			return teamProjectView{tp, a, pa}, err
		},
		mayDelete: func(v teamProjectView) error {
			if !v.a.CanModifyTeamAccess(v.pa) {
				return notFound("team access", v.tp.ID)
			}
			return nil
		},
		deleteCmd: func(v teamProjectView) (store.MessageType, any) {
			return store.TeamProjectDeleteRequestType, &store.TeamProjectDeleteRequest{ID: v.tp.ID}
		},
		show: func(_ *http.Request, v teamProjectView) (*jsonapi.Document, error) {
			team, err := s.store.TeamByID(nil, v.tp.TeamID)
			if err != nil {
				return nil, err
			}
			if !v.a.CanViewTeamProject(team, v.pa) {
				return nil, notFound("team access", v.tp.ID)
			}
			return jsonapi.One(teamProjectResource(v.tp)), nil
		},
	}
}

// paramProjectID is the required filter of the team-project list.
const paramProjectID = "filter[project][id]"

func (s *Server) teamProjectList(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *call) (result, error) {
	q := r.URL.Query()
	id := q.Get(paramProjectID)
	if id == "" {
		return result{}, jsonapi.ParameterError(paramProjectID, "is required: the project whose team access to list")
	}
	page, err := pageOf(r)
	if err != nil {
		return result{}, err
	}
	proj, a, _, err := s.store.ProjectAuthority(nil, c.caller, id)
	if err != nil {
		return result{}, err
	}
	if proj == nil {
		return result{}, notFound("project", id)
	}
	list, err := s.store.ListTeamProjects(nil, a, proj.ID, statePage(page))
	if err != nil {
		return result{}, err
	}
	items := make([]*jsonapi.Resource, len(list.Items))
	for i, tp := range list.Items {
		items[i] = teamProjectResource(tp)
	}
	return ok(listDoc(r, items, page, list.Matching))
}

// teamProjectAuthority loads record id with the caller's authority and
// access on its project; a missing record or project is a 404.
func (s *Server) teamProjectAuthority(c *call, id string) (*mgmt.TeamProject, *mgmt.OrgAuthority, mgmt.ProjectAccess, error) {
	tp, err := s.store.TeamProjectByID(nil, id)
	if err != nil {
		return nil, nil, mgmt.ProjectAccess{}, err
	}
	if tp == nil {
		return nil, nil, mgmt.ProjectAccess{}, notFound("team access", id)
	}
	proj, a, pa, err := s.store.ProjectAuthority(nil, c.caller, tp.ProjectID)
	if err != nil {
		return nil, nil, pa, err
	}
	if proj == nil || a == nil {
		return nil, nil, pa, notFound("team access", id)
	}
	return tp, a, pa, nil
}

// readTeamProjectPermissions reads the project-access and workspace-access
// attributes. workspace-access.policy-overrides, which go-tfe sends and
// the spec does not have, is accepted and not kept.
func readTeamProjectPermissions(o *jsonapi.ResourceObject) mgmt.TeamProjectPermissionsPatch {
	var p mgmt.TeamProjectPermissionsPatch
	if pa := o.Attrs.Object("project-access"); pa != nil {
		p.Settings, p.Teams, p.VariableSets = pa.String("settings"), pa.String("teams"), pa.String("variable-sets")
	}
	if wa := o.Attrs.Object("workspace-access"); wa != nil {
		p.Runs, p.Variables = wa.String("runs"), wa.String("variables")
		p.StateVersions, p.GateMocks = wa.String("state-versions"), wa.String("gate-mocks")
		p.Create, p.Move, p.Locking = wa.Bool("create"), wa.Bool("move"), wa.Bool("locking")
		p.Delete, p.RunTasks = wa.Bool("delete"), wa.Bool("run-tasks")
		_ = wa.Bool("policy-overrides") // type-checked, not kept
	}
	return p
}

// teamProjectExpect: the spec's error table answers every malformed body
// of add and update with 422, a wrong type included.
var teamProjectExpect = jsonapi.Expect{Type: typeTeamProjects, WrongTypeStatus: http.StatusUnprocessableEntity}

func (s *Server) teamProjectAdd(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *call) (result, error) {
	o, err := readResource(r, teamProjectExpect)
	if err != nil {
		return result{}, err
	}
	access := o.Attrs.String("access")
	if access == nil && !o.Attrs.Has("access") {
		o.Attrs.Fail("access", "is required")
	}
	perms := readTeamProjectPermissions(o)
	projectID := o.RequiredToOne("project", typeProjects)
	teamID := o.RequiredToOne("team", typeTeams)
	if err := o.Err(); err != nil {
		return result{}, err
	}
	if _, err := mgmt.ResolveTeamProjectPermissions(*access, nil, perms); err != nil {
		return result{}, err
	}
	proj, a, pa, err := s.store.ProjectAuthority(nil, c.caller, projectID)
	if err != nil {
		return result{}, err
	}
	if proj == nil || !a.CanModifyTeamAccess(pa) {
		return result{}, notFound("project", projectID)
	}
	team, err := s.store.TeamByID(nil, teamID)
	if err != nil {
		return result{}, err
	}
	if team == nil || team.OrganizationName != proj.OrganizationName {
		return result{}, notFound("team", teamID)
	}
	resp, err := s.propose(w, r, store.TeamProjectCreateRequestType, &store.TeamProjectCreateRequest{
		ID: s.newID(mgmt.PrefixTeamProject), TeamID: team.ID, ProjectID: proj.ID, CreatedAt: s.now(),
		Access: *access, Permissions: perms})
	if err != nil {
		return result{}, err
	}
	return ok(jsonapi.One(teamProjectResource(resp.(*mgmt.TeamProject))))
}

func (s *Server) teamProjectUpdate(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	id := p.ByName("id")
	tp, a, pa, err := s.teamProjectAuthority(c, id)
	if err != nil {
		return result{}, err
	}
	if !a.CanModifyTeamAccess(pa) {
		return result{}, notFound("team access", id)
	}
	want := teamProjectExpect
	want.ID = tp.ID
	o, err := readResource(r, want)
	if err != nil {
		return result{}, err
	}
	access := o.Attrs.String("access")
	perms := readTeamProjectPermissions(o)
	if err := o.Err(); err != nil {
		return result{}, err
	}
	level := tp.Access
	if access != nil {
		level = *access
	}
	if _, err := mgmt.ResolveTeamProjectPermissions(level, tp, perms); err != nil {
		return result{}, err
	}
	resp, err := s.propose(w, r, store.TeamProjectUpdateRequestType, &store.TeamProjectUpdateRequest{ID: tp.ID, Access: access, Permissions: perms})
	if err != nil {
		return result{}, err
	}
	return ok(jsonapi.One(teamProjectResource(resp.(*mgmt.TeamProject))))
}
