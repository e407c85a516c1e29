package mgmt

import (
	"net/http"
	"slices"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// Projects (spec §4 Projects) and their tag bindings.
//
// Who may do what (spec §5.2, §5.5, §7): owners, teams with Manage
// projects and the organization token create projects (other members get
// 403); a project is visible to whoever has access to it (its
// team-projects, or organization-level permissions), and invisible
// projects are 404 everywhere; updating needs settings update (403
// otherwise), deleting needs settings delete (403 otherwise). A project
// that still holds workspaces, and the organization's Default Project,
// cannot be deleted: 409 Conflict, the status of "the resource's state
// forbids this" (the spec leaves the status open). Moving workspaces
// needs move permission on the destination (404 otherwise) and on every
// source project, with every listed workspace found (403 otherwise);
// nothing moves unless all do.
func (m *router) projectRoutes() {
	s := m.s
	newProjects(s).mount(m, "/organizations/:org/projects", "/projects/:project")
	m.handle(http.MethodPost, "/projects/:project/relationships/workspaces", s.projectMoveWorkspaces)
	m.handle(http.MethodGet, "/projects/:project/tag-bindings", s.projectTagBindings(typeTagBindings))
	m.handle(http.MethodGet, "/projects/:project/effective-tag-bindings", s.projectTagBindings(typeEffectiveTags))
	m.handle(http.MethodPatch, "/projects/:project/tag-bindings", s.projectAddTagBindings)
}

// projectView is a project the caller can see, with their access to it.
type projectView struct {
	p  *mgmt.Project
	pa mgmt.ProjectAccess
}

// newProjects is the project resource. Attributes an update leaves out keep
// their value; a changed auto-destroy-activity-duration reaches the
// project's workspaces that have no override. An update answers the
// project as read back, with the caller's access and counts.
func newProjects(s *Server) *resource[*mgmt.OrgAuthority, projectView, mgmt.ProjectPatch] {
	return &resource[*mgmt.OrgAuthority, projectView, mgmt.ProjectPatch]{
		s: s, typ: typeProjects, prefix: mgmt.PrefixProject, list: s.projectList,
		readOnly: []string{"workspace-count", "team-count", "permissions", "is-default", "created-at"},
		scope: func(c *call, p httprouter.Params) (*mgmt.OrgAuthority, error) {
			return s.orgAuthority(c, p.ByName("org"))
		},
		load: func(c *call, p httprouter.Params) (projectView, error) {
			proj, _, pa, err := s.visibleProject(c, p.ByName("project"))
			return projectView{proj, pa}, err
		},
		id: func(v projectView) string { return v.p.ID },
		mayCreate: func(a *mgmt.OrgAuthority) error {
			return forbiddenUnless(a.CanCreateProject(), "not allowed to create projects in organization %q", a.Organization.Name)
		},
		mayUpdate: func(v projectView) error {
			return forbiddenUnless(v.pa.CanUpdate(), "not allowed to update project %q", v.p.ID)
		},
		mayDelete: func(v projectView) error {
			return forbiddenUnless(v.pa.CanDestroy(), "not allowed to delete project %q", v.p.ID)
		},
		decode: func(o *jsonapi.ResourceObject, _ *projectView) mgmt.ProjectPatch { return readProjectPatch(o) },
		check: func(p mgmt.ProjectPatch, current *projectView) []error {
			if current == nil {
				return []error{p.Validate(true), checkAgentPool(nil, p)}
			}
			return []error{p.Validate(false), checkAgentPool(current.p, p)}
		},
		createCmd: func(a *mgmt.OrgAuthority, st stamp, p mgmt.ProjectPatch) (store.MessageType, any) {
			return store.ProjectCreateRequestType, &store.ProjectCreateRequest{ID: st.id, OrganizationName: a.Organization.Name, CreatedAt: st.now, Attributes: p}
		},
		updateCmd: func(v projectView, st stamp, p mgmt.ProjectPatch) (store.MessageType, any) {
			return store.ProjectUpdateRequestType, &store.ProjectUpdateRequest{ID: v.p.ID, Attributes: p, Now: st.now}
		},
		deleteCmd: func(v projectView) (store.MessageType, any) {
			return store.ProjectDeleteRequestType, &store.ProjectDeleteRequest{ID: v.p.ID}
		},
		show: func(r *http.Request, v projectView) (*jsonapi.Document, error) {
			inc, err := jsonapi.ParseInclude(r.URL.Query(), includeEffectiveTags)
			if err != nil {
				return nil, err
			}
			return s.projectDoc(v.p, v.pa, inc[includeEffectiveTags])
		},
		showCreated: func(a *mgmt.OrgAuthority, resp any) (*jsonapi.Document, error) {
			proj := resp.(*mgmt.Project)
			pa, err := s.store.ProjectAccessFor(nil, a, proj)
			if err != nil {
				return nil, err
			}
			return s.projectDoc(proj, pa, false)
		},
		showUpdated: func(c *call, v projectView, _ any) (*jsonapi.Document, error) {
			proj, _, pa, err := s.visibleProject(c, v.p.ID)
			if err != nil {
				return nil, err
			}
			return s.projectDoc(proj, pa, false)
		},
	}
}

// includeEffectiveTags is the include path go-tfe sends for a project's
// effective tag bindings.
const includeEffectiveTags = "effective_tag_bindings"

// visibleProject loads project id with the caller's authority and access,
// or a 404 when it does not exist or the caller cannot see it.
func (s *Server) visibleProject(c *call, id string) (*mgmt.Project, *mgmt.OrgAuthority, mgmt.ProjectAccess, error) {
	p, a, pa, err := s.store.ProjectAuthority(nil, c.caller, id)
	if err != nil {
		return nil, nil, pa, err
	}
	if p == nil || !pa.Visible {
		return nil, nil, pa, notFound("project", id)
	}
	return p, a, pa, nil
}

// projectDoc renders p for the caller, with its counts, and its effective
// tag bindings included when asked.
func (s *Server) projectDoc(p *mgmt.Project, pa mgmt.ProjectAccess, includeTags bool) (*jsonapi.Document, error) {
	ws, teams, err := s.store.ProjectCounts(nil, p.ID)
	if err != nil {
		return nil, err
	}
	org, err := s.store.OrganizationByName(nil, p.OrganizationName)
	if err != nil {
		return nil, err
	}
	doc := jsonapi.One(projectResource(p, org, pa, ws, teams))
	if includeTags {
		doc.Include(tagBindingResources(p, typeEffectiveTags)...)
	}
	return doc, nil
}

// projectList serves GET /organizations/:org/projects.
func (s *Server) projectList(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	a, page, err := s.orgPage(c, p, r)
	if err != nil {
		return result{}, err
	}
	q := r.URL.Query()
	inc, err := jsonapi.ParseInclude(q, includeEffectiveTags)
	if err != nil {
		return result{}, err
	}
	opts := store.ProjectListOptions{
		Query:              q.Get("q"),
		Names:              jsonapi.SplitList(q.Get("filter[names]")),
		CanCreateWorkspace: flagParam(q, "filter[permissions][create-workspace]"),
		CanUpdate:          flagParam(q, "filter[permissions][update]"),
		Sort:               q.Get("sort"),
		Page:               statePage(page),
	}
	list, err := s.store.ListProjects(nil, a, opts)
	if err != nil {
		return result{}, err
	}
	items := make([]*jsonapi.Resource, len(list.Items))
	var included []*jsonapi.Resource
	for i, e := range list.Items {
		items[i] = projectResource(e.Project, a.Organization, e.Access, e.WorkspaceCount, e.TeamCount)
		if inc[includeEffectiveTags] {
			included = append(included, tagBindingResources(e.Project, typeEffectiveTags)...)
		}
	}
	doc := listDoc(r, items, page, list.Matching)
	doc.Include(included...)
	doc.SetMeta("status-counts", map[string]int{"total": list.Total, "matching": list.Matching})
	return ok(doc)
}

// flagParam reports whether a filter that takes no value is on: present
// with any value but "false".
func flagParam(q map[string][]string, name string) bool {
	vs, present := q[name]
	return present && !(len(vs) > 0 && strings.EqualFold(vs[0], "false"))
}

// readProjectPatch reads a project's writable attributes and tag bindings.
func readProjectPatch(o *jsonapi.ResourceObject) mgmt.ProjectPatch {
	a := o.Attrs
	patch := mgmt.ProjectPatch{
		Name:                        a.String("name"),
		Description:                 a.NullableString("description"),
		AutoDestroyActivityDuration: a.NullableString("auto-destroy-activity-duration"),
		DefaultExecutionMode:        a.NullableString("default-execution-mode"),
		DefaultAgentPoolID:          a.NullableString("default-agent-pool-id"),
	}
	if so := a.Object("setting-overwrites"); so != nil {
		patch.SettingOverwrites = &mgmt.ProjectSettingOverwritesPatch{
			ExecutionMode: so.Bool("default-execution-mode"),
			AgentPool:     so.Bool("default-agent-pool"),
		}
	}
	if objs, sent := o.ToManyObjects("tag-bindings", typeTagBindings); sent && objs != nil {
		tags := readTagBindings(objs)
		patch.TagBindings = &tags
	}
	return patch
}

// readTagBindings reads key/value attributes of tag-binding objects.
func readTagBindings(objs []jsonapi.RelatedObject) []mgmt.TagBinding {
	tags := make([]mgmt.TagBinding, 0, len(objs))
	for _, obj := range objs {
		var tb mgmt.TagBinding
		if k := obj.Attrs.String("key"); k != nil {
			tb.Key = *k
		}
		if v := obj.Attrs.NullableString("value"); v != nil {
			tb.Value = *v
		}
		tags = append(tags, tb)
	}
	return tags
}

// checkAgentPool refuses, before anything is proposed, a patch that would
// leave project p (nil on create) in the agent execution mode without an
// agent pool: the rule Apply enforces on the merged project.
func checkAgentPool(p *mgmt.Project, patch mgmt.ProjectPatch) error {
	var mode, pool string
	if p != nil {
		mode, pool = p.DefaultExecutionMode, p.DefaultAgentPoolID
	}
	if patch.DefaultExecutionMode != nil {
		mode = *patch.DefaultExecutionMode
	}
	if patch.DefaultAgentPoolID != nil {
		pool = *patch.DefaultAgentPoolID
	}
	if o := patch.SettingOverwrites; o != nil {
		if o.ExecutionMode != nil && !*o.ExecutionMode {
			mode = ""
		}
		if o.AgentPool != nil && !*o.AgentPool {
			pool = ""
		}
	}
	if mode == mgmt.ExecutionModeAgent && pool == "" {
		return state.Invalidf(mgmt.AttrPointer("default-agent-pool-id"), "is required when default-execution-mode is agent")
	}
	return nil
}

// projectMoveWorkspaces serves POST /projects/:project/relationships/
// workspaces: the body lists workspaces (type workspaces) to move into
// the project, all or none.
func (s *Server) projectMoveWorkspaces(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	id := p.ByName("project")
	proj, a, _, err := s.store.ProjectAuthority(nil, c.caller, id)
	if err != nil {
		return result{}, err
	}
	if proj == nil || !a.CanAccess() {
		return result{}, notFound("project", id)
	}
	doc, err := readDoc(r)
	if err != nil {
		return result{}, err
	}
	refs, err := doc.Identifiers(typeWorkspaces)
	if err != nil {
		return result{}, err
	}
	ids := make([]string, len(refs))
	for i, ref := range refs {
		ids[i] = ref.ID
	}
	if err := s.store.AuthorizeWorkspaceMove(nil, a, proj.ID, ids); err != nil {
		return result{}, err
	}
	if len(ids) > 0 {
		if _, err := s.propose(w, r, store.WorkspacesMoveRequestType, &store.WorkspacesMoveRequest{ProjectID: proj.ID, WorkspaceIDs: ids, Now: s.now()}); err != nil {
			return result{}, err
		}
	}
	return noContent()
}

// projectTagBindings serves GET /projects/:project/tag-bindings and
// /effective-tag-bindings (the same bindings: projects inherit none).
func (s *Server) projectTagBindings(typ string) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
		proj, _, _, err := s.visibleProject(c, p.ByName("project"))
		if err != nil {
			return result{}, err
		}
		return ok(jsonapi.Many(tagBindingResources(proj, typ)))
	}
}

