package http

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// A snapshot restore replaces every table: tokens cached before it must
// not outlive it.
func TestACLResolverDropsCacheOnRestore(t *testing.T) {
	a := newACLHarness(t, true, "")
	snap, err := a.Store.Snapshot() // before any token
	if err != nil {
		t.Fatal(err)
	}
	var before bytes.Buffer
	if err := snap.Persist(&before); err != nil {
		t.Fatal(err)
	}
	mgmt := a.ManagementToken()
	if _, tok, err := a.resolver.ResolveToken(mgmt); err != nil || tok == nil {
		t.Fatalf("resolve: %v, %v", tok, err)
	}
	if err := a.Store.Restore(&before); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.resolver.ResolveToken(mgmt); !errors.Is(err, state.ErrACLTokenNotFound) {
		t.Errorf("token resolved after a restore that removed it: %v", err)
	}
}

func TestACLResolverAnonymousAndUnknown(t *testing.T) {
	a := newACLHarness(t, true, "")
	acl, tok, err := a.resolver.ResolveToken("")
	if err != nil || tok != nil || acl == nil || acl.IsManagement() || acl.AllowSomeNamespace() || acl.AllowNodeRead() {
		t.Errorf("anonymous = %v, %v, %v", acl, tok, err)
	}
	for range 3 {
		if _, _, err := a.resolver.ResolveToken("nope"); !errors.Is(err, state.ErrACLTokenNotFound) {
			t.Errorf("unknown secret: %v", err)
		}
	}
	a.resolver.mu.RLock()
	n := len(a.resolver.entries)
	a.resolver.mu.RUnlock()
	if n != 0 {
		t.Errorf("unknown secrets cached: %d entries", n)
	}
}

// Concurrent resolves while policies change: run with -race. Every answer
// must be one of the two policy versions, never a mix or an error.
func TestACLResolverConcurrentWithPolicyUpdates(t *testing.T) {
	a := newACLHarness(t, true, "")
	a.Apply(store.ACLPolicyUpsertRequestType, &store.ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: "p", Rules: `namespace "a" { policy = "read" }`}}})
	secret := a.Token(&state.ACLToken{Type: state.ACLTokenTypeClient, Policies: []string{"p"}})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Go(func() {
			for range 200 {
				acl, _, err := a.resolver.ResolveToken(secret)
				if err != nil {
					errs <- err
					return
				}
				if acl.AllowNamespaceOperation("a", "read-job") == acl.AllowNamespaceOperation("b", "read-job") {
					errs <- errors.New("an ACL granting both or neither namespace")
					return
				}
			}
		})
	}
	for i := range 50 {
		ns := "a"
		if i%2 == 0 {
			ns = "b"
		}
		a.Apply(store.ACLPolicyUpsertRequestType, &store.ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: "p", Rules: `namespace "` + ns + `" { policy = "read" }`}}})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// After the last update (namespace "a"), the next resolve sees it.
	acl, _, _ := a.resolver.ResolveToken(secret)
	if !acl.AllowNamespaceOperation("a", "read-job") {
		t.Error("the last policy version is not in effect")
	}
}

func TestNewTokenResolverNeedsStore(t *testing.T) {
	if _, err := NewTokenResolver(TokenResolverConfig{}); err == nil {
		t.Error("a resolver without a store")
	}
}
