package state

import (
	"slices"
	"time"
)

// Run lifecycle. The user actions (spec §3's apply, discard, cancel) and
// the executor's steps are tables, so a new transition is one entry.
//
//   - apply confirms a run that waits for confirmation: planned, cost
//     estimated, policy checked or overridden → confirmed;
//   - discard skips a run that waits for confirmation or for its turn:
//     pending, planned, cost_estimated, policy_checked, policy_override,
//     policy_soft_failed → discarded;
//   - cancel interrupts a run that is queued or working: plan_queued,
//     planning, cost_estimating, policy_checking, confirmed, apply_queued,
//     applying → canceled.
var runActions = map[string]struct {
	from []string
	to   string
}{
	RunActionApply: {
		from: []string{RunPlanned, RunCostEstimated, RunPolicyChecked, RunPolicyOverride},
		to:   RunConfirmed,
	},
	RunActionDiscard: {
		from: []string{RunPending, RunPlanned, RunCostEstimated, RunPolicyChecked, RunPolicyOverride, RunPolicySoftFailed},
		to:   RunDiscarded,
	},
	RunActionCancel: {
		from: []string{RunPlanQueued, RunPlanning, RunCostEstimating, RunPolicyChecking, RunConfirmed, RunApplyQueued, RunApplying},
		to:   RunCanceled,
	},
}

// runSteps are the executor's transitions: from a status, the statuses a
// run may move to next. Final statuses (applied, discarded, errored,
// canceled, planned_and_finished) have none.
var runSteps = map[string][]string{
	RunPending:          {RunPlanQueued, RunPlanning, RunErrored},
	RunPlanQueued:       {RunPlanning, RunErrored},
	RunPlanning:         {RunPlanned, RunPlannedAndFinished, RunCostEstimating, RunPolicyChecking, RunErrored},
	RunPlanned:          {RunCostEstimating, RunPolicyChecking, RunConfirmed, RunApplyQueued, RunPlannedAndFinished},
	RunCostEstimating:   {RunCostEstimated, RunErrored},
	RunCostEstimated:    {RunPolicyChecking, RunConfirmed, RunApplyQueued, RunPlannedAndFinished},
	RunPolicyChecking:   {RunPolicyChecked, RunPolicySoftFailed, RunErrored},
	RunPolicySoftFailed: {RunPolicyOverride},
	RunPolicyChecked:    {RunConfirmed, RunApplyQueued, RunPlannedAndFinished},
	RunPolicyOverride:   {RunConfirmed, RunApplyQueued},
	RunConfirmed:        {RunApplyQueued, RunApplying},
	RunApplyQueued:      {RunApplying, RunErrored},
	RunApplying:         {RunApplied, RunErrored},
}

// RunActionTarget returns the status a run in status goes to on action,
// and false when the action is unknown or the status does not allow it.
func RunActionTarget(status, action string) (string, bool) {
	a, ok := runActions[action]
	if !ok || !slices.Contains(a.from, status) {
		return "", false
	}
	return a.to, true
}

// RunCanAdvance reports whether the executor may move a run from one
// status to another.
func RunCanAdvance(from, to string) bool { return slices.Contains(runSteps[from], to) }

// RunIsFinal reports whether status ends a run.
func RunIsFinal(status string) bool {
	_, acts := runSteps[status]
	return !acts && slices.Contains(RunStatuses(), status)
}

