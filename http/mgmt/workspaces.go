package mgmt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// Workspaces, as their organization's members see them, with the lock
// actions. Every permission comes from the caller's access to the
// workspace's project (team-projects and organization-level permissions,
// state.ProjectAccess): a workspace whose project the caller cannot see
// is a 404; an action the caller may not take on a visible workspace is a
// 403. Creating needs create permission on the target project (the
// organization's Default Project when none is named); moving to another
// project through relationships.project needs move permission on both
// projects, as POST /projects/:id/relationships/workspaces does.
func (m *router) workspaceRoutes() {
	s := m.s
	newWorkspaces(s, s.workspaceNamed).mount(m, "/organizations/:org/workspaces", "/organizations/:org/workspaces/:name")
	newWorkspaces(s, s.workspaceWithID).mount(m, "", "/workspaces/:workspace")
	m.handle(http.MethodPost, "/workspaces/:workspace/actions/lock", s.workspaceByID(s.workspaceLock))
	m.handle(http.MethodPost, "/workspaces/:workspace/actions/unlock", s.workspaceByID(s.workspaceUnlock(false)))
	m.handle(http.MethodPost, "/workspaces/:workspace/actions/force-unlock", s.workspaceByID(s.workspaceUnlock(true)))
}

// workspaceCtx is a workspace the caller can see, with its authority and
// its access to the workspace's project.
type workspaceCtx struct {
	w  *mgmt.Workspace
	a  *mgmt.OrgAuthority
	pa mgmt.ProjectAccess
}

type workspaceHandler func(w http.ResponseWriter, r *http.Request, c *call, ws workspaceCtx) (result, error)

// visibleWorkspace loads workspace id, or a 404 when it does not exist or
// the caller cannot see it.
func (s *Server) visibleWorkspace(c *call, id string) (workspaceCtx, error) {
	w, a, pa, err := s.store.WorkspaceAuthority(nil, c.caller, id)
	if err != nil {
		return workspaceCtx{}, err
	}
	if w == nil || !pa.Visible {
		return workspaceCtx{}, notFound("workspace", id)
	}
	return workspaceCtx{w: w, a: a, pa: pa}, nil
}

// workspaceWithID finds the workspace a route names by ID.
func (s *Server) workspaceWithID(c *call, p httprouter.Params) (workspaceCtx, error) {
	return s.visibleWorkspace(c, p.ByName("workspace"))
}

// workspaceByID adapts h to routes that name the workspace by ID.
func (s *Server) workspaceByID(h workspaceHandler) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
		ws, err := s.workspaceWithID(c, p)
		if err != nil {
			return result{}, err
		}
		return h(w, r, c, ws)
	}
}

// workspaceNamed finds the workspace a route names by organization and
// name (compared case-insensitively).
func (s *Server) workspaceNamed(c *call, p httprouter.Params) (workspaceCtx, error) {
	org, name := p.ByName("org"), p.ByName("name")
	found, err := s.store.WorkspaceByName(nil, org, name)
	if err != nil {
		return workspaceCtx{}, err
	}
	if found == nil {
		return workspaceCtx{}, notFound("workspace", org+"/"+name)
	}
	return s.visibleWorkspace(c, found.ID)
}

