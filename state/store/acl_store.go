package store

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

// ACLTokens lists tokens whose accessor starts with prefix, ordered by
// accessor. Stored tokens never hold a SecretID.
func (r reader) ACLTokens(ws memdb.WatchSet, prefix string) ([]*state.ACLToken, error) {
	return list[*state.ACLToken](ws, r.txn(), nil, TableACLTokens, indexID+"_prefix", prefixArg(prefix))
}

// ACLTokenByAccessorID returns a token, or nil.
func (r reader) ACLTokenByAccessorID(ws memdb.WatchSet, accessor string) (*state.ACLToken, error) {
	return first[*state.ACLToken](ws, r.txn(), TableACLTokens, indexID, accessor)
}

// ACLTokenBySecret returns the token whose secret is secret, or nil. The
// lookup is by hash; the hash found is compared again in constant time.
// Expiry is not checked here: the caller owns the clock.
func (r reader) ACLTokenBySecret(ws memdb.WatchSet, secret string) (*state.ACLToken, error) {
	if secret == "" {
		return nil, nil
	}
	tok, err := first[*state.ACLToken](ws, r.txn(), TableACLTokens, indexSecret, state.HashSecret(secret))
	if err != nil || tok == nil {
		return nil, err
	}
	if !state.SecretMatches(tok.SecretHash, secret) {
		return nil, nil
	}
	return tok, nil
}

// WatchACL adds to ws channels that fire when any token or policy is
// written or deleted, so a cache of resolved tokens knows when to drop
// what it holds without reading the store on every request. (Restore
// replaces the whole store: watch AbandonCh too.)
func (r reader) WatchACL(ws memdb.WatchSet) error {
	txn := r.txn()
	for _, table := range []string{TableACLTokens, TableACLPolicies} {
		// A missing row still has a watch channel: its insertion fires it.
		ch, _, err := txn.FirstWatch(TableIndex, indexID, table)
		if err != nil {
			return fmt.Errorf("watch %s: %w", table, err)
		}
		ws.Add(ch)
	}
	return nil
}

// ACLPolicies lists policies whose name starts with prefix, ordered by name.
func (r reader) ACLPolicies(ws memdb.WatchSet, prefix string) ([]*state.ACLPolicy, error) {
	return list[*state.ACLPolicy](ws, r.txn(), nil, TableACLPolicies, indexID+"_prefix", prefixArg(prefix))
}

// ACLPolicyByName returns a policy, or nil.
func (r reader) ACLPolicyByName(ws memdb.WatchSet, name string) (*state.ACLPolicy, error) {
	return first[*state.ACLPolicy](ws, r.txn(), TableACLPolicies, indexID, name)
}

// ACLBootstrapped reports whether ACL bootstrap has happened and, if so,
// its reset index.
func (r reader) ACLBootstrapped(ws memdb.WatchSet) (resetIndex uint64, done bool, err error) {
	b, err := first[*state.ACLBootstrap](ws, r.txn(), TableACLBootstrap, indexID, state.ACLBootstrapID)
	if err != nil || b == nil {
		return 0, false, err
	}
	return b.ModifyIndex, true, nil
}

// applyACLTokenUpsert creates or updates tokens (see ACLTokenUpsertRequest).
func applyACLTokenUpsert(t *writeTxn, req *ACLTokenUpsertRequest) (any, error) {
	if len(req.Tokens) == 0 {
		return nil, state.Invalidf("Tokens", "at least one token is required")
	}
	for i, tok := range req.Tokens {
		if err := upsertACLToken(t, tok); err != nil {
			return nil, prefixField(state.Fieldf("Tokens", i, ""), err)
		}
	}
	return nil, nil
}

