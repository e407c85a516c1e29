package store

import (
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

// ACL tables. They are persisted in snapshots: never rename one.
const (
	TableACLTokens    = "acl_tokens"
	TableACLPolicies  = "acl_policies"
	TableACLBootstrap = "acl_bootstrap"
)

// indexSecret finds tokens by the hash of their secret.
const indexSecret = "secret"

// ACL command types (range 40-49; see commands.go).
const (
	ACLTokenUpsertRequestType  MessageType = 40
	ACLTokenDeleteRequestType  MessageType = 41
	ACLPolicyUpsertRequestType MessageType = 42
	ACLPolicyDeleteRequestType MessageType = 43
	ACLBootstrapRequestType    MessageType = 44
)

// ACLTokenUpsertRequest creates or updates tokens, all or none.
//
// A token whose AccessorID is new is created: it must carry SecretHash
// (the leader hashed its secret) and CreateTime. An existing token is
// updated: Name, Type, Policies, Global and Subject are replaced; its
// secret, CreateTime and expiry are kept whatever the request says. An
// update of a token that no longer exists (SecretHash empty) fails with
// ErrNotFound. Every policy named must exist.
type ACLTokenUpsertRequest struct {
	Tokens []*state.ACLToken
}

// ACLTokenDeleteRequest deletes tokens, all or none: an unknown accessor
// fails the whole request with ErrNotFound.
type ACLTokenDeleteRequest struct {
	AccessorIDs []string
}

// ACLPolicyUpsertRequest creates or replaces policies, all or none. Rules
// are validated again in Apply (the parser is deterministic), so a bad
// policy never reaches the store whoever proposed it.
type ACLPolicyUpsertRequest struct {
	Policies []*state.ACLPolicy
}

// ACLPolicyDeleteRequest deletes policies, all or none. Tokens naming a
// deleted policy keep the name and simply lose its rules, as in Nomad; a
// policy re-created under that name applies to them again.
type ACLPolicyDeleteRequest struct {
	Names []string
}

// ACLBootstrapRequest creates the first management token. It succeeds once;
// afterwards only a request whose ResetIndex equals the bootstrap's current
// reset index (the ModifyIndex of the bootstrap record, which the leader
// read from the operator's reset file) succeeds, and moves the reset index.
//
// AdminUser, when set, is the site administrator the token speaks for on
// the management API, as TFE's first administrator: it is created with
// the token, or, when a user of the same username exists (a bootstrap
// after a reset), that user is made a site administrator and the token
// speaks for them. Token.Subject is set to the user either way.
type ACLBootstrapRequest struct {
	Token      *state.ACLToken
	ResetIndex uint64
	AdminUser  *mgmt.User `json:",omitempty"`
}

// aclCommand returns the command of type t in this area's range, if any.
func aclCommand(t MessageType) (command, bool) {
	switch t {
	case ACLTokenUpsertRequestType:
		return handler(applyACLTokenUpsert), true
	case ACLTokenDeleteRequestType:
		return handler(applyACLTokenDelete), true
	case ACLPolicyUpsertRequestType:
		return handler(applyACLPolicyUpsert), true
	case ACLPolicyDeleteRequestType:
		return handler(applyACLPolicyDelete), true
	case ACLBootstrapRequestType:
		return handler(applyACLBootstrap), true
	}
	return command{}, false
}

// aclTables are this area's tables.
func aclTables() []tableDef {
	return []tableDef{
		{
			name: TableACLTokens,
			indexes: map[string]keyFunc{
				indexID:     func(o any) []any { return []any{o.(*state.ACLToken).AccessorID} },
				indexSecret: func(o any) []any { return []any{o.(*state.ACLToken).SecretHash} },
			},
			newRow: func() any { return new(state.ACLToken) },
		},
		{
			name: TableACLPolicies,
			indexes: map[string]keyFunc{
				indexID: func(o any) []any { return []any{o.(*state.ACLPolicy).Name} },
			},
			newRow: func() any { return new(state.ACLPolicy) },
		},
		{
			name: TableACLBootstrap,
			indexes: map[string]keyFunc{
				indexID: func(o any) []any { return []any{o.(*state.ACLBootstrap).ID} },
			},
			newRow: func() any { return new(state.ACLBootstrap) },
		},
	}
}