// newWorkspaces is the workspace resource, with the workspace found by
// load. Creating needs create permission on the target project (the
// organization's Default Project when none is named: 404 when the caller
// cannot see it); an organization at its workspace limit refuses with
// 409. Changing settings needs the admin workspace role on its project; a
// request that only moves it to another project needs only move
// permission on both projects.
func newWorkspaces(s *Server, load func(*call, httprouter.Params) (workspaceCtx, error)) *resource[*mgmt.OrgAuthority, workspaceCtx, mgmt.WorkspacePatch] {
	return &resource[*mgmt.OrgAuthority, workspaceCtx, mgmt.WorkspacePatch]{
		s: s, typ: typeWorkspaces, prefix: mgmt.PrefixWorkspace, list: s.workspaceList,
		readOnly: []string{"locked", "lock-reason", "vcs-repo-identifier", "created-at", "updated-at", "latest-change-at", "permissions"},
		scope: func(c *call, p httprouter.Params) (*mgmt.OrgAuthority, error) {
			return s.orgAuthority(c, p.ByName("org"))
		},
		load: load,
		id:   func(ws workspaceCtx) string { return ws.w.ID },
		mayDelete: func(ws workspaceCtx) error {
			return forbiddenUnless(ws.pa.CanDeleteWorkspaces(), "not allowed to delete workspace %q", ws.w.ID)
		},
		decode: func(o *jsonapi.ResourceObject, _ *workspaceCtx) mgmt.WorkspacePatch { return readWorkspacePatch(o) },
		check:  func(p mgmt.WorkspacePatch, current *workspaceCtx) []error { return []error{p.Validate(current == nil)} },
		admitCreate: func(a *mgmt.OrgAuthority, p mgmt.WorkspacePatch) error {
			projectID := a.Organization.DefaultProjectID
			if p.ProjectID != nil {
				projectID = *p.ProjectID
			}
			pa, err := s.projectAccess(a, projectID)
			if err != nil {
				return err
			}
			if !pa.Visible {
				return notFound("project", projectID)
			}
			if !pa.CanCreateWorkspace() {
				return forbidden("not allowed to create workspaces in project %q", projectID)
			}
			return nil
		},
		admitUpdate: func(ws workspaceCtx, p mgmt.WorkspacePatch) error {
			moves := p.ProjectID != nil && *p.ProjectID != ws.w.ProjectID
			onlyMove := p.Name == nil && p.Description == nil && p.ToolVersion == nil && p.ExecutionMode == nil && p.AgentPoolID == nil &&
				p.AutoDestroyActivityDuration == nil && p.InheritsProjectAutoDestroy == nil &&
				p.VCSRepo == nil && !p.RemoveVCSRepo
			if !(moves && onlyMove) && !ws.pa.CanUpdateWorkspaces() {
				return forbidden("not allowed to update workspace %q", ws.w.ID)
			}
			if moves {
				return s.store.AuthorizeWorkspaceMove(nil, ws.a, *p.ProjectID, []string{ws.w.ID})
			}
			return nil
		},
		createCmd: func(a *mgmt.OrgAuthority, st stamp, p mgmt.WorkspacePatch) (store.MessageType, any) {
			return store.WorkspaceCreateRequestType, &store.WorkspaceCreateRequest{ID: st.id, OrganizationName: a.Organization.Name, CreatedAt: st.now, Attributes: p}
		},
		updateCmd: func(ws workspaceCtx, st stamp, p mgmt.WorkspacePatch) (store.MessageType, any) {
			return store.WorkspaceUpdateRequestType, &store.WorkspaceUpdateRequest{ID: ws.w.ID, Attributes: p, Now: st.now}
		},
		deleteCmd: func(ws workspaceCtx) (store.MessageType, any) {
			return store.WorkspaceDeleteRequestType, &store.WorkspaceDeleteRequest{ID: ws.w.ID}
		},
		show: func(_ *http.Request, ws workspaceCtx) (*jsonapi.Document, error) {
			return jsonapi.One(s.workspaceResource(ws.w, ws.pa)), nil
		},
		showCreated: func(a *mgmt.OrgAuthority, resp any) (*jsonapi.Document, error) {
			ws := resp.(*mgmt.Workspace)
			pa, err := s.projectAccess(a, ws.ProjectID)
			if err != nil {
				return nil, err
			}
			return jsonapi.One(s.workspaceResource(ws, pa)), nil
		},
		showUpdated: func(c *call, ws workspaceCtx, _ any) (*jsonapi.Document, error) { return s.workspaceDoc(c, ws.w.ID) },
	}
}

