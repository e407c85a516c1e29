package mgmt

import (
	"github.com/schedhq/sched/state"
	"slices"
	"time"
)

// This file holds the resources of the management API (spec/management-api.md):
// organizations, users, teams, projects, project team access, workspaces,
// runs, state versions, policy sets and tool/policy versions. Go names are Go
// style; the HTTP layer maps them to the kebab-case attributes of the spec.
//
// Every resource is referenced by its external ID (e.g. "prj-…"), except
// organizations, which are addressed by name as the spec says. IDs and
// times are chosen by the leader before it proposes a command (see
// NewMgmtID); Apply only records them.

// ID prefixes of the management API's resources (spec §1). An organization's
// ExternalID uses PrefixOrganization; its address is its name.
const (
	PrefixOrganization = "org-"
	PrefixUser         = "user-"
	PrefixTeam         = "team-"
	PrefixProject      = "prj-"
	PrefixTeamProject  = "tprj-"
	PrefixWorkspace    = "ws-"
	PrefixRun          = "run-"
	PrefixStateVersion = "sv-"
	PrefixPolicySet    = "polset-"
	// PrefixToolVersion is shared by tool versions and policy versions, as
	// the spec says ("tool-<id>" for both families).
	PrefixToolVersion = "tool-"
)

// Organization defaults (spec §4 Admin organizations, §8).
const (
	// DefaultApplyTimeout is an organization's apply-timeout when unset.
	DefaultApplyTimeout = "24h"
	// DefaultPlanTimeout is an organization's plan-timeout when unset.
	DefaultPlanTimeout = "2h"
	// OwnersTeamName is the name of the team every organization has, whose
	// members are the organization's owners.
	OwnersTeamName = "owners"
	// DefaultProjectName is the name of the project every new organization
	// gets, where workspaces created without a project land.
	DefaultProjectName = "Default Project"
)

// Organization is a tenant of the management API. It is addressed by Name,
// which never changes (renaming is not supported: every child row refers
// to its organization by name).
type Organization struct {
	// Name is the organization's address and JSON:API id.
	Name string
	// ExternalID is "org-<id>".
	ExternalID string
	// Email is the organization's contact address. The admin view shows it
	// as notification-email: TFE keeps one address for both.
	Email     string
	CreatedAt time.Time
	// DefaultProjectID is the "Default Project" created with the
	// organization. It cannot be deleted; workspaces created without a
	// project go there.
	DefaultProjectID string
	// OwnersTeamID is the "owners" team created with the organization.
	OwnersTeamID string
	// DefaultExecutionMode is where the organization's workspaces run by
	// default: remote, local or agent; "" means remote.
	DefaultExecutionMode string

	// AccessBetaTools lets workspaces use beta tool versions.
	AccessBetaTools bool
	// IsDisabled removes every permission of every non-administrator: the
	// organization is inaccessible to its members (spec §3).
	IsDisabled bool
	// ApplyTimeout and PlanTimeout are Go durations ("24h", "90m"). A new
	// organization gets the defaults; setting null restores them.
	ApplyTimeout string
	PlanTimeout  string
	// ToolWorkerSudoEnabled lets the tool worker use sudo.
	ToolWorkerSudoEnabled bool
	// GlobalModuleSharing and GlobalProviderSharing share the
	// organization's modules/providers with every organization; turning
	// one on clears the configured consumers of that kind.
	GlobalModuleSharing   bool
	GlobalProviderSharing bool
	// SSOEnabled is shown in the admin view; nothing sets it yet.
	SSOEnabled bool
	// WorkspaceLimit, when set and above 0, is the most workspaces the
	// organization may hold; reaching it blocks new workspaces only. Nil
	// means no limit; 0 means the limit has no effect.
	WorkspaceLimit *int
	// ModuleConsumers and ProviderConsumers name the organizations allowed
	// to use this organization's modules/providers, sorted.
	ModuleConsumers   []string
	ProviderConsumers []string

	CreateIndex uint64
	ModifyIndex uint64
}

// ModuleProducer reports whether o shares modules: globally or with
// configured consumers (filter[module_producer]).
func (o *Organization) ModuleProducer() bool {
	return o.GlobalModuleSharing || len(o.ModuleConsumers) > 0
}

// ProviderProducer reports whether o shares providers: globally or with
// configured consumers (filter[provider_producer]).
func (o *Organization) ProviderProducer() bool {
	return o.GlobalProviderSharing || len(o.ProviderConsumers) > 0
}

// WorkspaceLimitReached reports whether an organization holding count
// workspaces may not create another. A nil or 0 limit never blocks.
func (o *Organization) WorkspaceLimitReached(count int) bool {
	return o.WorkspaceLimit != nil && *o.WorkspaceLimit > 0 && count >= *o.WorkspaceLimit
}

