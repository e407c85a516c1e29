package mgmt

import "github.com/schedhq/sched/state"

// OrganizationAdminPatch is a site administrator's update of an
// organization (spec §4 Admin organizations): a nil field keeps the
// current value.
type OrganizationAdminPatch struct {
	AccessBetaTools *bool
	// GlobalModuleSharing and GlobalProviderSharing set to true clear the
	// configured consumers of that kind (spec §3).
	GlobalModuleSharing   *bool
	GlobalProviderSharing *bool
	IsDisabled            *bool
	ToolWorkerSudoEnabled *bool
	// ApplyTimeout and PlanTimeout are Go durations; "" (JSON null)
	// restores the default (24h, 2h).
	ApplyTimeout *string
	PlanTimeout  *string
	// BuildWorkerApplyTimeout and BuildWorkerPlanTimeout are the
	// deprecated aliases tool-build-worker-apply-timeout and
	// tool-build-worker-plan-timeout. An alias is used when its
	// replacement is absent; given both with different values is a 422.
	BuildWorkerApplyTimeout *string
	BuildWorkerPlanTimeout  *string
	// SetWorkspaceLimit says the request carries workspace-limit; then
	// WorkspaceLimit nil (JSON null) removes the limit.
	SetWorkspaceLimit bool
	WorkspaceLimit    *int
}

// Validate checks the patch's values, naming attributes by JSON pointer.
func (p *OrganizationAdminPatch) Validate() error {
	v := &state.ValidationError{}
	timeouts := []struct {
		attr string
		val  *string
	}{
		{"apply-timeout", p.ApplyTimeout},
		{"plan-timeout", p.PlanTimeout},
		{"tool-build-worker-apply-timeout", p.BuildWorkerApplyTimeout},
		{"tool-build-worker-plan-timeout", p.BuildWorkerPlanTimeout},
	}
	for _, to := range timeouts {
		if to.val != nil && *to.val != "" {
			if msg := ValidTimeout(*to.val); msg != "" {
				v.Add(AttrPointer(to.attr), "%s", msg)
			}
		}
	}
	if p.ApplyTimeout != nil && p.BuildWorkerApplyTimeout != nil && *p.ApplyTimeout != *p.BuildWorkerApplyTimeout {
		v.Add(AttrPointer("tool-build-worker-apply-timeout"), "is a deprecated alias of apply-timeout and differs from it; send only apply-timeout")
	}
	if p.PlanTimeout != nil && p.BuildWorkerPlanTimeout != nil && *p.PlanTimeout != *p.BuildWorkerPlanTimeout {
		v.Add(AttrPointer("tool-build-worker-plan-timeout"), "is a deprecated alias of plan-timeout and differs from it; send only plan-timeout")
	}
	if p.SetWorkspaceLimit && p.WorkspaceLimit != nil && *p.WorkspaceLimit < 0 {
		v.Add(AttrPointer("workspace-limit"), "must not be negative, got %d", *p.WorkspaceLimit)
	}
	return v.Err()
}

// Apply changes o (a copy) as the patch says.
func (p *OrganizationAdminPatch) Apply(o *Organization) {
	setBool := func(dst *bool, src *bool) {
		if src != nil {
			*dst = *src
		}
	}
	setBool(&o.AccessBetaTools, p.AccessBetaTools)
	setBool(&o.GlobalModuleSharing, p.GlobalModuleSharing)
	setBool(&o.GlobalProviderSharing, p.GlobalProviderSharing)
	setBool(&o.IsDisabled, p.IsDisabled)
	setBool(&o.ToolWorkerSudoEnabled, p.ToolWorkerSudoEnabled)
	timeout := func(dst *string, val, alias *string, def string) {
		if val == nil {
			val = alias
		}
		if val == nil {
			return
		}
		*dst = *val
		if *dst == "" {
			*dst = def
		}
	}
	timeout(&o.ApplyTimeout, p.ApplyTimeout, p.BuildWorkerApplyTimeout, DefaultApplyTimeout)
	timeout(&o.PlanTimeout, p.PlanTimeout, p.BuildWorkerPlanTimeout, DefaultPlanTimeout)
	if p.SetWorkspaceLimit {
		o.WorkspaceLimit = state.ClonePtr(p.WorkspaceLimit)
	}
	if o.GlobalModuleSharing {
		o.ModuleConsumers = nil
	}
	if o.GlobalProviderSharing {
		o.ProviderConsumers = nil
	}
}

