package api

import (
	"context"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestDeploymentWriteEndpoints(t *testing.T) {
	upd := `{"EvalID":"e1","EvalCreateIndex":17,"DeploymentModifyIndex":17,"Index":17}`
	wantUpd := withMeta{&state.DeploymentUpdateResponse{EvalID: "e1", EvalCreateIndex: 17, DeploymentModifyIndex: 17, Index: 17}, 17}
	prior := uint64(3)
	five := int64(5)
	cases := []endpointCase{
		{
			name: "promote",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Deployments().Promote(ctx, "d1", false, []string{"web"}, nil))
			},
			reply: reply{Header: indexHeader, Body: upd}, method: "PUT", path: "/v1/deployment/promote/d1",
			body: `{"DeploymentID":"d1","All":false,"Groups":["web"]}`, want: wantUpd,
		},
		{
			name:  "fail",
			call:  func(ctx context.Context, c *Client) (any, error) { return w(c.Deployments().Fail(ctx, "d1", nil)) },
			reply: reply{Header: indexHeader, Body: upd}, method: "PUT", path: "/v1/deployment/fail/d1",
			body: `{"DeploymentID":"d1"}`, want: wantUpd,
		},
		{
			name: "resume",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Deployments().Pause(ctx, "d1", false, nil))
			},
			reply: reply{Header: indexHeader, Body: upd}, method: "PUT", path: "/v1/deployment/pause/d1",
			body: `{"DeploymentID":"d1","Pause":false}`, want: wantUpd,
		},
		{
			name: "allocation health",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Deployments().SetAllocHealth(ctx, "d1", []string{"a1"}, nil, nil))
			},
			reply: reply{Header: indexHeader, Body: upd}, method: "PUT", path: "/v1/deployment/allocation-health/d1",
			body: `{"DeploymentID":"d1","HealthyAllocationIDs":["a1"],"UnhealthyAllocationIDs":null}`, want: wantUpd,
		},
		{
			name: "revert",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Jobs().Revert(ctx, "web", 1, &prior, nil))
			},
			reply: reply{Header: indexHeader, Body: `{"EvalID":"e2","JobModifyIndex":17}`}, method: "PUT", path: "/v1/job/web/revert",
			body: `{"JobID":"web","JobVersion":1,"EnforcePriorVersion":3,"MeshToken":"","SecretsToken":""}`,
			want: withMeta{&state.JobRegisterResponse{EvalID: "e2", JobModifyIndex: 17}, 17},
		},
		{
			name:  "stable",
			call:  func(ctx context.Context, c *Client) (any, error) { return w(c.Jobs().Stable(ctx, "web", 2, true, nil)) },
			reply: reply{Header: indexHeader, Body: `{"JobModifyIndex":17}`}, method: "PUT", path: "/v1/job/web/stable",
			body: `{"JobID":"web","JobVersion":2,"Stable":true}`, want: withMeta{&state.JobStabilityResponse{JobModifyIndex: 17}, 17},
		},
		{
			name:  "scale status",
			call:  func(ctx context.Context, c *Client) (any, error) { return q(c.Jobs().ScaleStatus(ctx, "web", nil)) },
			reply: reply{Header: indexHeader, Body: `{"JobID":"web","TaskGroups":{"web":{"Desired":5}}}`}, method: "GET", path: "/v1/job/web/scale",
			want: withMeta{&state.JobScaleStatus{JobID: "web", TaskGroups: map[string]*state.TaskGroupScaleStatus{"web": {Desired: 5}}}, 17},
		},
		{
			name: "scale",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Jobs().Scale(ctx, "web", &state.JobScaleRequest{Count: &five, Target: map[string]string{"Group": "web"}, Message: "m"}, nil))
			},
			reply: reply{Header: indexHeader, Body: `{"EvalID":"e3","JobModifyIndex":17}`}, method: "PUT", path: "/v1/job/web/scale",
			body: `{"Count":5,"Target":{"Group":"web"},"Message":"m","Error":false,"Meta":null,"EnforceIndex":false,"JobModifyIndex":0,"PolicyOverride":false}`,
			want: withMeta{&state.JobScaleResponse{EvalID: "e3", JobModifyIndex: 17}, 17},
		},
	}
	runEndpointCases(t, cases)
}
