package mgmt

import (
	"github.com/schedhq/sched/state"
	"slices"
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
var RunActions = map[string]struct {
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
	// force-cancel is cancel without waiting for the worker: here both
	// stop the run's job at once, so they take the same runs (TFE also
	// takes a pending run).
	RunActionForceCancel: {
		from: []string{RunPending, RunPlanQueued, RunPlanning, RunCostEstimating, RunPolicyChecking, RunConfirmed, RunApplyQueued, RunApplying},
		to:   RunCanceled,
	},
}

// RunSteps are the executor's transitions: from a status, the statuses a
// run may move to next. Final statuses (applied, discarded, errored,
// canceled, planned_and_finished) have none.
var RunSteps = map[string][]string{
	RunPending:          {RunPlanQueued, RunPlanning, RunErrored},
	RunPlanQueued:       {RunPlanning, RunErrored},
	RunPlanning:         {RunPlanned, RunPlannedAndFinished, RunCostEstimating, RunPolicyChecking, RunErrored},
	RunPlanned:          {RunCostEstimating, RunPolicyChecking, RunConfirmed, RunApplyQueued, RunPlannedAndFinished, RunErrored},
	RunCostEstimating:   {RunCostEstimated, RunErrored},
	RunCostEstimated:    {RunPolicyChecking, RunConfirmed, RunApplyQueued, RunPlannedAndFinished},
	RunPolicyChecking:   {RunPolicyChecked, RunPolicySoftFailed, RunErrored},
	RunPolicySoftFailed: {RunPolicyOverride},
	RunPolicyChecked:    {RunConfirmed, RunApplyQueued, RunPlannedAndFinished},
	RunPolicyOverride:   {RunConfirmed, RunApplyQueued},
	RunConfirmed:        {RunApplyQueued, RunApplying, RunErrored},
	RunApplyQueued:      {RunApplying, RunErrored},
	RunApplying:         {RunApplied, RunErrored},
}

// RunActionTarget returns the status a run in status goes to on action,
// and false when the action is unknown or the status does not allow it.
func RunActionTarget(status, action string) (string, bool) {
	a, ok := RunActions[action]
	if !ok || !slices.Contains(a.from, status) {
		return "", false
	}
	return a.to, true
}

// RunCanAdvance reports whether the executor may move a run from one
// status to another.
func RunCanAdvance(from, to string) bool { return slices.Contains(RunSteps[from], to) }

// RunIsFinal reports whether status ends a run.
func RunIsFinal(status string) bool {
	_, acts := RunSteps[status]
	return !acts && slices.Contains(RunStatuses(), status)
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
	v := &state.ValidationError{}
	switch {
	case p.Name != nil:
		if msg := ValidSlug(*p.Name, WorkspaceNameMaxLen); msg != "" {
			v.Add(AttrPointer("name"), "%s", msg)
		}
	case create:
		v.Add(AttrPointer("name"), "is required")
	}
	if p.Description != nil {
		CheckMax(v, AttrPointer("description"), *p.Description, WorkspaceDescMax)
	}
	if p.PolicyToolVersion != nil && *p.PolicyToolVersion != "" {
		if msg := ValidVersion(*p.PolicyToolVersion); msg != "" {
			v.Add(AttrPointer("policy-tool-version"), "%s", msg)
		}
	}
	return v.Err()
}

// Apply sets the attributes the patch names on s.
func (p *PolicySetPatch) Apply(s *PolicySet) {
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

// Run actions (POST /runs/:id/actions/...).
const (
	RunActionApply   = "apply"
	RunActionDiscard = "discard"
	RunActionCancel  = "cancel"
	// RunActionForceCancel is POST /runs/:id/actions/force-cancel.
	RunActionForceCancel = "force-cancel"
)
