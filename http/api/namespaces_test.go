package api

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestNamespacesEndpoints(t *testing.T) {
	cases := []endpointCase{
		{
			name: "list",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Namespaces().List(ctx, nil))
			},
			reply:  reply{Header: indexHeader, Body: `[{"Name":"default","Description":"Default shared namespace"}]`},
			method: "GET", path: "/v1/namespaces",
			want: withMeta{[]*state.Namespace{{Name: "default", Description: "Default shared namespace"}}, 17},
		},
		{
			name: "info",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Namespaces().Info(ctx, "prod", &QueryOptions{AllowStale: true}))
			},
			reply:  reply{Body: `{"Name":"prod","Meta":{"team":"a"}}`},
			method: "GET", path: "/v1/namespace/prod", query: url.Values{"stale": {"true"}},
			want: withMeta{&state.Namespace{Name: "prod", Meta: map[string]string{"team": "a"}}, 0},
		},
		{
			name: "register",
			call: func(ctx context.Context, c *Client) (any, error) {
				return wOnly(c.Namespaces().Register(ctx, &state.Namespace{Name: "prod", Description: "Production"}, nil))
			},
			reply:  reply{Header: indexHeader},
			method: "PUT", path: "/v1/namespace/prod",
			body: `{"Name":"prod","Description":"Production","Quota":"","Meta":null,"CreateIndex":0,"ModifyIndex":0}`,
			want: withMeta{nil, 17},
		},
		{
			name: "delete",
			call: func(ctx context.Context, c *Client) (any, error) {
				return wOnly(c.Namespaces().Delete(ctx, "prod", nil))
			},
			reply:  reply{Header: indexHeader, Body: `{"Index":17}`},
			method: "DELETE", path: "/v1/namespace/prod",
			want: withMeta{nil, 17},
		},
	}
	runEndpointCases(t, cases)
}

func TestNamespaceRegisterNeedsName(t *testing.T) {
	f := newFake(t)
	c := f.client(t, Config{})
	for _, ns := range []*state.Namespace{nil, {}} {
		if _, err := c.Namespaces().Register(context.Background(), ns, nil); err == nil || !strings.Contains(err.Error(), "name is required") {
			t.Fatalf("Register(%v) err = %v", ns, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}
