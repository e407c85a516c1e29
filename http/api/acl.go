package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/schedhq/sched/state"
)

// ACLTokens is the client of /v1/acl/bootstrap, /v1/acl/tokens and
// /v1/acl/token. A token's SecretID is only ever returned by Bootstrap and
// Create: keep it then, no read shows it again.
type ACLTokens struct{ c *Client }

// ACLTokens returns the token endpoints.
func (c *Client) ACLTokens() *ACLTokens { return &ACLTokens{c: c} }

// aclTokenBody is what a create or update sends: the fields a caller
// chooses, nothing the server owns.
type aclTokenBody struct {
	AccessorID     string `json:",omitempty"`
	Name           string
	Type           string
	Policies       []string
	Global         bool
	Subject        *state.TokenSubject `json:",omitempty"`
	ExpirationTTL  time.Duration       `json:",omitempty"`
	ExpirationTime *time.Time          `json:",omitempty"`
}

func tokenBody(t *state.ACLToken) aclTokenBody {
	return aclTokenBody{AccessorID: t.AccessorID, Name: t.Name, Type: t.Type, Policies: t.Policies, Global: t.Global,
		Subject: t.Subject, ExpirationTTL: t.ExpirationTTL, ExpirationTime: t.ExpirationTime}
}

// Bootstrap creates the first management token. secret, when not empty,
// is used as its SecretID (a UUID); otherwise the server generates one.
// The server refuses a second bootstrap with a 400 that names the reset
// index.
func (a *ACLTokens) Bootstrap(ctx context.Context, secret string, w *WriteOptions) (*state.ACLToken, *WriteMeta, error) {
	return a.BootstrapOpts(ctx, ACLBootstrapOptions{Secret: secret}, w)
}

// ACLBootstrapOptions are the choices of a bootstrap; every field may be
// left empty.
type ACLBootstrapOptions struct {
	// Secret is the token's SecretID (a UUID); the server generates one
	// when empty.
	Secret string
	// AdminName and AdminEmail name the site administrator of the
	// management API the token speaks for (server defaults: admin,
	// admin@localhost).
	AdminName, AdminEmail string
}

// BootstrapOpts is Bootstrap with every choice of ACLBootstrapOptions.
func (a *ACLTokens) BootstrapOpts(ctx context.Context, o ACLBootstrapOptions, w *WriteOptions) (*state.ACLToken, *WriteMeta, error) {
	body := map[string]string{}
	for k, v := range map[string]string{"BootstrapSecret": o.Secret, "AdminName": o.AdminName, "AdminEmail": o.AdminEmail} {
		if v != "" {
			body[k] = v
		}
	}
	var b any
	if len(body) > 0 {
		b = body
	}
	return send[*state.ACLToken](ctx, a.c, http.MethodPost, "/v1/acl/bootstrap", nil, w, b)
}

// Create creates a token from tok's Name, Type, Policies, Global,
// Subject and ExpirationTTL (or ExpirationTime); the answer carries the
// new AccessorID and SecretID.
func (a *ACLTokens) Create(ctx context.Context, tok *state.ACLToken, w *WriteOptions) (*state.ACLToken, *WriteMeta, error) {
	if tok == nil {
		return nil, nil, errors.New("api: token is required")
	}
	if tok.AccessorID != "" {
		return nil, nil, errors.New("api: a new token has no AccessorID; use Update")
	}
	return send[*state.ACLToken](ctx, a.c, http.MethodPost, "/v1/acl/token", nil, w, tokenBody(tok))
}

// Update replaces the Name, Type, Policies, Global and Subject of the token
// tok.AccessorID names. Secret and expiry never change.
func (a *ACLTokens) Update(ctx context.Context, tok *state.ACLToken, w *WriteOptions) (*state.ACLToken, *WriteMeta, error) {
	if tok == nil || tok.AccessorID == "" {
		return nil, nil, errors.New("api: the token's AccessorID is required")
	}
	body := tokenBody(tok)
	body.ExpirationTTL, body.ExpirationTime = 0, nil
	return send[*state.ACLToken](ctx, a.c, http.MethodPost, PathOf("v1", "acl", "token", tok.AccessorID), nil, w, body)
}

// List returns every token (management tokens only), without secrets.
func (a *ACLTokens) List(ctx context.Context, q *QueryOptions) ([]*state.ACLToken, *QueryMeta, error) {
	return get[[]*state.ACLToken](ctx, a.c, "/v1/acl/tokens", nil, q)
}

// Info returns one token by accessor, without its secret.
func (a *ACLTokens) Info(ctx context.Context, accessor string, q *QueryOptions) (*state.ACLToken, *QueryMeta, error) {
	return get[*state.ACLToken](ctx, a.c, PathOf("v1", "acl", "token", accessor), nil, q)
}

// Self returns the caller's own token.
func (a *ACLTokens) Self(ctx context.Context, q *QueryOptions) (*state.ACLToken, *QueryMeta, error) {
	return get[*state.ACLToken](ctx, a.c, "/v1/acl/token/self", nil, q)
}

// Delete deletes a token by accessor.
func (a *ACLTokens) Delete(ctx context.Context, accessor string, w *WriteOptions) (*WriteMeta, error) {
	return a.c.write(ctx, http.MethodDelete, PathOf("v1", "acl", "token", accessor), nil, w, nil, nil)
}

// ACLPolicies is the client of /v1/acl/policies and /v1/acl/policy.
type ACLPolicies struct{ c *Client }

// ACLPolicies returns the policy endpoints.
func (c *Client) ACLPolicies() *ACLPolicies { return &ACLPolicies{c: c} }

// aclPolicyBody is what an upsert sends.
type aclPolicyBody struct {
	Name        string
	Description string
	Rules       string
}

// Upsert creates or replaces the policy p.Name with p's Description and
// Rules, and returns it as stored. Bad rules are a 400 naming their line
// and column.
func (p *ACLPolicies) Upsert(ctx context.Context, policy *state.ACLPolicy, w *WriteOptions) (*state.ACLPolicy, *WriteMeta, error) {
	if policy == nil || policy.Name == "" {
		return nil, nil, errors.New("api: policy name is required")
	}
	body := aclPolicyBody{Name: policy.Name, Description: policy.Description, Rules: policy.Rules}
	return send[*state.ACLPolicy](ctx, p.c, http.MethodPut, PathOf("v1", "acl", "policy", policy.Name), nil, w, body)
}

// List returns the policies the token may see: every one for a
// management token, its own otherwise.
func (p *ACLPolicies) List(ctx context.Context, q *QueryOptions) ([]*state.ACLPolicy, *QueryMeta, error) {
	return get[[]*state.ACLPolicy](ctx, p.c, "/v1/acl/policies", nil, q)
}

// Info returns one policy.
func (p *ACLPolicies) Info(ctx context.Context, name string, q *QueryOptions) (*state.ACLPolicy, *QueryMeta, error) {
	return get[*state.ACLPolicy](ctx, p.c, PathOf("v1", "acl", "policy", name), nil, q)
}

// Delete deletes a policy. Tokens that name it keep the name and lose its
// rules.
func (p *ACLPolicies) Delete(ctx context.Context, name string, w *WriteOptions) (*WriteMeta, error) {
	return p.c.write(ctx, http.MethodDelete, PathOf("v1", "acl", "policy", name), nil, w, nil, nil)
}
