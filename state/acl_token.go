package state

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"time"
)

// Token types.
const (
	// ACLTokenTypeManagement may do everything, on both APIs.
	ACLTokenTypeManagement = "management"
	// ACLTokenTypeClient may do what its policies grant.
	ACLTokenTypeClient = "client"
)

// Token subject kinds: whom a token speaks for on the management API.
const (
	SubjectKindUser         = "user"
	SubjectKindTeam         = "team"
	SubjectKindOrganization = "organization"
)

// MinACLTokenTTL is the shortest ExpirationTTL a token may be created
// with: a token that expires sooner would mostly expire before its first
// use. There is no upper bound.
const MinACLTokenTTL = time.Minute

// maxACLTokenName bounds a token's name.
const maxACLTokenName = 256

// TokenSubject names the management-API principal a token acts as. The
// management API resolves what the subject may do; /v1 ignores it.
type TokenSubject struct {
	// Kind is user, team or organization.
	Kind string
	// ID is the subject's ID on the management API, e.g. "user-…".
	ID string
}

// ACLToken is one token of either API. The secret never enters the
// replicated state: the leader hashes it before proposing, the store keeps
// only SecretHash and finds tokens by it, and SecretID is filled only in
// the answers to create and bootstrap.
type ACLToken struct {
	// AccessorID names the token publicly (in lists, logs, deletes).
	AccessorID string
	// SecretID is the bearer secret, present only in the answer to the
	// request that created the token. `codec:"-"` keeps it out of the Raft
	// log and snapshots even if a caller leaves it set.
	SecretID string `codec:"-" json:",omitempty"`
	// SecretHash is HashSecret(SecretID), the store's lookup key.
	SecretHash string `json:"-"`
	Name       string
	// Type is management or client.
	Type string
	// Policies are the names of the ACL policies of a client token.
	Policies []string
	// Global is accepted and kept for Nomad compatibility: every token is
	// valid in the one region there is.
	Global bool
	// Subject, when set, is the management-API principal of the token.
	Subject *TokenSubject `json:",omitempty"`
	// ExpirationTime, when set, is when the token stops resolving.
	ExpirationTime *time.Time `json:",omitempty"`
	// ExpirationTTL is the lifetime asked for at creation (nanoseconds).
	ExpirationTTL time.Duration `json:",omitempty"`
	CreateTime    time.Time
	CreateIndex   uint64
	ModifyIndex   uint64
}

// HashSecret returns the hex SHA-256 of a token secret: what the store
// keeps and indexes. Secrets are random UUIDs (122 bits), so a plain hash
// suffices; no salt or stretching is needed against guessing.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// SecretMatches reports, in constant time, whether secret hashes to hash.
func SecretMatches(hash, secret string) bool {
	return subtle.ConstantTimeCompare([]byte(hash), []byte(HashSecret(secret))) == 1
}

// IsManagement reports whether t is a management token.
func (t *ACLToken) IsManagement() bool { return t.Type == ACLTokenTypeManagement }

// IsExpired reports whether t has expired at now. Apply never calls it:
// expiry is decided when a token is resolved, with the resolver's clock.
func (t *ACLToken) IsExpired(now time.Time) bool {
	return t.ExpirationTime != nil && !now.Before(*t.ExpirationTime)
}

// Copy returns a deep copy of t.
func (t *ACLToken) Copy() *ACLToken {
	if t == nil {
		return nil
	}
	c := *t
	c.Policies = append([]string(nil), t.Policies...)
	if t.Subject != nil {
		s := *t.Subject
		c.Subject = &s
	}
	if t.ExpirationTime != nil {
		e := *t.ExpirationTime
		c.ExpirationTime = &e
	}
	return &c
}

// Validate checks what a writer of the token chooses: name, type,
// policies and subject. Policy existence is checked by Apply.
func (t *ACLToken) Validate() error {
	v := &ValidationError{}
	if len(t.Name) > maxACLTokenName {
		v.Add("Name", "must be at most %d characters, got %d", maxACLTokenName, len(t.Name))
	}
	switch t.Type {
	case ACLTokenTypeManagement:
		if len(t.Policies) > 0 {
			v.Add("Policies", "a management token takes no policies: it may do everything")
		}
	case ACLTokenTypeClient:
		// A client token without policies can do nothing on /v1; it is
		// still useful when it carries a management-API subject.
		if len(t.Policies) == 0 && t.Subject == nil {
			v.Add("Policies", "a client token needs at least one policy")
		}
	case "":
		v.Add("Type", "required: management or client")
	default:
		v.Add("Type", "%q is not one of management, client", t.Type)
	}
	seen := map[string]bool{}
	for i, p := range t.Policies {
		switch {
		case p == "":
			v.Add(Fieldf("Policies", i, ""), "empty policy name")
		case seen[p]:
			v.Add(Fieldf("Policies", i, ""), "policy %q is listed twice", p)
		}
		seen[p] = true
	}
	if s := t.Subject; s != nil {
		switch s.Kind {
		case SubjectKindUser, SubjectKindTeam, SubjectKindOrganization:
		default:
			v.Add("Subject.Kind", "%q is not one of user, team, organization", s.Kind)
		}
		if s.ID == "" {
			v.Add("Subject.ID", "required")
		}
	}
	return v.Err()
}

// ACLBootstrap records that the first management token was made. Its
// ModifyIndex is the reset index: an operator re-arms bootstrap by
// writing it into the reset file in the leader's data dir.
type ACLBootstrap struct {
	// ID is always ACLBootstrapID: the table has one row.
	ID          string
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLBootstrapID is the ID of the one row that records the ACL bootstrap.
const ACLBootstrapID = "acl"