// projectAccess is the caller's access to project id: nothing when it
// does not exist.
func (s *Server) projectAccess(a *mgmt.OrgAuthority, id string) (mgmt.ProjectAccess, error) {
	proj, err := s.store.ProjectByID(nil, id)
	if err != nil || proj == nil {
		return mgmt.ProjectAccess{}, err
	}
	return s.store.ProjectAccessFor(nil, a, proj)
}

// workspaceList serves GET /organizations/:org/workspaces: the workspaces
// the caller can see, in creation order, with search[name] (or q: name
// contains, ignoring case) and filter[project][id].
func (s *Server) workspaceList(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	a, page, err := s.orgPage(c, p, r)
	if err != nil {
		return result{}, err
	}
	q := r.URL.Query()
	search := q.Get("search[name]")
	if search == "" {
		search = q.Get("q")
	}
	search = strings.ToLower(search)
	projectFilter := q.Get(paramProjectID)
	all, err := s.store.WorkspacesByOrganization(nil, a.Organization.Name)
	if err != nil {
		return result{}, err
	}
	access := map[string]mgmt.ProjectAccess{}
	var matching []workspaceCtx
	for _, ws := range all {
		if (projectFilter != "" && ws.ProjectID != projectFilter) || (search != "" && !strings.Contains(strings.ToLower(ws.Name), search)) {
			continue
		}
		pa, seen := access[ws.ProjectID]
		if !seen {
			if pa, err = s.projectAccess(a, ws.ProjectID); err != nil {
				return result{}, err
			}
			access[ws.ProjectID] = pa
		}
		if pa.Visible {
			matching = append(matching, workspaceCtx{w: ws, a: a, pa: pa})
		}
	}
	return pageDoc(r, page, matching, func(ws workspaceCtx) *jsonapi.Resource { return s.workspaceResource(ws.w, ws.pa) })
}

// readWorkspacePatch reads a workspace's writable attributes and its
// project relationship.
func readWorkspacePatch(o *jsonapi.ResourceObject) mgmt.WorkspacePatch {
	a := o.Attrs
	patch := mgmt.WorkspacePatch{
		Name:                        a.String("name"),
		Description:                 a.NullableString("description"),
		ToolVersion:                 a.NullableString("tool-version"),
		AutoDestroyActivityDuration: a.NullableString("auto-destroy-activity-duration"),
		InheritsProjectAutoDestroy:  a.Bool("inherits-project-auto-destroy"),
		ExecutionMode:               readExecutionMode(o, "execution-mode"),
		AgentPoolID:                 a.NullableString("agent-pool-id"),
	}
	if id, sent := o.ToOne("agent-pool", typeAgentPools); sent {
		patch.AgentPoolID = &id
	}
	if a.IsNull("vcs-repo") {
		patch.RemoveVCSRepo = true
	} else if repo := a.Object("vcs-repo"); repo != nil {
		patch.VCSRepo = &mgmt.WorkspaceVCSRepo{}
		for _, f := range []struct {
			name string
			dst  *string
		}{{"identifier", &patch.VCSRepo.Identifier}, {"branch", &patch.VCSRepo.Branch}, {"oauth-token-id", &patch.VCSRepo.OAuthTokenID}} {
			if v := repo.NullableString(f.name); v != nil {
				*f.dst = *v
			}
		}
	}
	if id, sent := o.ToOne("project", typeProjects); sent && id != "" {
		patch.ProjectID = &id
	}
	return patch
}

// workspaceDoc reads workspace id back. The caller may no longer see it
// (moved to a project it cannot see): then the answer is the workspace as
// of the write, without permissions.
func (s *Server) workspaceDoc(c *call, id string) (*jsonapi.Document, error) {
	ws, err := s.visibleWorkspace(c, id)
	if err != nil {
		w, rerr := s.store.WorkspaceByID(nil, id)
		if rerr != nil || w == nil {
			return nil, err
		}
		return jsonapi.One(s.workspaceResource(w, mgmt.ProjectAccess{})), nil
	}
	return jsonapi.One(s.workspaceResource(ws.w, ws.pa)), nil
}

