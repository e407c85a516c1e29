package store

import (
	"github.com/schedhq/sched/state/mgmt"
	"time"
)

// Management API command types (ranges 60-99 and 120-126; see
// commands.go; 94 is in state_versions.go). Values are
// persisted in the log: never renumber. None carries
// IgnoreUnknownTypeFlag: a server that skipped one would diverge.
const (
	OrganizationCreateRequestType           MessageType = 60
	OrganizationUpdateRequestType           MessageType = 61
	OrganizationDeleteRequestType           MessageType = 62
	OrganizationAdminUpdateRequestType      MessageType = 63
	OrganizationConsumersReplaceRequestType MessageType = 64
	UserUpsertRequestType                   MessageType = 65
	UserDeleteRequestType                   MessageType = 66
	TeamCreateRequestType                   MessageType = 67
	TeamUpdateRequestType                   MessageType = 68
	TeamDeleteRequestType                   MessageType = 69
	TeamMembersAddRequestType               MessageType = 70
	TeamMembersRemoveRequestType            MessageType = 71
	ProjectCreateRequestType                MessageType = 72
	ProjectUpdateRequestType                MessageType = 73
	ProjectDeleteRequestType                MessageType = 74
	WorkspacesMoveRequestType               MessageType = 75
	TeamProjectCreateRequestType            MessageType = 76
	TeamProjectUpdateRequestType            MessageType = 77
	TeamProjectDeleteRequestType            MessageType = 78
	WorkspaceCreateRequestType              MessageType = 79
	WorkspaceUpdateRequestType              MessageType = 80
	WorkspaceDeleteRequestType              MessageType = 81
	WorkspaceLockRequestType                MessageType = 82
	WorkspaceUnlockRequestType              MessageType = 83
	RunCreateRequestType                    MessageType = 84
	RunActionRequestType                    MessageType = 85
	RunAdvanceRequestType                   MessageType = 86
	StateVersionCreateRequestType           MessageType = 87
	PolicySetCreateRequestType              MessageType = 88
	PolicySetUpdateRequestType              MessageType = 89
	PolicySetDeleteRequestType              MessageType = 90
	ToolVersionCreateRequestType            MessageType = 91
	ToolVersionUpdateRequestType            MessageType = 92
	ToolVersionDeleteRequestType            MessageType = 93
)

// Every management command is all or nothing: on error Apply writes
// nothing. Create commands carry the IDs and times the leader chose;
// their Apply returns the created object, and update commands return the
// updated one (shared with the store: never mutate it). Deletes return
// nil. Validation errors name JSON pointers into the request document (see
// AttrPointer), name clashes are ErrInvalid on the name attribute (422, as
// TFE answers "has already been taken"), and state conflicts are
// ErrConflict (409).

// OrganizationCreateRequest creates an organization together with its
// owners team and its "Default Project". Only Name, ExternalID, Email and
// CreatedAt of Organization are used; every other attribute starts at its
// default (see OrganizationAdminPatch).
type OrganizationCreateRequest struct {
	Organization     *mgmt.Organization
	OwnersTeamID     string
	DefaultProjectID string
	// OwnerUserID, when set, is put on the owners team: the user who
	// created the organization.
	OwnerUserID string
}

// OrganizationUpdateRequest changes an organization's ordinary attributes.
type OrganizationUpdateRequest struct {
	Name  string
	Email *string
	// DefaultExecutionMode is remote, local or agent; "" returns to the
	// default (remote).
	DefaultExecutionMode *string
}

// OrganizationDeleteRequest deletes an organization and everything in it:
// teams, memberships, projects, team access, workspaces, runs, state
// versions and policy sets. Other organizations stop listing it as a
// consumer. Users are kept.
type OrganizationDeleteRequest struct {
	Name string
}

// OrganizationAdminUpdateRequest applies a site administrator's update.
type OrganizationAdminUpdateRequest struct {
	Name  string
	Patch mgmt.OrganizationAdminPatch
}

// Consumer kinds of OrganizationConsumersReplaceRequest.
const (
	ConsumerKindModule   = "module"
	ConsumerKindProvider = "provider"
)

// OrganizationConsumersReplaceRequest replaces the organizations allowed to
// use Name's modules (Kind module) or providers (Kind provider), and turns
// that kind's global sharing off (spec §3). Every consumer must exist and
// differ from Name; duplicates collapse.
type OrganizationConsumersReplaceRequest struct {
	Name      string
	Kind      string
	Consumers []string
}

// UserUpsertRequest creates a user (new ID) or updates one (Username,
// Email and IsAdmin; CreatedAt is kept).
type UserUpsertRequest struct {
	User *mgmt.User
}

// UserDeleteRequest deletes a user and their team memberships. It is
// refused (ErrConflict) while the user is the last member of an owners
// team.
type UserDeleteRequest struct {
	ID string
}

// TeamCreateRequest creates a team in an organization.
type TeamCreateRequest struct {
	ID               string
	OrganizationName string
	CreatedAt        time.Time
	Attributes       mgmt.TeamPatch
}