// projectAddTagBindings serves PATCH /projects/:project/tag-bindings: the
// keys sent are added, or take the value sent; other keys stay. The merge
// reads the current bindings and writes them all back, so two concurrent
// merges may lose one's keys (last writer wins), as with any update.
func (s *Server) projectAddTagBindings(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	proj, _, pa, err := s.visibleProject(c, p.ByName("project"))
	if err != nil {
		return result{}, err
	}
	if !pa.CanUpdate() {
		return result{}, forbidden("not allowed to update project %q", proj.ID)
	}
	doc, err := readDoc(r)
	if err != nil {
		return result{}, err
	}
	objs, check, err := doc.Objects(typeTagBindings)
	if err != nil {
		return result{}, err
	}
	added := readTagBindings(objs)
	if err := check(); err != nil {
		return result{}, err
	}
	tags := slices.Clone(proj.TagBindings)
	for _, tb := range added {
		if i := slices.IndexFunc(tags, func(x mgmt.TagBinding) bool { return x.Key == tb.Key }); i >= 0 {
			tags[i].Value = tb.Value
		} else {
			tags = append(tags, tb)
		}
	}
	if _, err := s.propose(w, r, store.ProjectUpdateRequestType, &store.ProjectUpdateRequest{
		ID: proj.ID, Attributes: mgmt.ProjectPatch{TagBindings: &tags}, Now: s.now()}); err != nil {
		return result{}, err
	}
	updated, _, _, err := s.visibleProject(c, proj.ID)
	if err != nil {
		return result{}, err
	}
	return ok(jsonapi.Many(tagBindingResources(updated, typeTagBindings)))
}
