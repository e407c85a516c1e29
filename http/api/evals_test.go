package api

import (
	"context"
	"net/url"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestEvalAllocDeploymentEndpoints(t *testing.T) {
	cases := []endpointCase{
		{
			name: "evaluations",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Evaluations().List(ctx, &QueryOptions{Namespace: "*", PerPage: 2, NextToken: "e0", Params: map[string]string{"job": "web"}}))
			},
			reply:  reply{Header: map[string]string{HeaderIndex: "17", HeaderNextToken: "e3"}, Body: `[{"ID":"e1","JobID":"web"}]`},
			method: "GET", path: "/v1/evaluations", query: url.Values{"namespace": {"*"}, "per_page": {"2"}, "next_token": {"e0"}, "job": {"web"}},
			want: withMeta{[]*state.Evaluation{{ID: "e1", JobID: "web"}}, 17},
		},
		{
			name:   "evaluation",
			call:   func(ctx context.Context, c *Client) (any, error) { return q(c.Evaluations().Info(ctx, "e1", nil)) },
			reply:  reply{Header: indexHeader, Body: `{"ID":"e1","Status":"complete"}`},
			method: "GET", path: "/v1/evaluation/e1",
			want: withMeta{&state.Evaluation{ID: "e1", Status: "complete"}, 17},
		},
		{
			name: "evaluation allocations",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Evaluations().Allocations(ctx, "e1", nil))
			},
			reply:  reply{Header: indexHeader, Body: `[{"ID":"a1","NodeID":"n1","JobType":"service"}]`},
			method: "GET", path: "/v1/evaluation/e1/allocations",
			want: withMeta{[]*state.AllocListStub{{ID: "a1", NodeID: "n1", JobType: "service"}}, 17},
		},
		{
			name: "allocations",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Allocations().List(ctx, &QueryOptions{Filter: `ClientStatus == "failed"`, Params: map[string]string{"task_states": "false"}}))
			},
			reply:  reply{Header: indexHeader, Body: `[{"ID":"a1","ClientStatus":"failed"}]`},
			method: "GET", path: "/v1/allocations", query: url.Values{"filter": {`ClientStatus == "failed"`}, "task_states": {"false"}},
			want: withMeta{[]*state.AllocListStub{{ID: "a1", ClientStatus: "failed"}}, 17},
		},
		{
			name:   "allocation",
			call:   func(ctx context.Context, c *Client) (any, error) { return q(c.Allocations().Info(ctx, "a1", nil)) },
			reply:  reply{Header: indexHeader, Body: `{"ID":"a1","Job":{"ID":"web"}}`},
			method: "GET", path: "/v1/allocation/a1",
			want: withMeta{&state.Allocation{ID: "a1", Job: &state.Job{ID: "web"}}, 17},
		},
		{
			name:   "deployments",
			call:   func(ctx context.Context, c *Client) (any, error) { return q(c.Deployments().List(ctx, nil)) },
			reply:  reply{Header: indexHeader, Body: `[{"ID":"d1","Status":"running"}]`},
			method: "GET", path: "/v1/deployments",
			want: withMeta{[]*state.Deployment{{ID: "d1", Status: "running"}}, 17},
		},
		{
			name:   "deployment",
			call:   func(ctx context.Context, c *Client) (any, error) { return q(c.Deployments().Info(ctx, "d1", nil)) },
			reply:  reply{Header: indexHeader, Body: `{"ID":"d1"}`},
			method: "GET", path: "/v1/deployment/d1",
			want: withMeta{&state.Deployment{ID: "d1"}, 17},
		},
		{
			name: "deployment allocations",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Deployments().Allocations(ctx, "d1", nil))
			},
			reply:  reply{Header: indexHeader, Body: `[{"ID":"a1"}]`},
			method: "GET", path: "/v1/deployment/allocations/d1",
			want: withMeta{[]*state.AllocListStub{{ID: "a1"}}, 17},
		},
		{
			name:   "gc",
			call:   func(ctx context.Context, c *Client) (any, error) { return wOnly(c.System().GarbageCollect(ctx, nil)) },
			reply:  reply{Header: indexHeader, Body: `{"Index":17}`},
			method: "PUT", path: "/v1/system/gc",
			want: withMeta{nil, 17},
		},
	}
	runEndpointCases(t, cases)
}
