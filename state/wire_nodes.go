package state

import (
	"bytes"
	"encoding/json"
	"fmt"
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
		Cpu: nodeCPUWire{CpuShares: r.CPU, TotalCpuCores: r.Cores}, Memory: allocatedMemoryWire{MemoryMB: r.MemoryMB},
		Disk: nodeDiskWire{r.DiskMB}, Networks: r.Networks, MinDynamicPort: r.MinDynamicPort, MaxDynamicPort: r.MaxDynamicPort,
	})
}

// UnmarshalJSON reads the nested wire shape MarshalJSON writes, and the
// flat one (CPU, Cores, MemoryMB, DiskMB) a not yet upgraded client agent
// registers with.
func (r *NodeResources) UnmarshalJSON(b []byte) error {
	var w struct {
		Cpu            json.RawMessage // also the flat form's "CPU"
		Cores          *int
		Memory         json.RawMessage
		MemoryMB       *int
		Disk           json.RawMessage
		DiskMB         *int
		Networks       []*NetworkResource
		MinDynamicPort int
		MaxDynamicPort int
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	out := NodeResources{Networks: w.Networks, MinDynamicPort: w.MinDynamicPort, MaxDynamicPort: w.MaxDynamicPort}
	var err error
	if out.CPU, err = nestedInt(w.Cpu, "CpuShares"); err != nil {
		return fmt.Errorf("Cpu: %w", err)
	}
	if c := bytes.TrimSpace(w.Cpu); len(c) > 0 && c[0] == '{' {
		if out.Cores, err = nestedInt(c, "TotalCpuCores"); err != nil {
			return fmt.Errorf("Cpu: %w", err)
		}
	}
	if w.Cores != nil {
		out.Cores = *w.Cores
	}
	if out.MemoryMB, err = nestedInt(w.Memory, "MemoryMB"); err != nil {
		return fmt.Errorf("Memory: %w", err)
	}
	if w.MemoryMB != nil {
		out.MemoryMB = *w.MemoryMB
	}
	if out.DiskMB, err = nestedInt(w.Disk, "DiskMB"); err != nil {
		return fmt.Errorf("Disk: %w", err)
	}
	if w.DiskMB != nil {
		out.DiskMB = *w.DiskMB
	}
	*r = out
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

// UnmarshalJSON reads the nested wire shape MarshalJSON writes, and the
// flat one (CPU, MemoryMB, DiskMB, ReservedPorts) of earlier versions.
func (r *NodeReservedResources) UnmarshalJSON(b []byte) error {
	var w struct {
		Cpu           json.RawMessage // also the flat form's "CPU"
		Memory        json.RawMessage
		MemoryMB      *int
		Disk          json.RawMessage
		DiskMB        *int
		Networks      struct{ ReservedHostPorts string }
		ReservedPorts *string
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	out := NodeReservedResources{ReservedPorts: w.Networks.ReservedHostPorts}
	var err error
	if out.CPU, err = nestedInt(w.Cpu, "CpuShares"); err != nil {
		return fmt.Errorf("Cpu: %w", err)
	}
	if out.MemoryMB, err = nestedInt(w.Memory, "MemoryMB"); err != nil {
		return fmt.Errorf("Memory: %w", err)
	}
	if w.MemoryMB != nil {
		out.MemoryMB = *w.MemoryMB
	}
	if out.DiskMB, err = nestedInt(w.Disk, "DiskMB"); err != nil {
		return fmt.Errorf("Disk: %w", err)
	}
	if w.DiskMB != nil {
		out.DiskMB = *w.DiskMB
	}
	if w.ReservedPorts != nil {
		out.ReservedPorts = *w.ReservedPorts
	}
	*r = out
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

// UnmarshalJSON reads the wire shape MarshalJSON writes; ForceDeadline
// and StartedAt may also be Unix nanoseconds, as earlier versions wrote
// them.
func (d *DrainStrategy) UnmarshalJSON(b []byte) error {
	var w struct {
		Deadline         int64
		IgnoreSystemJobs bool
		ForceDeadline    json.RawMessage
		StartedAt        json.RawMessage
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	force, err := wireTime(w.ForceDeadline)
	if err != nil {
		return fmt.Errorf("ForceDeadline: %w", err)
	}
	started, err := wireTime(w.StartedAt)
	if err != nil {
		return fmt.Errorf("StartedAt: %w", err)
	}
	*d = DrainStrategy{Deadline: w.Deadline, IgnoreSystemJobs: w.IgnoreSystemJobs, ForceDeadline: force, StartedAt: started}
	return nil
}

// wireTime reads a time written as RFC 3339 or as Unix nanoseconds and
// returns it as Unix nanoseconds (0 for the zero time, null or absent).
func wireTime(raw json.RawMessage) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	if raw[0] != '"' {
		var n int64
		err := json.Unmarshal(raw, &n)
		return n, err
	}
	var t time.Time
	if err := json.Unmarshal(raw, &t); err != nil {
		return 0, err
	}
	return timeUnixNano(t), nil
}

// NodeAllocChanges is the answer of GET
// /v1/node/:node_id/allocations/changes: how a client follows its node's
// allocations without reading every one of them at every change. Allocs
// names every allocation on the node with its ModifyIndex (so the client
// learns which ones the servers dropped); Changed holds, whole and with
// their job, those modified after the index the client asked from.
//
// Asked with delta=true, the answer is in proportion to the changes:
// Allocs is null, Removed names the allocations that left the node since
// that index (it may name some the client never knew), and Count is how
// many allocations the node holds, so the client can check that nothing
// else left; when the servers cannot tell what left (their log of the
// node does not reach back that far), Allocs names every allocation as
// above, and Removed is empty.
type NodeAllocChanges struct {
	Allocs  map[string]uint64
	Changed []*Allocation
	Removed []string `json:",omitempty"`
	// Count is the number of allocations on the node.
	Count int
}
