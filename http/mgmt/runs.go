package mgmt

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// Runs and state versions of workspaces. Runs are records only: execution
// is a later issue, so a run is created pending and moves by the user
// actions of spec §3 (apply, discard, cancel; 409 when its status does not
// allow the action). The newest run is its workspace's current run. A
// state version is recorded on a workspace its creator has locked (409
// otherwise), and the newest sets the workspace's latest-change-at.
//
// Permissions come from the caller's access to the workspace's project:
// queueing a run needs runs plan, applying needs runs apply, discarding
// and cancelling need runs plan; reading state versions needs
// state-versions read-outputs, creating one needs state-versions write.
func (m *mgmtRouter) runRoutes() {
	s := m.s
	m.handle(http.MethodPost, "/runs", s.runCreate)
	m.handle(http.MethodGet, "/runs/:run", s.runRead)
	for _, action := range []string{mgmt.RunActionApply, mgmt.RunActionDiscard, mgmt.RunActionCancel} {
		m.handle(http.MethodPost, "/runs/:run/actions/"+action, s.runAction(action))
	}
	m.handle(http.MethodGet, "/workspaces/:workspace/runs", s.workspaceByID(s.runList))
	m.handle(http.MethodPost, "/workspaces/:workspace/state-versions", s.workspaceByID(s.stateVersionCreate))
	m.handle(http.MethodGet, "/workspaces/:workspace/state-versions", s.workspaceByID(s.stateVersionList))
	m.handle(http.MethodGet, "/workspaces/:workspace/current-state-version", s.workspaceByID(s.currentStateVersion))
	m.handle(http.MethodGet, "/state-versions", s.stateVersionSearch)
	m.handle(http.MethodGet, "/state-versions/:sv", s.stateVersionRead)
}

// runCreate serves POST /runs: the workspace is data.relationships.
// workspace; attributes message and is-destroy are optional. 201.
func (s *Server) runCreate(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *mgmtCall) (mgmtResult, error) {
	o, err := readResource(r, jsonapi.Expect{Type: typeRuns})
	if err != nil {
		return mgmtResult{}, err
	}
	wsID := o.RequiredToOne("workspace", typeWorkspaces)
	run := &mgmt.Run{ID: mgmt.NewID(mgmt.PrefixRun), CreatedBy: lockHolder(c), CreatedAt: s.now()}
	if msg := o.Attrs.NullableString("message"); msg != nil {
		run.Message = *msg
	}
	if d := o.Attrs.Bool("is-destroy"); d != nil {
		run.IsDestroy = *d
	}
	if err := o.Err(); err != nil {
		return mgmtResult{}, err
	}
	ws, err := s.visibleWorkspace(c, wsID)
	if err != nil {
		return mgmtResult{}, err
	}
	if !ws.pa.CanQueueRuns() {
		return mgmtResult{}, mgmtForbidden("not allowed to queue runs in workspace %q", wsID)
	}
	run.WorkspaceID = ws.w.ID
	resp, err := s.propose(w, r, store.RunCreateRequestType, &store.RunCreateRequest{Run: run})
	if err != nil {
		return mgmtResult{}, err
	}
	return mgmtCreated(jsonapi.One(runResource(resp.(*mgmt.Run))))
}

// visibleRun loads a run and its workspace, or a 404 when the caller
// cannot see the workspace.
func (s *Server) visibleRun(c *mgmtCall, id string) (*mgmt.Run, workspaceCtx, error) {
	run, err := s.store.RunByID(nil, id)
	if err != nil {
		return nil, workspaceCtx{}, err
	}
	if run == nil {
		return nil, workspaceCtx{}, mgmtNotFound("run", id)
	}
	ws, err := s.visibleWorkspace(c, run.WorkspaceID)
	if err != nil {
		return nil, workspaceCtx{}, mgmtNotFound("run", id)
	}
	return run, ws, nil
}

func (s *Server) runRead(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *mgmtCall) (mgmtResult, error) {
	run, _, err := s.visibleRun(c, p.ByName("run"))
	if err != nil {
		return mgmtResult{}, err
	}
	return mgmtOK(jsonapi.One(runResource(run)))
}

// runAction serves POST /runs/:id/actions/{apply,discard,cancel}: 202
// Accepted with no body, as TFE answers. The optional body (a comment) is
// ignored.
func (s *Server) runAction(action string) mgmtHandler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *mgmtCall) (mgmtResult, error) {
		run, ws, err := s.visibleRun(c, p.ByName("run"))
		if err != nil {
			return mgmtResult{}, err
		}
		allowed := ws.pa.CanQueueRuns()
		if action == mgmt.RunActionApply {
			allowed = ws.pa.CanApplyRuns()
		}
		if !allowed {
			return mgmtResult{}, mgmtForbidden("not allowed to %s runs in workspace %q", action, ws.w.ID)
		}
		if _, err := s.propose(w, r, store.RunActionRequestType, &store.RunActionRequest{ID: run.ID, Action: action, Now: s.now()}); err != nil {
			return mgmtResult{}, err
		}
		return mgmtResult{status: http.StatusAccepted}, nil
	}
}

// runList serves GET /workspaces/:id/runs, newest first.
func (s *Server) runList(w http.ResponseWriter, r *http.Request, c *mgmtCall, ws workspaceCtx) (mgmtResult, error) {
	page, err := pageOf(r)
	if err != nil {
		return mgmtResult{}, err
	}
	runs, err := s.store.RunsByWorkspace(nil, ws.w.ID)
	if err != nil {
		return mgmtResult{}, err
	}
	items := []*jsonapi.Resource{}
	for _, run := range pageSlice(runs, page) {
		items = append(items, runResource(run))
	}
	return mgmtOK(listDoc(r, items, page, len(runs)))
}

