package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

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
	DeploymentID       string `json:",omitempty"`
	DeploymentStatus   *AllocDeploymentStatus
	FollowupEvalID     string
	NextAllocation     string
	PreviousAllocation string
	RescheduleTracker  *RescheduleTracker
	// PreemptedAllocations and PreemptedByAllocation are the
	// allocation's (Allocation).
	PreemptedAllocations  []string `json:",omitempty"`
	PreemptedByAllocation string   `json:",omitempty"`
	CreateIndex           uint64
	ModifyIndex           uint64
	CreateTime            int64
	ModifyTime            int64
}

// Stub returns a's list entry with its task states and without its
// resources (the defaults of the list endpoints).
func (a *Allocation) Stub() *AllocListStub {
	stub := &AllocListStub{
		ID: a.ID, EvalID: a.EvalID, Name: a.Name, Namespace: a.Namespace, NodeID: a.NodeID,
		NodeName: a.NodeName, JobID: a.JobID, TaskGroup: a.TaskGroup,
		DesiredStatus: a.DesiredStatus, DesiredDescription: a.DesiredDescription,
		DesiredTransition: a.DesiredTransition, ClientStatus: a.ClientStatus,
		ClientDescription: a.ClientDescription, TaskStates: a.TaskStates, DeploymentID: a.DeploymentID,
		DeploymentStatus: a.DeploymentStatus, FollowupEvalID: a.FollowupEvalID, NextAllocation: a.NextAllocation,
		PreviousAllocation: a.PreviousAllocation, RescheduleTracker: a.RescheduleTracker,
		PreemptedAllocations: a.PreemptedAllocations, PreemptedByAllocation: a.PreemptedByAllocation,
		CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex, CreateTime: a.CreateTime, ModifyTime: a.ModifyTime,
	}
	if a.Job != nil {
		stub.JobType, stub.JobVersion = a.Job.Type, a.Job.Version
	}
	return stub
}

// allocatedTaskResourcesWire is the /v1 form of AllocatedTaskResources:
// Nomad's nested shape, CPU under Cpu.CpuShares and memory under
// Memory.MemoryMB, so Nomad's clients decode it.
type allocatedTaskResourcesWire struct {
	Cpu      allocatedCPUWire
	Memory   allocatedMemoryWire
	Networks []*NetworkResource
}

type allocatedCPUWire struct{ CpuShares int }

type allocatedMemoryWire struct {
	MemoryMB    int
	MemoryMaxMB int `json:",omitempty"`
}

// MarshalJSON writes r in the nested wire shape
// ({"Cpu":{"CpuShares":N},"Memory":{"MemoryMB":M},"Networks":[...]}).
func (r AllocatedTaskResources) MarshalJSON() ([]byte, error) {
	return json.Marshal(allocatedTaskResourcesWire{
		Cpu: allocatedCPUWire{r.CPU}, Memory: allocatedMemoryWire{r.MemoryMB, r.MemoryMaxMB}, Networks: r.Networks,
	})
}

// UnmarshalJSON reads the nested wire shape MarshalJSON writes, and the
// flat one ({"CPU":N,"MemoryMB":M}) of earlier versions, which a client
// agent may have kept on disk or a not yet upgraded agent may send.
func (r *AllocatedTaskResources) UnmarshalJSON(b []byte) error {
	var w struct {
		Cpu      json.RawMessage // also the flat form's "CPU"
		Memory   json.RawMessage
		MemoryMB *int
		Networks []*NetworkResource
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	cpu, err := nestedInt(w.Cpu, "CpuShares")
	if err != nil {
		return fmt.Errorf("Cpu: %w", err)
	}
	mem, err := nestedInt(w.Memory, "MemoryMB")
	if err != nil {
		return fmt.Errorf("Memory: %w", err)
	}
	memMax, err := nestedInt(w.Memory, "MemoryMaxMB")
	if err != nil || w.MemoryMB != nil {
		memMax = 0 // the flat form had none
	}
	if w.MemoryMB != nil {
		mem = *w.MemoryMB
	}
	*r = AllocatedTaskResources{CPU: cpu, MemoryMB: mem, MemoryMaxMB: memMax, Networks: w.Networks}
	return nil
}

// nestedInt reads an integer that the wire shape nests in an object under
// inner ({"CpuShares":N}) and an earlier shape wrote bare (N). Absent or
// null is 0.
func nestedInt(raw json.RawMessage, inner string) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	if raw[0] != '{' {
		var n int
		err := json.Unmarshal(raw, &n)
		return n, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, err
	}
	for k, v := range m {
		if strings.EqualFold(k, inner) {
			var n int
			if err := json.Unmarshal(v, &n); err != nil {
				return 0, fmt.Errorf("%s: %w", inner, err)
			}
			return n, nil
		}
	}
	return 0, nil
}

// ServerTerminal reports whether servers want the allocation stopped.
func (a *AllocListStub) ServerTerminal() bool {
	return a.DesiredStatus == AllocDesiredStatusStop || a.DesiredStatus == AllocDesiredStatusEvict
}

// Terminal reports whether the allocation is stopped or finished.
func (a *AllocListStub) Terminal() bool {
	switch a.ClientStatus {
	case AllocClientStatusComplete, AllocClientStatusFailed, AllocClientStatusLost:
		return true
	}
	return a.ServerTerminal()
}
