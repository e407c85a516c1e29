package api

import (
	"context"

	"github.com/schedhq/sched/state"
)

// AllocListStub is one entry of the allocation lists: an allocation
// without its job. AllocatedResources appear when asked for with
// QueryOptions.Params["resources"] = "true"; Params["task_states"] =
// "false" leaves TaskStates out.
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
	AllocatedResources *state.AllocatedResources
	DesiredStatus      string
	DesiredDescription string
	DesiredTransition  state.DesiredTransition
	ClientStatus       string
	ClientDescription  string
	TaskStates         map[string]*state.TaskState
	DeploymentStatus   *state.AllocDeploymentStatus
	FollowupEvalID     string
	NextAllocation     string
	PreviousAllocation string
	RescheduleTracker  *state.RescheduleTracker
	CreateIndex        uint64
	ModifyIndex        uint64
	// CreateTime and ModifyTime are Unix nanoseconds.
	CreateTime int64
	ModifyTime int64
}

// Allocations is the client of /v1/allocations and /v1/allocation/:id.
type Allocations struct{ c *Client }

// Allocations returns the allocation endpoints.
func (c *Client) Allocations() *Allocations { return &Allocations{c: c} }

// List returns the allocations of the namespace ("*" for all), filtered
// by q's Prefix and Filter.
func (a *Allocations) List(ctx context.Context, q *QueryOptions) ([]*AllocListStub, *QueryMeta, error) {
	return get[[]*AllocListStub](ctx, a.c, "/v1/allocations", nil, q)
}

// Info returns an allocation of the namespace, with its job.
func (a *Allocations) Info(ctx context.Context, id string, q *QueryOptions) (*state.Allocation, *QueryMeta, error) {
	return get[*state.Allocation](ctx, a.c, PathOf("v1", "allocation", id), nil, q)
}