func applyRunCreate(t *writeTxn, req *RunCreateRequest) (any, error) {
	in := req.Run
	if in == nil {
		return nil, Invalidf("/data", "missing run")
	}
	v := &ValidationError{}
	checkID(v, "ID", PrefixRun, in.ID)
	checkMax(v, AttrPointer("message"), in.Message, RunMessageMaxLen)
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
	created := MgmtTime(in.CreatedAt)
	r := &Run{ID: in.ID, WorkspaceID: w.ID, OrganizationName: w.OrganizationName, Status: RunPending,
		Message: in.Message, IsDestroy: in.IsDestroy, CreatedBy: in.CreatedBy, CreatedAt: created,
		StatusTimestamps: map[string]time.Time{RunPending: created}}
	stampNew(t, &r.CreateIndex, &r.ModifyIndex)
	if err := t.insert(TableRuns, r); err != nil {
		return nil, err
	}
	c := w.Copy()
	c.CurrentRunID = r.ID
	c.ModifyIndex = t.index
	return r, t.insert(TableWorkspaces, c)
}

func requireRun(t *writeTxn, id string) (*Run, error) {
	return mustGetRow[Run](t, TableRuns, "run", id)
}

// setRunStatus writes r in status at now.
func setRunStatus(t *writeTxn, r *Run, status string, now time.Time) (*Run, error) {
	c := r.Copy()
	c.Status = status
	c.StatusTimestamps[status] = MgmtTime(now)
	c.ModifyIndex = t.index
	return c, t.insert(TableRuns, c)
}

func applyRunAction(t *writeTxn, req *RunActionRequest) (any, error) {
	r, err := requireRun(t, req.ID)
	if err != nil {
		return nil, err
	}
	if _, known := runActions[req.Action]; !known {
		return nil, Invalidf("Action", "%q is not one of apply, discard, cancel", req.Action)
	}
	to, ok := RunActionTarget(r.Status, req.Action)
	if !ok {
		return nil, Conflictf("run %q is %s: %s is not allowed in that status", r.ID, r.Status, req.Action)
	}
	return setRunStatus(t, r, to, req.Now)
}

func applyRunAdvance(t *writeTxn, req *RunAdvanceRequest) (any, error) {
	r, err := requireRun(t, req.ID)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(RunStatuses(), req.Status) {
		return nil, Invalidf("Status", "%q is not a run status", req.Status)
	}
	if !RunCanAdvance(r.Status, req.Status) {
		return nil, Conflictf("run %q cannot go from %s to %s", r.ID, r.Status, req.Status)
	}
	return setRunStatus(t, r, req.Status, req.Now)
}

