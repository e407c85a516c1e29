package state

import (
	"encoding/json"
	"time"
)

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

// nodeResourcesWire is the /v1 form of NodeResources, in Nomad's nested
// shape (Cpu.CpuShares, Cpu.TotalCpuCores, Memory.MemoryMB, Disk.DiskMB).
type nodeResourcesWire struct {
	Cpu            nodeCPUWire
	Memory         allocatedMemoryWire
	Disk           nodeDiskWire
	Networks       []*NetworkResource
	MinDynamicPort int
	MaxDynamicPort int
}

type nodeCPUWire struct {
	CpuShares     int
	TotalCpuCores int
}

type nodeDiskWire struct{ DiskMB int }

// MarshalJSON writes r in the nested wire shape.
func (r NodeResources) MarshalJSON() ([]byte, error) {
	return json.Marshal(nodeResourcesWire{
		Cpu: nodeCPUWire{CpuShares: r.CPU, TotalCpuCores: r.Cores}, Memory: allocatedMemoryWire{r.MemoryMB},
		Disk: nodeDiskWire{r.DiskMB}, Networks: r.Networks, MinDynamicPort: r.MinDynamicPort, MaxDynamicPort: r.MaxDynamicPort,
	})
}

// UnmarshalJSON reads the nested wire shape MarshalJSON writes.
func (r *NodeResources) UnmarshalJSON(b []byte) error {
	var w nodeResourcesWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = NodeResources{CPU: w.Cpu.CpuShares, Cores: w.Cpu.TotalCpuCores, MemoryMB: w.Memory.MemoryMB, DiskMB: w.Disk.DiskMB,
		Networks: w.Networks, MinDynamicPort: w.MinDynamicPort, MaxDynamicPort: w.MaxDynamicPort}
	return nil
}

// nodeReservedWire is the /v1 form of NodeReservedResources, in Nomad's
// nested shape (Cpu.CpuShares, Memory.MemoryMB, Disk.DiskMB,
// Networks.ReservedHostPorts).
type nodeReservedWire struct {
	Cpu      struct{ CpuShares int }
	Memory   allocatedMemoryWire
	Disk     nodeDiskWire
	Networks struct{ ReservedHostPorts string }
}

// MarshalJSON writes r in the nested wire shape.
func (r NodeReservedResources) MarshalJSON() ([]byte, error) {
	var w nodeReservedWire
	w.Cpu.CpuShares, w.Memory.MemoryMB, w.Disk.DiskMB, w.Networks.ReservedHostPorts = r.CPU, r.MemoryMB, r.DiskMB, r.ReservedPorts
	return json.Marshal(w)
}

// UnmarshalJSON reads the nested wire shape MarshalJSON writes.
func (r *NodeReservedResources) UnmarshalJSON(b []byte) error {
	var w nodeReservedWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = NodeReservedResources{CPU: w.Cpu.CpuShares, MemoryMB: w.Memory.MemoryMB, DiskMB: w.Disk.DiskMB, ReservedPorts: w.Networks.ReservedHostPorts}
	return nil
}

// drainStrategyWire is the /v1 form of DrainStrategy: Deadline in
// nanoseconds, ForceDeadline and StartedAt as RFC 3339 times (the zero
// time when unset), as Nomad's clients decode them.
type drainStrategyWire struct {
	Deadline         int64
	IgnoreSystemJobs bool
	ForceDeadline    time.Time
	StartedAt        time.Time
}

// unixNanoTime is the time of n Unix nanoseconds, the zero time for 0.
func unixNanoTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// timeUnixNano is the inverse of unixNanoTime.
func timeUnixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// MarshalJSON writes d in the wire shape.
func (d DrainStrategy) MarshalJSON() ([]byte, error) {
	return json.Marshal(drainStrategyWire{Deadline: d.Deadline, IgnoreSystemJobs: d.IgnoreSystemJobs,
		ForceDeadline: unixNanoTime(d.ForceDeadline), StartedAt: unixNanoTime(d.StartedAt)})
}

// UnmarshalJSON reads the wire shape MarshalJSON writes.
func (d *DrainStrategy) UnmarshalJSON(b []byte) error {
	var w drainStrategyWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*d = DrainStrategy{Deadline: w.Deadline, IgnoreSystemJobs: w.IgnoreSystemJobs,
		ForceDeadline: timeUnixNano(w.ForceDeadline), StartedAt: timeUnixNano(w.StartedAt)}
	return nil
}
