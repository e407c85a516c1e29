package store

import (
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
	"slices"
	"time"
)

func applyRunCreate(t *writeTxn, req *RunCreateRequest) (any, error) {
	in := req.Run
	if in == nil {
		return nil, state.Invalidf("/data", "missing run")
	}
	v := &state.ValidationError{}
	mgmt.CheckID(v, "ID", mgmt.PrefixRun, in.ID)
	mgmt.CheckMax(v, mgmt.AttrPointer("message"), in.Message, mgmt.RunMessageMaxLen)
	mgmt.CheckRunVariables(v, in.Variables)
	if err := v.Err(); err != nil {
		return nil, err
	}
	w, err := requireWorkspace(t, in.WorkspaceID)
	if err != nil {
		return nil, err
	}
	if err := requireNewID(t, TableRuns, in.ID); err != nil {
		return nil, err
	}
	if cvID := in.ConfigurationVersionID; cvID != "" {
		cv, err := mustGetRow[mgmt.ConfigurationVersion](t, TableConfigurationVersions, "configuration version", cvID)
		if err != nil {
			return nil, err
		}
		if cv.WorkspaceID != w.ID {
			return nil, state.Invalidf(mgmt.RelPointer("configuration-version"), "configuration version %q is not of workspace %q", cvID, w.ID)
		}
	}
	created := mgmt.Time(in.CreatedAt)
	r := &mgmt.Run{ID: in.ID, WorkspaceID: w.ID, OrganizationName: w.OrganizationName, Status: mgmt.RunPending,
		Message: in.Message, IsDestroy: in.IsDestroy, CreatedBy: in.CreatedBy, CreatedAt: created,
		StatusTimestamps: map[string]time.Time{mgmt.RunPending: created},
		RunExecution: mgmt.RunExecution{ConfigurationVersionID: in.ConfigurationVersionID,
			AutoApply: in.AutoApply, PlanOnly: in.PlanOnly, NoRefresh: in.NoRefresh, Variables: in.Variables}}
	stampNew(t, &r.CreateIndex, &r.ModifyIndex)
	if err := t.insert(TableRuns, r); err != nil {
		return nil, err
	}
	c := w.Copy()
	c.CurrentRunID = r.ID
	c.ModifyIndex = t.index
	return r, t.insert(TableWorkspaces, c)
}

func requireRun(t *writeTxn, id string) (*mgmt.Run, error) {
	return mustGetRow[mgmt.Run](t, TableRuns, "run", id)
}

// setRunStatus writes r in status at now.
func setRunStatus(t *writeTxn, r *mgmt.Run, status string, now time.Time) (*mgmt.Run, error) {
	c := r.Copy()
	c.Status = status
	c.StatusTimestamps[status] = mgmt.Time(now)
	c.ModifyIndex = t.index
	return c, t.insert(TableRuns, c)
}

func applyRunAction(t *writeTxn, req *RunActionRequest) (any, error) {
	r, err := requireRun(t, req.ID)
	if err != nil {
		return nil, err
	}
	if _, known := mgmt.RunActions[req.Action]; !known {
		return nil, state.Invalidf("Action", "%q is not one of apply, discard, cancel, force-cancel", req.Action)
	}
	to, ok := mgmt.RunActionTarget(r.Status, req.Action)
	if !ok {
		return nil, state.Conflictf("run %q is %s: %s is not allowed in that status", r.ID, r.Status, req.Action)
	}
	c := r.Copy()
	c.Status = to
	c.StatusTimestamps[to] = mgmt.Time(req.Now)
	c.ModifyIndex = t.index
	// A canceled or discarded run ends its phases and releases the
	// workspace (run_exec.go); the executor then stops its job.
	if err := endRun(t, c, req.Now); err != nil {
		return nil, err
	}
	return c, t.insert(TableRuns, c)
}

func applyRunAdvance(t *writeTxn, req *RunAdvanceRequest) (any, error) {
	r, err := requireRun(t, req.ID)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(mgmt.RunStatuses(), req.Status) {
		return nil, state.Invalidf("Status", "%q is not a run status", req.Status)
	}
	if !mgmt.RunCanAdvance(r.Status, req.Status) {
		return nil, state.Conflictf("run %q cannot go from %s to %s", r.ID, r.Status, req.Status)
	}
	return setRunStatus(t, r, req.Status, req.Now)
}