// TeamUpdateRequest changes a team. The owners team keeps its name and
// organization access.
type TeamUpdateRequest struct {
	ID         string
	Attributes mgmt.TeamPatch
}

// TeamDeleteRequest deletes a team with its memberships and project
// access. The owners team cannot be deleted (ErrConflict).
type TeamDeleteRequest struct {
	ID string
}

// TeamMembersAddRequest puts users on a team. Users already on it are
// left as they are; an unknown user fails the whole request.
type TeamMembersAddRequest struct {
	TeamID  string
	UserIDs []string
}

// TeamMembersRemoveRequest takes users off a team. Users not on it are
// ignored. The owners team may not lose its last member (ErrConflict).
type TeamMembersRemoveRequest struct {
	TeamID  string
	UserIDs []string
}

// ProjectCreateRequest creates a project; Attributes.Name is required.
type ProjectCreateRequest struct {
	ID               string
	OrganizationName string
	CreatedAt        time.Time
	Attributes       mgmt.ProjectPatch
}

// ProjectUpdateRequest changes a project. A change of the auto-destroy
// duration reaches every workspace of the project that inherits it.
type ProjectUpdateRequest struct {
	ID         string
	Attributes mgmt.ProjectPatch
	// Now is the leader's clock, the UpdatedAt of workspaces the
	// propagation changes.
	Now time.Time
}

// ProjectDeleteRequest deletes a project and its team access. It is
// refused with ErrConflict (409) while the project holds workspaces, and
// for the organization's Default Project.
type ProjectDeleteRequest struct {
	ID string
}

// WorkspacesMoveRequest moves workspaces into a project, all or none:
// every workspace must exist in the project's organization. Workspaces
// inheriting their project's auto-destroy duration take the
// destination's. Permission checks (spec §5.5) are the caller's, with
// CheckWorkspaceMove.
type WorkspacesMoveRequest struct {
	ProjectID    string
	WorkspaceIDs []string
	Now          time.Time
}

// TeamProjectCreateRequest gives a team access to a project. Team and
// project must be in the same organization (else ErrNotFound); a second
// record for the same team and project is ErrConflict.
type TeamProjectCreateRequest struct {
	ID          string
	TeamID      string
	ProjectID   string
	CreatedAt   time.Time
	Access      string
	Permissions mgmt.TeamProjectPermissionsPatch
}

// TeamProjectUpdateRequest changes a team's access to a project. A nil
// Access keeps the current level.
type TeamProjectUpdateRequest struct {
	ID          string
	Access      *string
	Permissions mgmt.TeamProjectPermissionsPatch
}

// TeamProjectDeleteRequest removes a team's access to a project.
type TeamProjectDeleteRequest struct {
	ID string
}

// WorkspaceCreateRequest creates a workspace. Without a project it goes to
// the organization's Default Project. It is refused (ErrConflict) when
// the organization has reached its workspace limit.
type WorkspaceCreateRequest struct {
	ID               string
	OrganizationName string
	CreatedAt        time.Time
	Attributes       mgmt.WorkspacePatch
}

// WorkspaceUpdateRequest changes a workspace, including moving it to
// another project of its organization.
type WorkspaceUpdateRequest struct {
	ID         string
	Attributes mgmt.WorkspacePatch
	Now        time.Time
}

// WorkspaceDeleteRequest deletes a workspace with its runs and state
// versions.
type WorkspaceDeleteRequest struct {
	ID string
}

// WorkspaceLockRequest locks a workspace; locking a locked workspace is
// ErrConflict (409), as in TFE.
type WorkspaceLockRequest struct {
	ID       string
	LockedBy string
	Reason   string
	Now      time.Time
}

// WorkspaceUnlockRequest unlocks a workspace. Unlocking one that is not
// locked, or that someone other than By locked without Force, is
// ErrConflict (409).
type WorkspaceUnlockRequest struct {
	ID    string
	By    string
	Force bool
	Now   time.Time
}

// RunCreateRequest creates a run (status pending) and makes it its
// workspace's current run. Run carries ID, WorkspaceID, Message,
// IsDestroy, CreatedBy and CreatedAt.
type RunCreateRequest struct {
	Run *mgmt.Run
}

// RunActionRequest applies a user's action to a run; an action the run's
// status does not allow is ErrConflict (409). See RunActionTarget.
type RunActionRequest struct {
	ID     string
	Action string
	Now    time.Time
}

// RunAdvanceRequest moves a run along its execution (plan queued, planning,
// planned, …): the path a run executor takes. A step the lifecycle does
// not allow is ErrConflict. See RunCanAdvance.
type RunAdvanceRequest struct {
	ID     string
	Status string
	Now    time.Time
}