// Copy returns a deep copy of o.
func (o *Organization) Copy() *Organization {
	if o == nil {
		return nil
	}
	c := *o
	c.WorkspaceLimit = state.ClonePtr(o.WorkspaceLimit)
	c.ModuleConsumers = slices.Clone(o.ModuleConsumers)
	c.ProviderConsumers = slices.Clone(o.ProviderConsumers)
	return &c
}

// User is a person who signs in. Usernames are unique case-insensitively.
type User struct {
	// ID is "user-<id>".
	ID       string
	Username string
	Email    string
	// IsAdmin makes the user a site administrator: the admin API is theirs
	// and they act as an owner in every organization.
	IsAdmin     bool
	CreatedAt   time.Time
	CreateIndex uint64
	ModifyIndex uint64
}

// Team visibilities.
const (
	// TeamVisibilitySecret: only members, owners and teams allowed to see
	// secret teams see the team.
	TeamVisibilitySecret = "secret"
	// TeamVisibilityOrganization: every member of the organization sees it.
	TeamVisibilityOrganization = "organization"
)

// Team is a group of users inside one organization, the unit permissions
// are granted to. Names are unique per organization, case-insensitively.
type Team struct {
	// ID is "team-<id>".
	ID               string
	OrganizationName string
	Name             string
	// Visibility is secret (the default, as in TFE) or organization.
	Visibility string
	// IsOwners marks the organization's owners team: it cannot be renamed
	// or deleted, and its members may do everything in the organization.
	IsOwners bool
	// Access holds the team's organization-level permissions.
	Access      TeamOrganizationAccess
	CreatedAt   time.Time
	CreateIndex uint64
	ModifyIndex uint64
}

// TeamOrganizationAccess is a team's organization-level permissions (the
// `organization-access` attribute of a team).
type TeamOrganizationAccess struct {
	ManagePolicies           bool
	ManagePolicyOverrides    bool
	ManageWorkspaces         bool
	ManageVCSSettings        bool
	ManageProviders          bool
	ManageModules            bool
	ManageRunTasks           bool
	ManageProjects           bool
	ReadWorkspaces           bool
	ReadProjects             bool
	ManageMembership         bool
	ManageTeams              bool
	ManageOrganizationAccess bool
	AccessSecretTeams        bool
	ManageAgentPools         bool
}

// TeamMembership records that a user is on a team. It is its own table so
// that both "members of a team" and "teams of a user" are index lookups.
type TeamMembership struct {
	TeamID           string
	UserID           string
	OrganizationName string
	CreateIndex      uint64
	ModifyIndex      uint64
}

// Project execution modes (default-execution-mode).
const (
	ExecutionModeRemote = "remote"
	ExecutionModeLocal  = "local"
	ExecutionModeAgent  = "agent"
)

// Project groups workspaces inside an organization. Names are unique per
// organization, case-insensitively.
type Project struct {
	// ID is "prj-<id>".
	ID               string
	OrganizationName string
	Name             string
	// Description is "" when none (shown as null).
	Description string
	// AutoDestroyActivityDuration ("14d", "12h"; "" for none) is inherited
	// by the project's workspaces that have no override of their own.
	AutoDestroyActivityDuration string
	// TagBindings are key/value tags (go-tfe `tag-bindings`); a project's
	// effective tag bindings are its own.
	TagBindings []TagBinding
	// DefaultExecutionMode is remote, local or agent, or "" to inherit the
	// organization's (remote). Setting it marks the setting overwritten.
	DefaultExecutionMode string
	// DefaultAgentPoolID goes with the agent execution mode.
	DefaultAgentPoolID string
	// IsDefault marks the organization's Default Project, which cannot be
	// deleted.
	IsDefault   bool
	CreatedAt   time.Time
	CreateIndex uint64
	ModifyIndex uint64
}

// TagBinding is one key/value tag of a project.
type TagBinding struct {
	Key   string
	Value string
}

// ProjectSettingOverwrites says which project settings are the project's
// own rather than inherited from the organization (`setting-overwrites`).
type ProjectSettingOverwrites struct {
	ExecutionMode bool
	AgentPool     bool
}

// SettingOverwrites derives the project's setting overwrites: a setting is
// overwritten exactly when the project holds its own value.
func (p *Project) SettingOverwrites() ProjectSettingOverwrites {
	return ProjectSettingOverwrites{
		ExecutionMode: p.DefaultExecutionMode != "",
		AgentPool:     p.DefaultAgentPoolID != "",
	}
}

