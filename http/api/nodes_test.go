package api

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

func TestNodesEndpoints(t *testing.T) {
	node := &state.Node{ID: "n1", SecretID: "s1", Name: "node-1", Datacenter: "dc1"}
	nodeJSON := testutil.MustJSON(t, node)
	ttl := `{"HeartbeatTTL":17000000000,"EvalIDs":["e1"],"EvalCreateIndex":17,"NodeModifyIndex":17,"Index":17}`
	ttlWant := &state.NodeUpdateResponse{HeartbeatTTL: 17 * time.Second, EvalIDs: []string{"e1"}, EvalCreateIndex: 17, NodeModifyIndex: 17, Index: 17}
	cases := []endpointCase{
		{
			name: "list",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Nodes().List(ctx, &QueryOptions{Prefix: "n", Filter: `Status == "ready"`, Params: map[string]string{"resources": "true"}}))
			},
			reply:  reply{Header: indexHeader, Body: `[{"ID":"n1","Status":"ready","NodeResources":{"Cpu":{"CpuShares":4000}}}]`},
			method: "GET", path: "/v1/nodes", query: url.Values{"prefix": {"n"}, "filter": {`Status == "ready"`}, "resources": {"true"}},
			want: withMeta{[]*state.NodeListStub{{ID: "n1", Status: "ready", NodeResources: &state.NodeResources{CPU: 4000}}}, 17},
		},
		{
			name: "info",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Nodes().Info(ctx, "n1", nil))
			},
			reply:  reply{Header: indexHeader, Body: nodeJSON},
			method: "GET", path: "/v1/node/n1",
			want: withMeta{&state.Node{ID: "n1", Name: "node-1", Datacenter: "dc1"}, 17},
		},
		{
			name: "allocations, blocking",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Nodes().Allocations(ctx, "n1", &QueryOptions{WaitIndex: 9, WaitTime: time.Minute}))
			},
			reply:  reply{Header: indexHeader, Body: `[{"ID":"a1","NodeID":"n1"}]`},
			method: "GET", path: "/v1/node/n1/allocations", query: url.Values{"index": {"9"}, "wait": {"1m0s"}},
			want: withMeta{[]*state.Allocation{{ID: "a1", NodeID: "n1"}}, 17},
		},
		{
			name: "allocation changes, each job once",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Nodes().AllocationChangesShared(ctx, "n1", 5, &QueryOptions{WaitIndex: 5}))
			},
			reply: reply{Header: indexHeader, Body: `{"Allocs":{"a1":6,"a2":7,"a3":7},"Changed":[` +
				`{"ID":"a1","Namespace":"default","JobID":"j","Job":{"ID":"j","Version":1}},` +
				`{"ID":"a2","Namespace":"default","JobID":"j","Job":{"ID":"j","Version":2}},` +
				`{"ID":"a3","Namespace":"default","JobID":"j","Job":null}]}`},
			method: "GET", path: "/v1/node/n1/allocations/changes",
			query: url.Values{"index": {"5"}, "since": {"5"}, "server_changes": {"true"}, "shared_jobs": {"true"}, "metrics": {"false"}},
			want: withMeta{&state.NodeAllocChanges{Allocs: map[string]uint64{"a1": 6, "a2": 7, "a3": 7}, Changed: []*state.Allocation{
				{ID: "a1", Namespace: "default", JobID: "j", Job: &state.Job{ID: "j", Version: 1}},
				{ID: "a2", Namespace: "default", JobID: "j", Job: &state.Job{ID: "j", Version: 2}},
				{ID: "a3", Namespace: "default", JobID: "j", Job: &state.Job{ID: "j", Version: 2}},
			}}, 17},
		},
		{
			name: "allocation delta",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Nodes().AllocationDelta(ctx, "n1", 5, &QueryOptions{WaitIndex: 5}))
			},
			reply: reply{Header: indexHeader, Body: `{"Allocs":null,"Changed":[` +
				`{"ID":"a2","Namespace":"default","JobID":"j","Job":{"ID":"j","Version":2}},` +
				`{"ID":"a3","Namespace":"default","JobID":"j","Job":null}],"Removed":["a1"],"Count":2}`},
			method: "GET", path: "/v1/node/n1/allocations/changes",
			query: url.Values{"index": {"5"}, "since": {"5"}, "server_changes": {"true"}, "shared_jobs": {"true"}, "delta": {"true"}, "metrics": {"false"}},
			want: withMeta{&state.NodeAllocChanges{Changed: []*state.Allocation{
				{ID: "a2", Namespace: "default", JobID: "j", Job: &state.Job{ID: "j", Version: 2}},
				{ID: "a3", Namespace: "default", JobID: "j", Job: &state.Job{ID: "j", Version: 2}},
			}, Removed: []string{"a1"}, Count: 2}, 17},
		},
		{
			name: "register sends the secret",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Nodes().Register(ctx, node, nil))
			},
			reply:  reply{Header: indexHeader, Body: ttl},
			method: "PUT", path: "/v1/node/register",
			body: `{"Node":` + nodeJSON[:len(nodeJSON)-1] + `,"SecretID":"s1"}}`,
			want: withMeta{ttlWant, 17},
		},
		{
			name: "heartbeat",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Nodes().Heartbeat(ctx, "n1", nil))
			},
			reply:  reply{Header: indexHeader, Body: ttl},
			method: "PUT", path: "/v1/node/n1/heartbeat",
			want: withMeta{ttlWant, 17},
		},
		{
			name: "status",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Nodes().UpdateStatus(ctx, "n1", "down", "maintenance", nil))
			},
			reply:  reply{Header: indexHeader, Body: ttl},
			method: "PUT", path: "/v1/node/n1/status",
			body: `{"Status":"down","StatusDescription":"maintenance"}`,
			want: withMeta{ttlWant, 17},
		},
		{
			name: "eligibility",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Nodes().ToggleEligibility(ctx, "n1", false, nil))
			},
			reply:  reply{Header: indexHeader, Body: `{"Index":17}`},
			method: "PUT", path: "/v1/node/n1/eligibility",
			body: `{"Eligibility":"ineligible"}`,
			want: withMeta{&state.NodeUpdateResponse{Index: 17}, 17},
		},
		{
			name: "drain",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Nodes().UpdateDrain(ctx, "n1", &state.DrainSpec{Deadline: time.Hour, IgnoreSystemJobs: true}, false, nil))
			},
			reply:  reply{Header: indexHeader, Body: `{"Index":17}`},
			method: "PUT", path: "/v1/node/n1/drain",
			body: `{"DrainSpec":{"Deadline":3600000000000,"IgnoreSystemJobs":true},"MarkEligible":false}`,
			want: withMeta{&state.NodeUpdateResponse{Index: 17}, 17},
		},
		{
			name: "cancel drain",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Nodes().UpdateDrain(ctx, "n1", nil, true, nil))
			},
			reply:  reply{Header: indexHeader, Body: `{"Index":17}`},
			method: "PUT", path: "/v1/node/n1/drain",
			body: `{"DrainSpec":null,"MarkEligible":true}`,
			want: withMeta{&state.NodeUpdateResponse{Index: 17}, 17},
		},
		{
			name: "report allocations",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Nodes().UpdateAllocs(ctx, "n1", []*state.AllocClientUpdate{{ID: "a1", ClientStatus: "failed", ClientDescription: "exit 1"}}, nil))
			},
			reply:  reply{Header: indexHeader, Body: `{"EvalIDs":["e2"],"Index":17}`},
			method: "PUT", path: "/v1/node/n1/allocations",
			body: `{"Allocs":[{"ID":"a1","ClientStatus":"failed","ClientDescription":"exit 1"}]}`,
			want: withMeta{&state.NodeAllocsUpdateResponse{EvalIDs: []string{"e2"}, Index: 17}, 17},
		},
		{
			name: "pools",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.NodePools().List(ctx, nil))
			},
			reply:  reply{Header: indexHeader, Body: `[{"Name":"all"},{"Name":"default"}]`},
			method: "GET", path: "/v1/node/pools",
			want: withMeta{[]*state.NodePool{{Name: "all"}, {Name: "default"}}, 17},
		},
		{
			name: "pool",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.NodePools().Info(ctx, "gpu", nil))
			},
			reply:  reply{Header: indexHeader, Body: `{"Name":"gpu","Description":"GPUs"}`},
			method: "GET", path: "/v1/node/pool/gpu",
			want: withMeta{&state.NodePool{Name: "gpu", Description: "GPUs"}, 17},
		},
		{
			name: "pool nodes",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.NodePools().Nodes(ctx, "gpu", nil))
			},
			reply:  reply{Header: indexHeader, Body: `[{"ID":"n1"}]`},
			method: "GET", path: "/v1/node/pool/gpu/nodes",
			want: withMeta{[]*state.NodeListStub{{ID: "n1"}}, 17},
		},
		{
			name: "pool register",
			call: func(ctx context.Context, c *Client) (any, error) {
				return wOnly(c.NodePools().Register(ctx, &state.NodePool{Name: "gpu", Description: "GPUs"}, nil))
			},
			reply:  reply{Header: indexHeader, Body: `{"Index":17}`},
			method: "PUT", path: "/v1/node/pool/gpu",
			body: testutil.MustJSON(t, &state.NodePool{Name: "gpu", Description: "GPUs"}),
			want: withMeta{nil, 17},
		},
		{
			name: "pool delete",
			call: func(ctx context.Context, c *Client) (any, error) {
				return wOnly(c.NodePools().Delete(ctx, "gpu", nil))
			},
			reply:  reply{Header: indexHeader, Body: `{"Index":17}`},
			method: "DELETE", path: "/v1/node/pool/gpu",
			want: withMeta{nil, 17},
		},
	}
	runEndpointCases(t, cases)
}

func TestNodeRegisterNil(t *testing.T) {
	f := newFake(t)
	if _, _, err := f.client(t, Config{}).Nodes().Register(context.Background(), nil, nil); err == nil {
		t.Fatal("registered a nil node")
	}
	if len(f.requests()) != 0 {
		t.Error("sent a request")
	}
}