// TeamPatch carries a team's writable attributes; nil keeps the current
// value.
type TeamPatch struct {
	Name       *string
	Visibility *string
	Access     *TeamOrganizationAccessPatch
}

// TeamOrganizationAccessPatch changes some of a team's organization-level
// permissions; nil keeps the current value.
type TeamOrganizationAccessPatch struct {
	ManagePolicies           *bool
	ManagePolicyOverrides    *bool
	ManageWorkspaces         *bool
	ManageVCSSettings        *bool
	ManageProviders          *bool
	ManageModules            *bool
	ManageRunTasks           *bool
	ManageProjects           *bool
	ReadWorkspaces           *bool
	ReadProjects             *bool
	ManageMembership         *bool
	ManageTeams              *bool
	ManageOrganizationAccess *bool
	AccessSecretTeams        *bool
	ManageAgentPools         *bool
}

// pairs lists each field of the patch with the permission it sets.
func (p *TeamOrganizationAccessPatch) pairs(a *TeamOrganizationAccess) []struct {
	src *bool
	dst *bool
} {
	return []struct {
		src *bool
		dst *bool
	}{
		{p.ManagePolicies, &a.ManagePolicies}, {p.ManagePolicyOverrides, &a.ManagePolicyOverrides},
		{p.ManageWorkspaces, &a.ManageWorkspaces}, {p.ManageVCSSettings, &a.ManageVCSSettings},
		{p.ManageProviders, &a.ManageProviders}, {p.ManageModules, &a.ManageModules},
		{p.ManageRunTasks, &a.ManageRunTasks}, {p.ManageProjects, &a.ManageProjects},
		{p.ReadWorkspaces, &a.ReadWorkspaces}, {p.ReadProjects, &a.ReadProjects},
		{p.ManageMembership, &a.ManageMembership}, {p.ManageTeams, &a.ManageTeams},
		{p.ManageOrganizationAccess, &a.ManageOrganizationAccess}, {p.AccessSecretTeams, &a.AccessSecretTeams},
		{p.ManageAgentPools, &a.ManageAgentPools},
	}
}

// Apply returns a with the patch's permissions set.
func (p *TeamOrganizationAccessPatch) Apply(a TeamOrganizationAccess) TeamOrganizationAccess {
	if p == nil {
		return a
	}
	for _, f := range p.pairs(&a) {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return a
}

// IsEmpty reports whether the patch changes nothing.
func (p *TeamOrganizationAccessPatch) IsEmpty() bool {
	if p == nil {
		return true
	}
	var a TeamOrganizationAccess
	for _, f := range p.pairs(&a) {
		if f.src != nil {
			return false
		}
	}
	return true
}

// Validate checks the patch; create requires a name.
func (p *TeamPatch) Validate(create bool) error {
	v := &state.ValidationError{}
	switch {
	case p.Name != nil:
		if msg := ValidSlug(*p.Name, TeamNameMaxLen); msg != "" {
			v.Add(AttrPointer("name"), "%s", msg)
		}
	case create:
		v.Add(AttrPointer("name"), "is required")
	}
	if p.Visibility != nil && *p.Visibility != TeamVisibilitySecret && *p.Visibility != TeamVisibilityOrganization {
		v.Add(AttrPointer("visibility"), "%q is not one of secret, organization", *p.Visibility)
	}
	return v.Err()
}