// EffectiveExecutionMode is the project's execution mode, falling back to
// the organization default (remote).
func (p *Project) EffectiveExecutionMode() string {
	if p.DefaultExecutionMode == "" {
		return ExecutionModeRemote
	}
	return p.DefaultExecutionMode
}

// Copy returns a deep copy of p.
func (p *Project) Copy() *Project {
	if p == nil {
		return nil
	}
	c := *p
	c.TagBindings = slices.Clone(p.TagBindings)
	return &c
}

// Project access levels (team-projects `access`).
const (
	ProjectAccessRead     = "read"
	ProjectAccessWrite    = "write"
	ProjectAccessMaintain = "maintain"
	ProjectAccessAdmin    = "admin"
	ProjectAccessCustom   = "custom"
)

// TeamProject gives a team a level of access to a project. There is at
// most one per team and project.
type TeamProject struct {
	// ID is "tprj-<id>".
	ID               string
	OrganizationName string
	TeamID           string
	ProjectID        string
	// Access is read, write, maintain, admin or custom.
	Access string
	// Permissions are the record's permissions: the implied ones of its
	// level, or the chosen ones when Access is custom.
	Permissions TeamProjectPermissions
	CreatedAt   time.Time
	CreateIndex uint64
	ModifyIndex uint64
}

// Workspace holds one body of infrastructure. Names are unique per
// organization, case-insensitively.
type Workspace struct {
	// ID is "ws-<id>".
	ID               string
	OrganizationName string
	ProjectID        string
	Name             string
	Description      string
	Locked           bool
	// LockedBy is the ID of who holds the lock (a user-, team- or run-
	// ID, or the organization's name for an organization token).
	LockedBy   string
	LockReason string
	// VCSRepo, when set, links the workspace to a repository.
	VCSRepo *WorkspaceVCSRepo
	// ToolVersion is the version string of the tool version the workspace
	// uses ("" for none); it counts in that version's usage.
	ToolVersion string
	// AutoDestroyActivityDuration is the effective duration: the project's
	// while InheritsProjectAutoDestroy, the workspace's own otherwise.
	AutoDestroyActivityDuration string
	InheritsProjectAutoDestroy  bool
	// ExecutionMode is the workspace's own execution mode (remote, local
	// or agent); "" inherits its project's, then its organization's.
	ExecutionMode string
	// AgentPoolID goes with the agent execution mode.
	AgentPoolID string
	// CurrentRunID is the newest run ("" when none).
	CurrentRunID string
	// LatestStateVersionID is the newest state version ("" when none).
	LatestStateVersionID string
	// LatestChangeAt is the creation time of the newest state version, or
	// of the workspace when it has none.
	LatestChangeAt time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
	CreateIndex    uint64
	ModifyIndex    uint64
}

// WorkspaceVCSRepo links a workspace to a VCS repository.
type WorkspaceVCSRepo struct {
	// Identifier is the repository, e.g. "org/repo".
	Identifier   string
	Branch       string
	OAuthTokenID string
}

// Copy returns a deep copy of w.
func (w *Workspace) Copy() *Workspace {
	if w == nil {
		return nil
	}
	c := *w
	c.VCSRepo = state.ClonePtr(w.VCSRepo)
	return &c
}

// Run statuses (spec §3).
const (
	RunPending            = "pending"
	RunPlanQueued         = "plan_queued"
	RunPlanning           = "planning"
	RunPlanned            = "planned"
	RunConfirmed          = "confirmed"
	RunApplyQueued        = "apply_queued"
	RunApplying           = "applying"
	RunApplied            = "applied"
	RunDiscarded          = "discarded"
	RunErrored            = "errored"
	RunCanceled           = "canceled"
	RunCostEstimating     = "cost_estimating"
	RunCostEstimated      = "cost_estimated"
	RunPolicyChecking     = "policy_checking"
	RunPolicyOverride     = "policy_override"
	RunPolicySoftFailed   = "policy_soft_failed"
	RunPolicyChecked      = "policy_checked"
	RunPlannedAndFinished = "planned_and_finished"
)

// RunStatuses lists every run status of spec §3, in the spec's order.
func RunStatuses() []string {
	return []string{
		RunPending, RunPlanQueued, RunPlanning, RunPlanned, RunConfirmed,
		RunApplyQueued, RunApplying, RunApplied, RunDiscarded, RunErrored,
		RunCanceled, RunCostEstimating, RunCostEstimated, RunPolicyChecking,
		RunPolicyOverride, RunPolicySoftFailed, RunPolicyChecked, RunPlannedAndFinished,
	}
}