// stateVersionCreate serves POST /workspaces/:id/state-versions: serial
// (required), md5, lineage, and optionally the run that wrote it. The
// state itself (attribute state) is accepted and not kept: storing state
// files belongs to run execution.
func (s *Server) stateVersionCreate(w http.ResponseWriter, r *http.Request, c *mgmtCall, ws workspaceCtx) (mgmtResult, error) {
	if !ws.pa.CanWriteStateVersions() {
		return mgmtResult{}, mgmtForbidden("not allowed to create state versions in workspace %q", ws.w.ID)
	}
	o, err := readResource(r, jsonapi.Expect{Type: typeStateVersions})
	if err != nil {
		return mgmtResult{}, err
	}
	sv := &mgmt.StateVersion{ID: mgmt.NewID(mgmt.PrefixStateVersion), WorkspaceID: ws.w.ID,
		CreatedBy: lockHolder(c), CreatedAt: s.now()}
	if serial := o.Attrs.Int("serial"); serial != nil {
		sv.Serial = int64(*serial)
	} else if !o.Attrs.Has("serial") {
		o.Attrs.Fail("serial", "is required")
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"md5", &sv.MD5}, {"lineage", &sv.Lineage}} {
		if v := o.Attrs.NullableString(f.name); v != nil {
			*f.dst = *v
		}
	}
	_ = o.Attrs.NullableString("state") // type-checked, not kept
	if runID, sent := o.ToOne("run", typeRuns); sent {
		sv.RunID = runID
	}
	if err := o.Err(); err != nil {
		return mgmtResult{}, err
	}
	resp, err := s.propose(w, r, store.StateVersionCreateRequestType, &store.StateVersionCreateRequest{StateVersion: sv})
	if err != nil {
		return mgmtResult{}, err
	}
	return mgmtCreated(jsonapi.One(stateVersionResource(resp.(*mgmt.StateVersion))))
}

func (s *Server) stateVersionList(w http.ResponseWriter, r *http.Request, c *mgmtCall, ws workspaceCtx) (mgmtResult, error) {
	if !ws.pa.CanReadStateOutputs() {
		return mgmtResult{}, mgmtForbidden("not allowed to read the state versions of workspace %q", ws.w.ID)
	}
	page, err := pageOf(r)
	if err != nil {
		return mgmtResult{}, err
	}
	versions, err := s.store.StateVersionsByWorkspace(nil, ws.w.ID)
	if err != nil {
		return mgmtResult{}, err
	}
	items := []*jsonapi.Resource{}
	for _, sv := range pageSlice(versions, page) {
		items = append(items, stateVersionResource(sv))
	}
	return mgmtOK(listDoc(r, items, page, len(versions)))
}

// stateVersionSearch serves GET /state-versions?filter[workspace][name]=
// &filter[organization][name]=, TFE's way of listing a workspace's state
// versions; both filters are required.
func (s *Server) stateVersionSearch(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *mgmtCall) (mgmtResult, error) {
	q := r.URL.Query()
	org, name := q.Get("filter[organization][name]"), q.Get("filter[workspace][name]")
	if org == "" {
		return mgmtResult{}, jsonapi.ParameterError("filter[organization][name]", "is required")
	}
	if name == "" {
		return mgmtResult{}, jsonapi.ParameterError("filter[workspace][name]", "is required")
	}
	found, err := s.store.WorkspaceByName(nil, org, name)
	if err != nil {
		return mgmtResult{}, err
	}
	if found == nil {
		return mgmtResult{}, mgmtNotFound("workspace", org+"/"+name)
	}
	ws, err := s.visibleWorkspace(c, found.ID)
	if err != nil {
		return mgmtResult{}, err
	}
	return s.stateVersionList(w, r, c, ws)
}

func (s *Server) currentStateVersion(w http.ResponseWriter, r *http.Request, c *mgmtCall, ws workspaceCtx) (mgmtResult, error) {
	if !ws.pa.CanReadStateOutputs() {
		return mgmtResult{}, mgmtForbidden("not allowed to read the state versions of workspace %q", ws.w.ID)
	}
	if ws.w.LatestStateVersionID == "" {
		return mgmtResult{}, mgmtNotFound("current state version of workspace", ws.w.ID)
	}
	sv, err := s.store.StateVersionByID(nil, ws.w.LatestStateVersionID)
	if err != nil {
		return mgmtResult{}, err
	}
	if sv == nil {
		return mgmtResult{}, mgmtNotFound("state version", ws.w.LatestStateVersionID)
	}
	return mgmtOK(jsonapi.One(stateVersionResource(sv)))
}

func (s *Server) stateVersionRead(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *mgmtCall) (mgmtResult, error) {
	id := p.ByName("sv")
	sv, err := s.store.StateVersionByID(nil, id)
	if err != nil {
		return mgmtResult{}, err
	}
	if sv == nil {
		return mgmtResult{}, mgmtNotFound("state version", id)
	}
	ws, err := s.visibleWorkspace(c, sv.WorkspaceID)
	if err != nil || !ws.pa.CanReadStateOutputs() {
		return mgmtResult{}, mgmtNotFound("state version", id)
	}
	return mgmtOK(jsonapi.One(stateVersionResource(sv)))
}