// lockHolder is who a caller is as the holder of a workspace lock: the
// user, the team, the organization, or (for a management token) the
// token itself.
func lockHolder(c *call) string {
	switch c.caller.Kind {
	case mgmt.CallerUser:
		return c.caller.UserID
	case mgmt.CallerTeam:
		return c.caller.TeamID
	case mgmt.CallerOrganization:
		return c.caller.OrganizationName
	}
	return "token-" + c.token.AccessorID
}

// readLockReason reads the optional body of a lock request: TFE documents
// it as plain JSON, {"reason": "..."}; go-tfe sends it as a JSON:API
// document with the reason as an attribute. Both are accepted.
func readLockReason(r *http.Request) (string, error) {
	if err := jsonapi.CheckContentType(r); err != nil {
		return "", err
	}
	if r.Body == nil {
		return "", nil
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return "", jsonapi.NewError(http.StatusBadRequest, jsonapi.TitleBadRequest, fmt.Sprintf("read request body: %v", err))
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return "", nil
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil {
		return "", jsonapi.NewError(http.StatusBadRequest, jsonapi.TitleBadRequest, "malformed JSON: "+err.Error())
	}
	if _, isDoc := body["data"]; isDoc {
		doc, err := jsonapi.ParseRequest(raw)
		if err != nil {
			return "", err
		}
		o, err := doc.Resource(jsonapi.Expect{Type: typeWorkspaces, AllowEmptyType: true})
		if err != nil {
			return "", err
		}
		reason := o.Attrs.NullableString("reason")
		if err := o.Err(); err != nil || reason == nil {
			return "", err
		}
		return *reason, nil
	}
	var reason string
	if v, ok := body["reason"]; ok && string(bytes.TrimSpace(v)) != "null" {
		if json.Unmarshal(v, &reason) != nil {
			return "", jsonapi.Invalid([]*jsonapi.Error{jsonapi.PointerError("/reason", "must be a string")})
		}
	}
	return reason, nil
}

// workspaceLock serves POST /workspaces/:id/actions/lock: 200 with the
// workspace; 409 when it is already locked.
func (s *Server) workspaceLock(w http.ResponseWriter, r *http.Request, c *call, ws workspaceCtx) (result, error) {
	if !ws.pa.CanLockWorkspaces() {
		return result{}, forbidden("not allowed to lock workspace %q", ws.w.ID)
	}
	reason, err := readLockReason(r)
	if err != nil {
		return result{}, err
	}
	if _, err := s.propose(w, r, store.WorkspaceLockRequestType, &store.WorkspaceLockRequest{
		ID: ws.w.ID, LockedBy: lockHolder(c), Reason: reason, Now: s.now()}); err != nil {
		return result{}, err
	}
	return answer(http.StatusOK)(s.workspaceDoc(c, ws.w.ID))
}

// workspaceUnlock serves unlock (by whoever holds the lock, with lock
// permission) and force-unlock (any holder, with the admin workspace
// role). Unlocking an unlocked workspace, or one locked by someone else
// without force, is a 409.
func (s *Server) workspaceUnlock(force bool) workspaceHandler {
	return func(w http.ResponseWriter, r *http.Request, c *call, ws workspaceCtx) (result, error) {
		allowed := ws.pa.CanLockWorkspaces()
		if force {
			allowed = ws.pa.CanUpdateWorkspaces()
		}
		if !allowed {
			return result{}, forbidden("not allowed to unlock workspace %q", ws.w.ID)
		}
		if _, err := s.propose(w, r, store.WorkspaceUnlockRequestType, &store.WorkspaceUnlockRequest{
			ID: ws.w.ID, By: lockHolder(c), Force: force, Now: s.now()}); err != nil {
			return result{}, err
		}
		return answer(http.StatusOK)(s.workspaceDoc(c, ws.w.ID))
	}
}