func applyStateVersionCreate(t *writeTxn, req *StateVersionCreateRequest) (any, error) {
	in := req.StateVersion
	if in == nil {
		return nil, state.Invalidf("/data", "missing state version")
	}
	if err := req.Check(); err != nil {
		return nil, err
	}
	v := &state.ValidationError{}
	mgmt.CheckID(v, "ID", mgmt.PrefixStateVersion, in.ID)
	if in.Serial < 0 {
		v.Add(mgmt.AttrPointer("serial"), "must not be negative, got %d", in.Serial)
	}
	if in.Status != "" && in.Status != mgmt.StateVersionPending && in.Status != mgmt.StateVersionFinalized {
		v.Add("Status", "%q is not pending or finalized", in.Status)
	}
	if in.Status == mgmt.StateVersionPending && req.State != nil {
		v.Add("Status", "a pending state version carries no state")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	w, err := requireWorkspace(t, in.WorkspaceID)
	if err != nil {
		return nil, err
	}
	if !w.Locked {
		return nil, state.Conflictf("workspace %q must be locked to create a state version", w.ID)
	}
	if in.CreatedBy != "" && w.LockedBy != in.CreatedBy && (in.RunID == "" || w.LockedBy != in.RunID) {
		return nil, state.Conflictf("workspace %q is locked by %s, not by %s", w.ID, w.LockedBy, in.CreatedBy)
	}
	if err := requireNewID(t, TableStateVersions, in.ID); err != nil {
		return nil, err
	}
	sv := &mgmt.StateVersion{ID: in.ID, WorkspaceID: w.ID, OrganizationName: w.OrganizationName, Serial: in.Serial,
		Lineage: in.Lineage, MD5: in.MD5, RunID: in.RunID, CreatedBy: in.CreatedBy, CreatedAt: mgmt.Time(in.CreatedAt),
		Status: in.Status, TerraformVersion: in.TerraformVersion, Force: in.Force, UploadSecret: in.UploadSecret}
	if sv.IsFinalized() {
		if err := checkSuccession(t, w, sv); err != nil {
			return nil, err
		}
	}
	stampNew(t, &sv.CreateIndex, &sv.ModifyIndex)
	if err := storeStateBytes(t, sv, req.State, req.JSONState, req.Outputs); err != nil {
		return nil, err
	}
	if err := t.insert(TableStateVersions, sv); err != nil {
		return nil, err
	}
	return sv, makeCurrent(t, w, sv)
}

// checkPolicySet checks what needs the store: a unique name and an existing
// policy version.
func checkPolicySet(t *writeTxn, s *mgmt.PolicySet) error {
	taken, err := nameTaken(t, TablePolicySets, s.OrganizationName, s.Name, func(x *mgmt.PolicySet) string { return x.ID }, s.ID)
	if err != nil {
		return err
	}
	if taken {
		return state.Invalidf(mgmt.AttrPointer("name"), "has already been taken in organization %q", s.OrganizationName)
	}
	if s.PolicyToolVersion != "" {
		pv, err := toolVersionByVersion(nil, t.Txn, mgmt.VersionFamilyPolicy, s.PolicyToolVersion)
		if err != nil {
			return err
		}
		if pv == nil {
			return state.Invalidf(mgmt.AttrPointer("policy-tool-version"), "policy version %q does not exist", s.PolicyToolVersion)
		}
	}
	return nil
}

func applyPolicySetCreate(t *writeTxn, req *PolicySetCreateRequest) (any, error) {
	org, err := requireOrganization(t, req.OrganizationName)
	if err != nil {
		return nil, err
	}
	v := &state.ValidationError{}
	mgmt.CheckID(v, "ID", mgmt.PrefixPolicySet, req.ID)
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := req.Attributes.Validate(true); err != nil {
		return nil, err
	}
	if err := requireNewID(t, TablePolicySets, req.ID); err != nil {
		return nil, err
	}
	created := mgmt.Time(req.CreatedAt)
	s := &mgmt.PolicySet{ID: req.ID, OrganizationName: org.Name, CreatedAt: created, UpdatedAt: created}
	req.Attributes.Apply(s)
	if err := checkPolicySet(t, s); err != nil {
		return nil, err
	}
	stampNew(t, &s.CreateIndex, &s.ModifyIndex)
	return s, t.insert(TablePolicySets, s)
}

func requirePolicySet(t *writeTxn, id string) (*mgmt.PolicySet, error) {
	return mustGetRow[mgmt.PolicySet](t, TablePolicySets, "policy set", id)
}

func applyPolicySetUpdate(t *writeTxn, req *PolicySetUpdateRequest) (any, error) {
	old, err := requirePolicySet(t, req.ID)
	if err != nil {
		return nil, err
	}
	if err := req.Attributes.Validate(false); err != nil {
		return nil, err
	}
	s := *old
	req.Attributes.Apply(&s)
	if err := checkPolicySet(t, &s); err != nil {
		return nil, err
	}
	s.UpdatedAt = mgmt.Time(req.Now)
	s.ModifyIndex = t.index
	return &s, t.insert(TablePolicySets, &s)
}

func applyPolicySetDelete(t *writeTxn, req *PolicySetDeleteRequest) (any, error) {
	s, err := requirePolicySet(t, req.ID)
	if err != nil {
		return nil, err
	}
	return nil, t.delete(TablePolicySets, s)
}
