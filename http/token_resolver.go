package http

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// anonymousACL is the ACL of a request without a token: it grants nothing.
var anonymousACL = state.NewACL(nil)

// BootstrapResetFile is the name of the bootstrap reset file in
// <data_dir>/server/. An operator who lost every management token writes
// the reset index (named in the refusal of a second bootstrap) into it on
// the leader; the next bootstrap then succeeds once and the file is
// removed.
const BootstrapResetFile = "acl-bootstrap-reset"

// DefaultACLCacheSize bounds the resolved-token cache of a TokenResolver.
const DefaultACLCacheSize = 4096

// TokenResolverConfig configures a TokenResolver. Store is required.
type TokenResolverConfig struct {
	Store *store.Store
	// Enforce turns capability checks on for /v1 (agent config `acl {
	// enabled = true }`). The ACL endpoints themselves always require
	// their tokens, since tokens also guard /api/v2.
	Enforce bool
	// Now is the clock that decides expiry; nil means time.Now.
	Now func() time.Time
	// BootstrapResetPath is the operator's bootstrap reset file
	// (<data_dir>/server/acl-bootstrap-reset); empty means none.
	BootstrapResetPath string
	// CacheSize bounds how many resolved tokens are kept; zero means
	// DefaultACLCacheSize.
	CacheSize int
}

// TokenResolver is the ACLResolver of a server. It finds tokens in the
// state store by the hash of their secret and compiles their policies into
// a state.ACL, and caches both by secret hash until a token or policy is
// written: it holds the watch channels of the ACL tables' index rows, so a
// cached request costs a SHA-256, a map lookup and a clock read, with no
// store read and no parse. Expiry is checked on every request with the
// configured clock.
type TokenResolver struct {
	cfg TokenResolverConfig

	mu sync.RWMutex
	// watch fires when the cache is stale: a token or policy changed, or
	// the store was restored from a snapshot. Nil before the first fill.
	watch []<-chan struct{}
	// gen counts cache resets, so a fill that raced with a reset is
	// dropped rather than stored into the fresh cache.
	gen     uint64
	entries map[[sha256.Size]byte]resolvedToken

	// compiles counts policy compilations (cache misses of client tokens),
	// for tests and metrics.
	compiles atomic.Int64
}

var _ ACLResolver = (*TokenResolver)(nil)

// resolvedToken is a token and its compiled ACL.
type resolvedToken struct {
	token *state.ACLToken
	acl   *state.ACL
}

// NewTokenResolver validates cfg and returns a resolver.
func NewTokenResolver(cfg TokenResolverConfig) (*TokenResolver, error) {
	if cfg.Store == nil {
		return nil, errors.New("http: TokenResolverConfig.Store is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = DefaultACLCacheSize
	}
	return &TokenResolver{cfg: cfg, entries: map[[sha256.Size]byte]resolvedToken{}}, nil
}

// Enforcing reports whether /v1 endpoints check capabilities.
func (t *TokenResolver) Enforcing() bool { return t.cfg.Enforce }

// BootstrapResetPath is the bootstrap reset file, or "".
func (t *TokenResolver) BootstrapResetPath() string { return t.cfg.BootstrapResetPath }

// ResolveToken returns what secret may do. An empty secret is anonymous:
// an ACL that grants nothing and a nil token. A secret of no token, or of
// an expired one, is state.ErrACLTokenNotFound.
func (t *TokenResolver) ResolveToken(secret string) (*state.ACL, *state.ACLToken, error) {
	if secret == "" {
		return anonymousACL, nil, nil
	}
	key := secretKey(secret)
	t.mu.RLock()
	e, hit := t.entries[key]
	fresh := t.freshLocked()
	t.mu.RUnlock()
	if !hit || !fresh {
		var err error
		if e, err = t.fill(secret, key); err != nil {
			return nil, nil, err
		}
	}
	if e.token.IsExpired(t.cfg.Now()) {
		return nil, nil, state.ErrACLTokenNotFound
	}
	return e.acl, e.token, nil
}

// secretKey is the cache key of a secret: its SHA-256, so the cache holds
// no secrets. Secrets up to 128 bytes (all real ones) are hashed from a
// stack copy: converting the string to a slice would allocate.
func secretKey(secret string) [sha256.Size]byte {
	var buf [128]byte
	if len(secret) > len(buf) {
		return sha256.Sum256([]byte(secret))
	}
	n := copy(buf[:], secret)
	return sha256.Sum256(buf[:n])
}

// freshLocked reports whether no ACL table changed since the cache was
// filled. t.mu must be held.
func (t *TokenResolver) freshLocked() bool {
	if t.watch == nil {
		return false
	}
	for _, ch := range t.watch {
		select {
		case <-ch:
			return false
		default:
		}
	}
	return true
}

// fill resolves secret from the store and caches the result. Unknown
// secrets are not cached: anyone may send them, and a miss is a cheap
// index lookup.
func (t *TokenResolver) fill(secret string, key [sha256.Size]byte) (resolvedToken, error) {
	gen, err := t.refresh()
	if err != nil {
		return resolvedToken{}, err
	}
	// Everything below is read after the watch channels were taken, so
	// a write that it misses fires them and empties the cache again.
	tok, err := t.cfg.Store.ACLTokenBySecret(nil, secret)
	if err != nil {
		return resolvedToken{}, fmt.Errorf("resolve token: %w", err)
	}
	if tok == nil {
		return resolvedToken{}, state.ErrACLTokenNotFound
	}
	e := resolvedToken{token: tok, acl: state.ManagementACL()}
	if !tok.IsManagement() {
		if e.acl, err = t.compile(tok); err != nil {
			return resolvedToken{}, err
		}
	}
	t.mu.Lock()
	if t.gen == gen {
		if len(t.entries) >= t.cfg.CacheSize {
			// Crude but bounded; a full cache means thousands of tokens
			// in active use.
			clear(t.entries)
		}
		t.entries[key] = e
	}
	t.mu.Unlock()
	return e, nil
}

// refresh empties a stale cache and takes new watch channels. It returns
// the cache generation fills must match.
func (t *TokenResolver) refresh() (uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.freshLocked() {
		return t.gen, nil
	}
	ws := memdb.NewWatchSet()
	ws.Add(t.cfg.Store.AbandonCh())
	if err := t.cfg.Store.WatchACL(ws); err != nil {
		return 0, err
	}
	t.watch = t.watch[:0]
	for ch := range ws {
		t.watch = append(t.watch, ch)
	}
	clear(t.entries)
	t.gen++
	return t.gen, nil
}

// compile builds the ACL of a client token from its policies.
func (t *TokenResolver) compile(tok *state.ACLToken) (*state.ACL, error) {
	t.compiles.Add(1)
	rules := make([]*state.PolicyRules, 0, len(tok.Policies))
	for _, name := range tok.Policies {
		p, err := t.cfg.Store.ACLPolicyByName(nil, name)
		if err != nil {
			return nil, fmt.Errorf("resolve policy %q: %w", name, err)
		}
		if p == nil {
			continue // deleted since the token was written: it grants nothing
		}
		r, err := state.ParsePolicyRules(p.Rules)
		if err != nil {
			// Stored rules were validated by Apply; a failure here means
			// a newer server wrote rules this one does not understand.
			// Granting nothing for them is the safe reading.
			continue
		}
		rules = append(rules, r)
	}
	return state.NewACL(rules), nil
}
