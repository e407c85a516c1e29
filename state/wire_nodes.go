package state

import "time"

// NodeListStub is one entry of GET /v1/nodes: what a node table shows,
// without the node's attributes unless asked for (os=true) and without its
// resources unless asked for (resources=true).
type NodeListStub struct {
	ID         string
	Name       string
	Address    string
	HTTPAddr   string
	Datacenter string
	NodePool   string
	NodeClass  string
	// Version is the client's sched version (its "sched.version"
	// attribute).
	Version               string
	Drain                 bool
	SchedulingEligibility string
	Status                string
	StatusDescription     string
	// StatusUpdatedAt is Unix seconds.
	StatusUpdatedAt   int64
	Drivers           map[string]*DriverInfo
	Attributes        map[string]string      `json:",omitempty"`
	NodeResources     *NodeResources         `json:",omitempty"`
	ReservedResources *NodeReservedResources `json:",omitempty"`
	CreateIndex       uint64
	ModifyIndex       uint64
}

// NodeUpdateResponse answers the node writes: register, heartbeat, status,
// eligibility and drain.
type NodeUpdateResponse struct {
	// HeartbeatTTL is how long the leader waits for the node's next
	// heartbeat before marking it down (nanoseconds). Zero when the node
	// is not expected to heartbeat (it was just marked down).
	HeartbeatTTL time.Duration
	// EvalIDs are the evaluations the change created.
	EvalIDs         []string
	EvalCreateIndex uint64
	NodeModifyIndex uint64
	Index           uint64
}

// DrainSpec says how to drain a node. Deadline is nanoseconds: -1 forces
// the drain now (every allocation is stopped at once), 0 means no
// deadline (allocations migrate as their groups' migrate blocks allow, for
// as long as it takes), a positive value forces what is left once it
// passes.
type DrainSpec struct {
	Deadline         time.Duration
	IgnoreSystemJobs bool
}

// AllocClientUpdate is one allocation's status as its node reports it.
type AllocClientUpdate struct {
	ID                string
	ClientStatus      string
	ClientDescription string
	// TaskStates and DeploymentStatus are left out of the client's report
	// when it has none.
	TaskStates map[string]*TaskState `json:",omitempty"`
	// DeploymentStatus, when set, reports the allocation's health within
	// its deployment.
	DeploymentStatus *AllocDeploymentStatus `json:",omitempty"`
}

// NodeAllocsUpdateResponse answers a client's report.
type NodeAllocsUpdateResponse struct {
	// EvalIDs are the evaluations created for jobs whose allocations
	// stopped on their own (failed, lost, or a service completed).
	EvalIDs []string
	Index   uint64
}