// StateVersionCreateRequest records a new state version. As in TFE the
// workspace must be locked, by StateVersion.CreatedBy when that is set
// (ErrConflict otherwise). The newest state version (by CreatedAt) sets
// the workspace's LatestChangeAt.
//
// State and JSONState, when set, are the bytes of the state file and of
// its JSON rendering (stored as blobs, state_versions.go); with State the
// version is finalized, and its lineage and serial must follow the
// current state's unless StateVersion.Force. A version with Status
// pending waits for its bytes (StateVersionUploadRequest) and is not
// current until then. Outputs are the outputs the leader read, stored
// with IDs derived from the version's.
type StateVersionCreateRequest struct {
	StateVersion *mgmt.StateVersion
	State        []byte
	JSONState    []byte
	Outputs      []*mgmt.StateVersionOutput
}

// PolicySetCreateRequest creates a policy set; Attributes.Name is
// required.
type PolicySetCreateRequest struct {
	ID               string
	OrganizationName string
	CreatedAt        time.Time
	Attributes       mgmt.PolicySetPatch
}

// PolicySetUpdateRequest changes a policy set.
type PolicySetUpdateRequest struct {
	ID         string
	Attributes mgmt.PolicySetPatch
	Now        time.Time
}

// PolicySetDeleteRequest deletes a policy set.
type PolicySetDeleteRequest struct {
	ID string
}

// ToolVersionCreateRequest creates a tool or policy version (Family).
type ToolVersionCreateRequest struct {
	ID         string
	Family     string
	CreatedAt  time.Time
	Attributes mgmt.ToolVersionPatch
}

// ToolVersionUpdateRequest changes a version of Family; a version of the
// other family is ErrNotFound.
type ToolVersionUpdateRequest struct {
	ID         string
	Family     string
	Attributes mgmt.ToolVersionPatch
	Now        time.Time
}

// ToolVersionDeleteRequest deletes a version of Family. It is refused with
// ErrInvalid (422) when the version is official, or used by a workspace
// (tool family) or a policy set (policy family).
type ToolVersionDeleteRequest struct {
	ID     string
	Family string
}

// managementCommand returns the command of type t in this area's range, if any.
func managementCommand(t MessageType) (command, bool) {
	switch t {
	case OrganizationCreateRequestType:
		return handler(applyOrganizationCreate), true
	case OrganizationUpdateRequestType:
		return handler(applyOrganizationUpdate), true
	case OrganizationDeleteRequestType:
		return handler(applyOrganizationDelete), true
	case OrganizationAdminUpdateRequestType:
		return handler(applyOrganizationAdminUpdate), true
	case OrganizationConsumersReplaceRequestType:
		return handler(applyOrganizationConsumersReplace), true
	case UserUpsertRequestType:
		return handler(applyUserUpsert), true
	case UserDeleteRequestType:
		return handler(applyUserDelete), true
	case TeamCreateRequestType:
		return handler(applyTeamCreate), true
	case TeamUpdateRequestType:
		return handler(applyTeamUpdate), true
	case TeamDeleteRequestType:
		return handler(applyTeamDelete), true
	case TeamMembersAddRequestType:
		return handler(applyTeamMembersAdd), true
	case TeamMembersRemoveRequestType:
		return handler(applyTeamMembersRemove), true
	case ProjectCreateRequestType:
		return handler(applyProjectCreate), true
	case ProjectUpdateRequestType:
		return handler(applyProjectUpdate), true
	case ProjectDeleteRequestType:
		return handler(applyProjectDelete), true
	case WorkspacesMoveRequestType:
		return handler(applyWorkspacesMove), true
	case TeamProjectCreateRequestType:
		return handler(applyTeamProjectCreate), true
	case TeamProjectUpdateRequestType:
		return handler(applyTeamProjectUpdate), true
	case TeamProjectDeleteRequestType:
		return handler(applyTeamProjectDelete), true
	case WorkspaceCreateRequestType:
		return handler(applyWorkspaceCreate), true
	case WorkspaceUpdateRequestType:
		return handler(applyWorkspaceUpdate), true
	case WorkspaceDeleteRequestType:
		return handler(applyWorkspaceDelete), true
	case WorkspaceLockRequestType:
		return handler(applyWorkspaceLock), true
	case WorkspaceUnlockRequestType:
		return handler(applyWorkspaceUnlock), true
	case RunCreateRequestType:
		return handler(applyRunCreate), true
	case RunActionRequestType:
		return handler(applyRunAction), true
	case RunAdvanceRequestType:
		return handler(applyRunAdvance), true
	case StateVersionCreateRequestType:
		return handler(applyStateVersionCreate), true
	case PolicySetCreateRequestType:
		return handler(applyPolicySetCreate), true
	case PolicySetUpdateRequestType:
		return handler(applyPolicySetUpdate), true
	case PolicySetDeleteRequestType:
		return handler(applyPolicySetDelete), true
	case ToolVersionCreateRequestType:
		return handler(applyToolVersionCreate), true
	case ToolVersionUpdateRequestType:
		return handler(applyToolVersionUpdate), true
	case ToolVersionDeleteRequestType:
		return handler(applyToolVersionDelete), true
	}
	return stateVersionCommand(t)
}

// managementTables are this area's tables.
func managementTables() []tableDef {
	return append(append(append(mgmtTableDefs(), stateBlobTableDefs()...), configVersionTableDefs()...), agentPoolTableDefs()...)
}