// upsertACLToken writes one token, creating or updating it.
func upsertACLToken(t *writeTxn, tok *state.ACLToken) error {
	if tok == nil {
		return state.Invalidf("", "missing token")
	}
	if tok.AccessorID == "" {
		return state.Invalidf("AccessorID", "required")
	}
	if err := tok.Validate(); err != nil {
		return err
	}
	for i, name := range tok.Policies {
		p, err := first[*state.ACLPolicy](nil, t.Txn, TableACLPolicies, indexID, name)
		if err != nil {
			return err
		}
		if p == nil {
			return state.Invalidf(state.Fieldf("Policies", i, ""), "policy %q does not exist", name)
		}
	}
	old, err := first[*state.ACLToken](nil, t.Txn, TableACLTokens, indexID, tok.AccessorID)
	if err != nil {
		return err
	}
	tok = tok.Copy()
	tok.SecretID = ""
	if old != nil {
		tok.SecretHash = old.SecretHash
		tok.CreateTime = old.CreateTime
		tok.CreateIndex = old.CreateIndex
		tok.ExpirationTime = old.ExpirationTime
		tok.ExpirationTTL = old.ExpirationTTL
	} else {
		if tok.SecretHash == "" {
			return state.NotFoundf("ACL token %q", tok.AccessorID)
		}
		if len(tok.SecretHash) != 64 {
			return state.Invalidf("SecretHash", "must be a hex SHA-256")
		}
		clash, err := first[*state.ACLToken](nil, t.Txn, TableACLTokens, indexSecret, tok.SecretHash)
		if err != nil {
			return err
		}
		if clash != nil {
			// Only a chosen (not generated) secret can collide.
			return state.Conflictf("a token with this secret already exists")
		}
		tok.CreateIndex = t.index
	}
	tok.ModifyIndex = t.index
	return t.insert(TableACLTokens, tok)
}