func applyStateVersionCreate(t *writeTxn, req *StateVersionCreateRequest) (any, error) {
	in := req.StateVersion
	if in == nil {
		return nil, Invalidf("/data", "missing state version")
	}
	v := &ValidationError{}
	checkID(v, "ID", PrefixStateVersion, in.ID)
	if in.Serial < 0 {
		v.Add(AttrPointer("serial"), "must not be negative, got %d", in.Serial)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	w, err := requireWorkspace(t, in.WorkspaceID)
	if err != nil {
		return nil, err
	}
	if !w.Locked {
		return nil, Conflictf("workspace %q must be locked to create a state version", w.ID)
	}
	if in.CreatedBy != "" && w.LockedBy != in.CreatedBy && (in.RunID == "" || w.LockedBy != in.RunID) {
		return nil, Conflictf("workspace %q is locked by %s, not by %s", w.ID, w.LockedBy, in.CreatedBy)
	}
	if err := requireNewID(t, TableStateVersions, in.ID); err != nil {
		return nil, err
	}
	sv := &StateVersion{ID: in.ID, WorkspaceID: w.ID, OrganizationName: w.OrganizationName, Serial: in.Serial,
		Lineage: in.Lineage, MD5: in.MD5, RunID: in.RunID, CreatedBy: in.CreatedBy, CreatedAt: MgmtTime(in.CreatedAt)}
	stampNew(t, &sv.CreateIndex, &sv.ModifyIndex)
	if err := t.insert(TableStateVersions, sv); err != nil {
		return nil, err
	}
	if w.LatestStateVersionID == "" || !sv.CreatedAt.Before(w.LatestChangeAt) {
		c := w.Copy()
		c.LatestStateVersionID, c.LatestChangeAt = sv.ID, sv.CreatedAt
		c.ModifyIndex = t.index
		if err := t.insert(TableWorkspaces, c); err != nil {
			return nil, err
		}
	}
	return sv, nil
}

// PolicySetPatch carries a policy set's writable attributes; nil keeps the
// current value.
type PolicySetPatch struct {
	Name        *string
	Description *string
	Kind        *string
	Overridable *bool
	Global      *bool
	// PolicyToolVersion names an existing policy version; "" means the
	// default.
	PolicyToolVersion *string
}

// Validate checks the patch; create requires a name.
func (p *PolicySetPatch) Validate(create bool) error {
	v := &ValidationError{}
	switch {
	case p.Name != nil:
		if msg := validSlug(*p.Name, WorkspaceNameMaxLen); msg != "" {
			v.Add(AttrPointer("name"), "%s", msg)
		}
	case create:
		v.Add(AttrPointer("name"), "is required")
	}
	if p.Description != nil {
		checkMax(v, AttrPointer("description"), *p.Description, WorkspaceDescMax)
	}
	if p.PolicyToolVersion != nil && *p.PolicyToolVersion != "" {
		if msg := ValidVersion(*p.PolicyToolVersion); msg != "" {
			v.Add(AttrPointer("policy-tool-version"), "%s", msg)
		}
	}
	return v.Err()
}

func (p *PolicySetPatch) apply(s *PolicySet) {
	for _, f := range []struct{ dst, src *string }{
		{&s.Name, p.Name}, {&s.Description, p.Description}, {&s.Kind, p.Kind}, {&s.PolicyToolVersion, p.PolicyToolVersion},
	} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	if p.Overridable != nil {
		s.Overridable = *p.Overridable
	}
	if p.Global != nil {
		s.Global = *p.Global
	}
}

// checkPolicySet checks what needs the store: a unique name and an existing
// policy version.
func checkPolicySet(t *writeTxn, s *PolicySet) error {
	taken, err := nameTaken(t, TablePolicySets, s.OrganizationName, s.Name, func(x *PolicySet) string { return x.ID }, s.ID)
	if err != nil {
		return err
	}
	if taken {
		return Invalidf(AttrPointer("name"), "has already been taken in organization %q", s.OrganizationName)
	}
	if s.PolicyToolVersion != "" {
		pv, err := toolVersionByVersion(nil, t.Txn, VersionFamilyPolicy, s.PolicyToolVersion)
		if err != nil {
			return err
		}
		if pv == nil {
			return Invalidf(AttrPointer("policy-tool-version"), "policy version %q does not exist", s.PolicyToolVersion)
		}
	}
	return nil
}

func applyPolicySetCreate(t *writeTxn, req *PolicySetCreateRequest) (any, error) {
	org, err := requireOrganization(t, req.OrganizationName)
	if err != nil {
		return nil, err
	}
	v := &ValidationError{}
	checkID(v, "ID", PrefixPolicySet, req.ID)
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := req.Attributes.Validate(true); err != nil {
		return nil, err
	}
	if err := requireNewID(t, TablePolicySets, req.ID); err != nil {
		return nil, err
	}
	created := MgmtTime(req.CreatedAt)
	s := &PolicySet{ID: req.ID, OrganizationName: org.Name, CreatedAt: created, UpdatedAt: created}
	req.Attributes.apply(s)
	if err := checkPolicySet(t, s); err != nil {
		return nil, err
	}
	stampNew(t, &s.CreateIndex, &s.ModifyIndex)
	return s, t.insert(TablePolicySets, s)
}

func requirePolicySet(t *writeTxn, id string) (*PolicySet, error) {
	return mustGetRow[PolicySet](t, TablePolicySets, "policy set", id)
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
	req.Attributes.apply(&s)
	if err := checkPolicySet(t, &s); err != nil {
		return nil, err
	}
	s.UpdatedAt = MgmtTime(req.Now)
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
