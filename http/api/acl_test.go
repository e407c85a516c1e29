package api

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

func TestACLTokenEndpoints(t *testing.T) {
	created := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tokJSON := `{"AccessorID":"a1","SecretID":"s1","Name":"ci","Type":"client","Policies":["readers"],"Global":false,"CreateTime":"2025-01-02T03:04:05Z","CreateIndex":9,"ModifyIndex":9}`
	tok := &state.ACLToken{AccessorID: "a1", SecretID: "s1", Name: "ci", Type: "client", Policies: []string{"readers"}, CreateTime: created, CreateIndex: 9, ModifyIndex: 9}
	noSecret := `{"AccessorID":"a1","Name":"ci","Type":"client","Policies":["readers"],"CreateTime":"2025-01-02T03:04:05Z","CreateIndex":9,"ModifyIndex":9}`
	stored := *tok
	stored.SecretID = ""
	cases := []endpointCase{
		{
			name: "bootstrap",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.ACLTokens().Bootstrap(ctx, "", nil))
			},
			reply:  reply{Header: indexHeader, Body: tokJSON},
			method: "POST", path: "/v1/acl/bootstrap",
			want: withMeta{tok, 17},
		},
		{
			name: "bootstrap with a chosen secret",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.ACLTokens().Bootstrap(ctx, "0b6c9a44-2c1c-4e55-9d2a-6a1f3ad0c7e1", nil))
			},
			reply:  reply{Header: indexHeader, Body: tokJSON},
			method: "POST", path: "/v1/acl/bootstrap",
			body: `{"BootstrapSecret":"0b6c9a44-2c1c-4e55-9d2a-6a1f3ad0c7e1"}`,
			want: withMeta{tok, 17},
		},
		{
			name: "create",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.ACLTokens().Create(ctx, &state.ACLToken{Name: "ci", Type: "client", Policies: []string{"readers"},
					ExpirationTTL: time.Hour, Subject: &state.TokenSubject{Kind: "user", ID: "user-1"}}, nil))
			},
			reply:  reply{Header: indexHeader, Body: tokJSON},
			method: "POST", path: "/v1/acl/token",
			body: `{"Name":"ci","Type":"client","Policies":["readers"],"Global":false,"Subject":{"Kind":"user","ID":"user-1"},"ExpirationTTL":3600000000000}`,
			want: withMeta{tok, 17},
		},
		{
			name: "update",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.ACLTokens().Update(ctx, &state.ACLToken{AccessorID: "a1", Name: "ci", Type: "client", Policies: []string{"readers"}, ExpirationTTL: time.Hour}, nil))
			},
			reply:  reply{Header: indexHeader, Body: noSecret},
			method: "POST", path: "/v1/acl/token/a1",
			body: `{"AccessorID":"a1","Name":"ci","Type":"client","Policies":["readers"],"Global":false}`,
			want: withMeta{&stored, 17},
		},
		{
			name: "list",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.ACLTokens().List(ctx, &QueryOptions{Prefix: "a"}))
			},
			reply:  reply{Header: indexHeader, Body: "[" + noSecret + "]"},
			method: "GET", path: "/v1/acl/tokens", query: map[string][]string{"prefix": {"a"}},
			want: withMeta{[]*state.ACLToken{&stored}, 17},
		},
		{
			name: "info",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.ACLTokens().Info(ctx, "a1", nil))
			},
			reply:  reply{Header: indexHeader, Body: noSecret},
			method: "GET", path: "/v1/acl/token/a1",
			want: withMeta{&stored, 17},
		},
		{
			name: "self",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.ACLTokens().Self(ctx, nil))
			},
			reply:  reply{Header: indexHeader, Body: noSecret},
			method: "GET", path: "/v1/acl/token/self",
			want: withMeta{&stored, 17},
		},
		{
			name: "delete",
			call: func(ctx context.Context, c *Client) (any, error) {
				return wOnly(c.ACLTokens().Delete(ctx, "a/1", nil))
			},
			reply:  reply{Header: indexHeader, Body: "null"},
			method: "DELETE", path: "/v1/acl/token/a%2F1",
			want: withMeta{nil, 17},
		},
	}
	runEndpointCases(t, cases)
}

func TestACLPolicyEndpoints(t *testing.T) {
	pol := &state.ACLPolicy{Name: "readers", Description: "d", Rules: `node { policy = "read" }`, CreateIndex: 4, ModifyIndex: 5}
	polJSON := `{"Name":"readers","Description":"d","Rules":"node { policy = \"read\" }","CreateIndex":4,"ModifyIndex":5}`
	cases := []endpointCase{
		{
			name: "upsert",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.ACLPolicies().Upsert(ctx, &state.ACLPolicy{Name: "readers", Description: "d", Rules: `node { policy = "read" }`, ModifyIndex: 99}, nil))
			},
			reply:  reply{Header: indexHeader, Body: polJSON},
			method: "PUT", path: "/v1/acl/policy/readers",
			body: `{"Name":"readers","Description":"d","Rules":"node { policy = \"read\" }"}`,
			want: withMeta{pol, 17},
		},
		{
			name: "list",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.ACLPolicies().List(ctx, nil))
			},
			reply:  reply{Header: indexHeader, Body: "[" + polJSON + "]"},
			method: "GET", path: "/v1/acl/policies",
			want: withMeta{[]*state.ACLPolicy{pol}, 17},
		},
		{
			name: "info",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.ACLPolicies().Info(ctx, "readers", nil))
			},
			reply:  reply{Header: indexHeader, Body: polJSON},
			method: "GET", path: "/v1/acl/policy/readers",
			want: withMeta{pol, 17},
		},
		{
			name: "delete",
			call: func(ctx context.Context, c *Client) (any, error) {
				return wOnly(c.ACLPolicies().Delete(ctx, "readers", nil))
			},
			reply:  reply{Header: indexHeader},
			method: "DELETE", path: "/v1/acl/policy/readers",
			want: withMeta{nil, 17},
		},
	}
	runEndpointCases(t, cases)
}

func TestACLClientRefusesBadInput(t *testing.T) {
	f := newFake(t)
	c := f.client(t, Config{})
	ctx := context.Background()
	checks := []struct {
		name string
		err  error
		want string
	}{
		{"create nil", second(c.ACLTokens().Create(ctx, nil, nil)), "token is required"},
		{"create with accessor", second(c.ACLTokens().Create(ctx, &state.ACLToken{AccessorID: "x"}, nil)), "use Update"},
		{"update without accessor", second(c.ACLTokens().Update(ctx, &state.ACLToken{}, nil)), "AccessorID is required"},
		{"policy without name", second(c.ACLPolicies().Upsert(ctx, &state.ACLPolicy{}, nil)), "policy name is required"},
	}
	for _, ch := range checks {
		if ch.err == nil || !strings.Contains(ch.err.Error(), ch.want) {
			t.Errorf("%s: %v, want %q", ch.name, ch.err, ch.want)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests sent for refused input", n)
	}
}

// second returns the error of a three-valued call.
func second[A, B any](_ A, _ B, err error) error { return err }