// applyACLTokenDelete deletes tokens, all or none.
func applyACLTokenDelete(t *writeTxn, req *ACLTokenDeleteRequest) (any, error) {
	if len(req.AccessorIDs) == 0 {
		return nil, state.Invalidf("AccessorIDs", "at least one accessor ID is required")
	}
	for _, id := range req.AccessorIDs {
		tok, err := first[*state.ACLToken](nil, t.Txn, TableACLTokens, indexID, id)
		if err != nil {
			return nil, err
		}
		if tok == nil {
			return nil, state.NotFoundf("ACL token %q", id)
		}
		if err := t.delete(TableACLTokens, tok); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// applyACLPolicyUpsert creates or replaces policies, all or none.
func applyACLPolicyUpsert(t *writeTxn, req *ACLPolicyUpsertRequest) (any, error) {
	if len(req.Policies) == 0 {
		return nil, state.Invalidf("Policies", "at least one policy is required")
	}
	for i, p := range req.Policies {
		if p == nil {
			return nil, state.Invalidf(state.Fieldf("Policies", i, ""), "missing policy")
		}
		if err := p.Validate(); err != nil {
			return nil, prefixField(state.Fieldf("Policies", i, ""), err)
		}
		old, err := first[*state.ACLPolicy](nil, t.Txn, TableACLPolicies, indexID, p.Name)
		if err != nil {
			return nil, err
		}
		c := *p
		c.CreateIndex = t.index
		if old != nil {
			c.CreateIndex = old.CreateIndex
		}
		c.ModifyIndex = t.index
		if err := t.insert(TableACLPolicies, &c); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// applyACLPolicyDelete deletes policies, all or none.
func applyACLPolicyDelete(t *writeTxn, req *ACLPolicyDeleteRequest) (any, error) {
	if len(req.Names) == 0 {
		return nil, state.Invalidf("Names", "at least one policy name is required")
	}
	for _, name := range req.Names {
		p, err := first[*state.ACLPolicy](nil, t.Txn, TableACLPolicies, indexID, name)
		if err != nil {
			return nil, err
		}
		if p == nil {
			return nil, state.NotFoundf("ACL policy %q", name)
		}
		if err := t.delete(TableACLPolicies, p); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// applyACLBootstrap creates the first management token, or a new one when
// the request carries the current reset index.
func applyACLBootstrap(t *writeTxn, req *ACLBootstrapRequest) (any, error) {
	old, err := first[*state.ACLBootstrap](nil, t.Txn, TableACLBootstrap, indexID, state.ACLBootstrapID)
	if err != nil {
		return nil, err
	}
	if old != nil && req.ResetIndex != old.ModifyIndex {
		return nil, state.Invalidf("", "%s", BootstrapDoneMessage(old.ModifyIndex))
	}
	if req.Token == nil || req.Token.Type != state.ACLTokenTypeManagement {
		return nil, state.Invalidf("Token.Type", "the bootstrap token must be a management token")
	}
	tok := req.Token
	if in := req.AdminUser; in != nil {
		admin, err := bootstrapAdmin(t, in)
		if err != nil {
			return nil, prefixField("AdminUser", err)
		}
		tok = tok.Copy()
		tok.Subject = &state.TokenSubject{Kind: state.SubjectKindUser, ID: admin.ID}
	}
	if err := upsertACLToken(t, tok); err != nil {
		return nil, prefixField("Token", err)
	}
	b := &state.ACLBootstrap{ID: state.ACLBootstrapID, CreateIndex: t.index, ModifyIndex: t.index}
	if old != nil {
		b.CreateIndex = old.CreateIndex
	}
	if err := t.insert(TableACLBootstrap, b); err != nil {
		return nil, err
	}
	return nil, nil
}

// Defaults of the bootstrap's site administrator.
const (
	DefaultAdminUsername = "admin"
	DefaultAdminEmail    = "admin@localhost"
)

// NewBootstrapAdmin returns the site administrator an ACL bootstrap
// creates (ACLBootstrapRequest.AdminUser): username and email default to
// DefaultAdminUsername and DefaultAdminEmail; its ID is derived from
// idSource, an ID of the leader's source (mgmt.IDFrom). Problems name the
// fields AdminName and AdminEmail of the bootstrap request.
func NewBootstrapAdmin(username, email string, now time.Time, idSource string) (*mgmt.User, error) {
	if username == "" {
		username = DefaultAdminUsername
	}
	if email == "" {
		email = DefaultAdminEmail
	}
	v := &state.ValidationError{}
	switch {
	case len(username) > mgmt.UsernameMaxLen:
		v.Add("AdminName", "must be at most %d characters long, got %d", mgmt.UsernameMaxLen, len(username))
	case !mgmt.UsernameRE.MatchString(username):
		v.Add("AdminName", "%q may contain only letters, numbers, ., - and _", username)
	}
	if msg := mgmt.ValidEmail(email); msg != "" {
		v.Add("AdminEmail", "%s", msg)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	return &mgmt.User{ID: mgmt.IDFrom(mgmt.PrefixUser, idSource), Username: username, Email: email, IsAdmin: true, CreatedAt: mgmt.Time(now)}, nil
}

// bootstrapAdmin creates the bootstrap's site administrator, or makes the
// existing user of the same username one, and returns the user.
func bootstrapAdmin(t *writeTxn, in *mgmt.User) (*mgmt.User, error) {
	old, err := first[*mgmt.User](nil, t.Txn, TableUsers, indexMgNameLower, strings.ToLower(in.Username))
	if err != nil {
		return nil, err
	}
	u := *in // User holds no references
	if old != nil {
		u = *old
	}
	u.IsAdmin = true
	out, err := applyUserUpsert(t, &UserUpsertRequest{User: &u})
	if err != nil {
		return nil, err
	}
	return out.(*mgmt.User), nil
}

// BootstrapDoneMessage is the refusal of a second bootstrap. It names the
// reset index an operator writes into the reset file to allow another.
func BootstrapDoneMessage(resetIndex uint64) string {
	return fmt.Sprintf("ACL bootstrap already done (reset index: %d)", resetIndex)
}
