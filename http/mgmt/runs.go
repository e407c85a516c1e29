package mgmt

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state"
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
func (m *router) runRoutes() {
	s := terraformAPI{m.s}
	m.handle(http.MethodPost, "/runs", s.runCreate)
	newRuns(s).mount(m, "", "/runs/:run")
	for _, action := range []string{mgmt.RunActionApply, mgmt.RunActionDiscard, mgmt.RunActionCancel, mgmt.RunActionForceCancel} {
		m.handle(http.MethodPost, "/runs/:run/actions/"+action, s.runAction(action))
	}
	m.runExecRoutes() // run_exec.go
	m.handle(http.MethodGet, "/workspaces/:workspace/runs", s.workspaceByID(s.runList))
	m.handle(http.MethodGet, "/workspaces/:workspace/state-versions", s.workspaceByID(s.stateVersionList))
	m.handle(http.MethodGet, "/workspaces/:workspace/current-state-version", s.workspaceByID(s.currentStateVersion))
	m.handle(http.MethodGet, "/state-versions", s.stateVersionSearch)
	newStateVersions(s).mount(m, "", "/state-versions/:sv")
	m.stateVersionRoutes() // state_versions.go
}

// newRuns is the run resource's read: a run of a workspace the caller
// can see (404 otherwise). Runs are created and moved by runCreate and
// runAction.
func newRuns(s terraformAPI) *resource[struct{}, *mgmt.Run, struct{}] {
	return &resource[struct{}, *mgmt.Run, struct{}]{
		s: s.Server,
		load: func(c *call, p httprouter.Params) (*mgmt.Run, error) {
			run, _, err := s.visibleRun(c, p.ByName("run"))
			return run, err
		},
		show: func(_ *http.Request, run *mgmt.Run) (*jsonapi.Document, error) {
			return jsonapi.One(runResource(run)), nil
		},
	}
}

// newStateVersions is the state version resource's read: a state version
// of a workspace whose state outputs the caller may read (404 otherwise).
func newStateVersions(s terraformAPI) *resource[struct{}, svCtx, struct{}] {
	return &resource[struct{}, svCtx, struct{}]{
		s: s.Server,
		load: func(c *call, p httprouter.Params) (svCtx, error) {
			sv, ws, err := s.visibleStateVersion(c, p.ByName("sv"))
			return svCtx{sv: sv, pa: ws.pa}, err
		},
		show: func(r *http.Request, v svCtx) (*jsonapi.Document, error) {
			return s.stateVersionDoc(r, v.sv, v.pa)
		},
	}
}

// svCtx is a state version with the caller's access to its workspace.
type svCtx struct {
	sv *mgmt.StateVersion
	pa mgmt.ProjectAccess
}

// runCreate serves POST /runs: the workspace is data.relationships.
// workspace; the configuration version data.relationships.configuration-
// version (default: the workspace's newest); attributes message,
// is-destroy, auto-apply (default: the workspace's), plan-only and
// refresh are optional. A workspace in local execution mode runs nothing
// here (409). 201.
func (s terraformAPI) runCreate(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *call) (result, error) {
	o, err := readResource(r, jsonapi.Expect{Type: typeRuns})
	if err != nil {
		return result{}, err
	}
	wsID := o.RequiredToOne("workspace", typeWorkspaces)
	run := &mgmt.Run{ID: s.newID(mgmt.PrefixRun), CreatedBy: lockHolder(c), CreatedAt: s.now()}
	if msg := o.Attrs.NullableString("message"); msg != nil {
		run.Message = *msg
	}
	if d := o.Attrs.Bool("is-destroy"); d != nil {
		run.IsDestroy = *d
	}
	autoApply := o.Attrs.Bool("auto-apply")
	if po := o.Attrs.Bool("plan-only"); po != nil {
		run.PlanOnly = *po
	}
	if rf := o.Attrs.Bool("refresh"); rf != nil {
		run.NoRefresh = !*rf
	}
	cvID, cvSent := o.ToOne("configuration-version", typeConfigurationVersions)
	if vars, sent := o.Attrs.Objects("variables"); sent {
		for _, v := range vars {
			run.Variables = append(run.Variables, mgmt.RunVariable{Key: deref(v.String("key")), Value: deref(v.String("value"))})
		}
	}
	ve := &state.ValidationError{}
	mgmt.CheckRunVariables(ve, run.Variables)
	if err := firstErr(o.Err(), ve.Err()); err != nil {
		return result{}, err
	}
	ws, err := s.visibleWorkspace(c, wsID)
	if err != nil {
		return result{}, err
	}
	if !ws.pa.CanQueueRuns() {
		return result{}, forbidden("not allowed to queue runs in workspace %q", wsID)
	}
	if autoApply != nil {
		run.AutoApply = *autoApply
	}
	if run.AutoApply && !run.PlanOnly && !ws.pa.CanApplyRuns() {
		return result{}, forbidden("not allowed to apply runs in workspace %q: queue the run without auto-apply", wsID)
	}
	if s.executionMode(ws.w) == mgmt.ExecutionModeLocal {
		return result{}, jsonapi.NewError(http.StatusConflict, jsonapi.TitleConflict,
			fmt.Sprintf("workspace %q uses local execution: its runs execute where terraform runs, not here", ws.w.ID))
	}
	if cvSent {
		run.ConfigurationVersionID = cvID
	} else if cvs, err := s.store.ConfigurationVersionsByWorkspace(nil, ws.w.ID); err != nil {
		return result{}, err
	} else if len(cvs) > 0 {
		run.ConfigurationVersionID = cvs[0].ID
	}
	// A speculative configuration (`terraform plan` in remote execution)
	// makes a plan-only run, as in TFE: it ends after its plan and holds
	// no place in the workspace's queue.
	if cv, err := s.store.ConfigurationVersionByID(nil, run.ConfigurationVersionID); err != nil {
		return result{}, err
	} else if cv != nil && cv.Speculative {
		run.PlanOnly = true
	}
	// A workspace locked by one of its runs (an apply in progress) still
	// queues runs, as TFE's does.
	if ws.w.Locked && ws.w.LockedBy != run.CreatedBy && !strings.HasPrefix(ws.w.LockedBy, mgmt.PrefixRun) {
		return result{}, jsonapi.NewError(http.StatusConflict, jsonapi.TitleConflict,
			fmt.Sprintf("workspace %q is locked by %s: unlock it before queueing a run", ws.w.ID, ws.w.LockedBy))
	}
	run.WorkspaceID = ws.w.ID
	resp, err := s.propose(w, r, store.RunCreateRequestType, &store.RunCreateRequest{Run: run})
	if err != nil {
		return result{}, err
	}
	return created(jsonapi.One(runResource(resp.(*mgmt.Run))))
}