// Run is one plan (and maybe apply) of a workspace. Execution is a later
// issue: a run is created pending, and moves only by the user actions
// (apply, discard, cancel) and by RunAdvanceRequest, the executor's path.
type Run struct {
	// ID is "run-<id>".
	ID               string
	WorkspaceID      string
	OrganizationName string
	Status           string
	Message          string
	IsDestroy        bool
	// CreatedBy is the ID of whoever queued the run.
	CreatedBy string
	CreatedAt time.Time
	// StatusTimestamps holds when the run entered each status it has been
	// in, keyed by status.
	StatusTimestamps map[string]time.Time
	CreateIndex      uint64
	ModifyIndex      uint64

	// RunExecution: what a run executed as jobs carries (run_exec.go).
	RunExecution
}

// Copy returns a deep copy of r.
func (r *Run) Copy() *Run {
	if r == nil {
		return nil
	}
	c := *r
	c.StatusTimestamps = make(map[string]time.Time, len(r.StatusTimestamps))
	for k, v := range r.StatusTimestamps {
		c.StatusTimestamps[k] = v
	}
	c.Plan, c.Apply = r.Plan.copy(), r.Apply.copy()
	c.Variables = slices.Clone(r.Variables)
	return &c
}

// StateVersion records one version of a workspace's state. The state
// file and its JSON rendering are kept as content-addressed blobs
// (StateBlob), named here by their SHA-256; the outputs are rows of their
// own (StateVersionOutput).
type StateVersion struct {
	// ID is "sv-<id>".
	ID               string
	WorkspaceID      string
	OrganizationName string
	Serial           int64
	Lineage          string
	MD5              string
	// Status is StateVersionFinalized once the state is stored, or
	// StateVersionPending while it waits for its upload; "" (a version
	// recorded without bytes by an older server) reads as finalized.
	Status string
	// StateSHA256 and JSONStateSHA256 name the blobs of the state file and
	// of its JSON rendering; "" when none was uploaded.
	StateSHA256     string
	JSONStateSHA256 string
	// StateSize is the state file's length in bytes.
	StateSize int64
	// TerraformVersion is the version that wrote the state, from the file.
	TerraformVersion string
	// Force records that the version was pushed over a lineage or serial
	// conflict (terraform state push -force).
	Force bool
	// UploadSecret, chosen by the leader at create, authorizes the PUTs of
	// the version's upload URLs, which go-tfe sends without a token.
	UploadSecret string
	// RunID is the run that wrote the state, if any.
	RunID       string
	CreatedBy   string
	CreatedAt   time.Time
	CreateIndex uint64
	ModifyIndex uint64
}

// PolicySet groups policies; it runs on the policy version it names.
// Names are unique per organization, case-insensitively.
type PolicySet struct {
	// ID is "polset-<id>".
	ID               string
	OrganizationName string
	Name             string
	Description      string
	// Kind is free text kept for clients (e.g. the engine's name).
	Kind        string
	Overridable bool
	Global      bool
	// PolicyToolVersion is the version string of the policy version the
	// set uses ("" for the default); it counts in that version's usage.
	PolicyToolVersion string
	CreatedAt         time.Time
	UpdatedAt         time.Time
	CreateIndex       uint64
	ModifyIndex       uint64
}

// Tool version families: one table holds both, told apart by Family.
const (
	VersionFamilyTool   = "tool"
	VersionFamilyPolicy = "policy"
)

// ToolVersion is a version of the provisioning tool (Family tool) or of
// the policy engine (Family policy) that runs may use. Versions are unique
// per family.
type ToolVersion struct {
	// ID is "tool-<id>" for both families.
	ID      string
	Family  string
	Version string
	// URL and SHA locate and check the linux/amd64 binary.
	URL      string
	SHA      string
	Official bool
	Enabled  bool
	Beta     bool
	// Deprecated and DeprecatedReason: the reason is nil unless
	// Deprecated is true.
	Deprecated       bool
	DeprecatedReason *string
	// Archs are per-platform binaries (go-tfe `archs`).
	Archs []ToolVersionArch
	// CreatedAt has millisecond precision, as the spec shows it.
	CreatedAt   time.Time
	UpdatedAt   time.Time
	CreateIndex uint64
	ModifyIndex uint64
}

// ToolVersionArch is the binary of a tool version for one platform.
type ToolVersionArch struct {
	URL  string
	SHA  string
	OS   string
	Arch string
}

// Copy returns a deep copy of v.
func (v *ToolVersion) Copy() *ToolVersion {
	if v == nil {
		return nil
	}
	c := *v
	c.DeprecatedReason = state.ClonePtr(v.DeprecatedReason)
	c.Archs = slices.Clone(v.Archs)
	return &c
}
