package state

// AllocListStub is one entry of the allocation lists (GET /v1/allocations,
// /v1/evaluation/:id/allocations, /v1/deployment/allocations/:id): an
// allocation without its job, which is what makes a full allocation
// heavy. AllocatedResources appear with resources=true; TaskStates are
// left out with task_states=false.
type AllocListStub struct {
	ID                 string
	EvalID             string
	Name               string
	Namespace          string
	NodeID             string
	NodeName           string
	JobID              string
	JobType            string
	JobVersion         uint64
	TaskGroup          string
	AllocatedResources *AllocatedResources `json:",omitempty"`
	DesiredStatus      string
	DesiredDescription string
	DesiredTransition  DesiredTransition
	ClientStatus       string
	ClientDescription  string
	TaskStates         map[string]*TaskState
	DeploymentStatus   *AllocDeploymentStatus
	FollowupEvalID     string
	NextAllocation     string
	PreviousAllocation string
	RescheduleTracker  *RescheduleTracker
	CreateIndex        uint64
	ModifyIndex        uint64
	CreateTime         int64
	ModifyTime         int64
}