// visibleRun loads a run and its workspace, or a 404 when the caller
// cannot see the workspace.
func (s terraformAPI) visibleRun(c *call, id string) (*mgmt.Run, workspaceCtx, error) {
	run, err := s.store.RunByID(nil, id)
	if err != nil {
		return nil, workspaceCtx{}, err
	}
	if run == nil {
		return nil, workspaceCtx{}, notFound("run", id)
	}
	ws, err := s.visibleWorkspace(c, run.WorkspaceID)
	if err != nil {
		return nil, workspaceCtx{}, notFound("run", id)
	}
	return run, ws, nil
}

// runAction serves POST /runs/:id/actions/{apply,discard,cancel}: 202
// Accepted with no body, as TFE answers. The optional body (a comment) is
// ignored.
func (s terraformAPI) runAction(action string) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
		run, ws, err := s.visibleRun(c, p.ByName("run"))
		if err != nil {
			return result{}, err
		}
		allowed := ws.pa.CanQueueRuns()
		if action == mgmt.RunActionApply || (action == mgmt.RunActionForceCancel && run.Status == mgmt.RunApplying) {
			allowed = ws.pa.CanApplyRuns()
		}
		if !allowed {
			return result{}, forbidden("not allowed to %s runs in workspace %q", action, ws.w.ID)
		}
		if _, err := s.propose(w, r, store.RunActionRequestType, &store.RunActionRequest{ID: run.ID, Action: action, Now: s.now()}); err != nil {
			return result{}, err
		}
		return result{status: http.StatusAccepted}, nil
	}
}

// runList serves GET /workspaces/:id/runs, newest first.
func (s terraformAPI) runList(w http.ResponseWriter, r *http.Request, c *call, ws workspaceCtx) (result, error) {
	page, err := pageOf(r)
	if err != nil {
		return result{}, err
	}
	runs, err := s.store.RunsByWorkspace(nil, ws.w.ID)
	if err != nil {
		return result{}, err
	}
	return pageDoc(r, page, runs, runResource)
}

func (s terraformAPI) stateVersionList(w http.ResponseWriter, r *http.Request, c *call, ws workspaceCtx) (result, error) {
	if !ws.pa.CanReadStateOutputs() {
		return result{}, forbidden("not allowed to read the state versions of workspace %q", ws.w.ID)
	}
	page, err := pageOf(r)
	if err != nil {
		return result{}, err
	}
	versions, err := s.store.StateVersionsByWorkspace(nil, ws.w.ID)
	if err != nil {
		return result{}, err
	}
	return pageDoc(r, page, versions, func(sv *mgmt.StateVersion) *jsonapi.Resource {
		return s.stateVersionResource(r, sv, ws.pa.CanWriteStateVersions())
	})
}

// stateVersionSearch serves GET /state-versions?filter[workspace][name]=
// &filter[organization][name]=, TFE's way of listing a workspace's state
// versions; both filters are required.
func (s terraformAPI) stateVersionSearch(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *call) (result, error) {
	q := r.URL.Query()
	org, name := q.Get("filter[organization][name]"), q.Get("filter[workspace][name]")
	if org == "" {
		return result{}, jsonapi.ParameterError("filter[organization][name]", "is required")
	}
	if name == "" {
		return result{}, jsonapi.ParameterError("filter[workspace][name]", "is required")
	}
	found, err := s.store.WorkspaceByName(nil, org, name)
	if err != nil {
		return result{}, err
	}
	if found == nil {
		return result{}, notFound("workspace", org+"/"+name)
	}
	ws, err := s.visibleWorkspace(c, found.ID)
	if err != nil {
		return result{}, err
	}
	return s.stateVersionList(w, r, c, ws)
}

func (s terraformAPI) currentStateVersion(w http.ResponseWriter, r *http.Request, c *call, ws workspaceCtx) (result, error) {
	if !ws.pa.CanReadStateOutputs() {
		return result{}, forbidden("not allowed to read the state versions of workspace %q", ws.w.ID)
	}
	if ws.w.LatestStateVersionID == "" {
		return result{}, notFound("current state version of workspace", ws.w.ID)
	}
	sv, err := s.store.StateVersionByID(nil, ws.w.LatestStateVersionID)
	if err != nil {
		return result{}, err
	}
	if sv == nil {
		return result{}, notFound("state version", ws.w.LatestStateVersionID)
	}
	return answer(http.StatusOK)(s.stateVersionDoc(r, sv, ws.pa))
}
