package jobs

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

// registerBody is a register body for a new node with a secret of the
// caller's choosing.
func registerBody(id, secret string) string {
	return `{"Node": {"ID": "` + id + `", "SecretID": "` + secret + `", "Datacenter": "dc1", "Status": "ready"}}`
}

// An attacker on the network, with no token, cannot bring a node into
// being by choosing its secret: that node would receive every namespace's
// allocations (issue 13, hole 1).
func TestNodeRegisterNeedsIntroduction(t *testing.T) {
	a := newACLHarness(t, true, "")
	const id, secret = "10000000-0000-4000-8000-0000000000aa", "20000000-0000-4000-8000-0000000000aa"
	a.failAs(secret, http.MethodPut, "/v1/node/register", registerBody(id, secret), http.StatusForbidden)
	a.failAs("", http.MethodPut, "/v1/node/register", registerBody(id, secret), http.StatusForbidden)
	if n, _ := a.store.NodeByID(nil, id); n != nil {
		t.Fatal("a refused register wrote the node")
	}
	// A namespace-scoped token is no introduction either.
	writer := a.clientToken(`namespace "*" { policy = "write" }`)
	a.deniedAs(writer, http.MethodPut, "/v1/node/register", registerBody(id, secret))

	// An operator's node:write token (the client's intro_token) introduces
	// the node; from then on its secret authenticates only its own calls.
	intro := a.clientToken(`node { policy = "write" }`)
	a.okAs(intro, http.MethodPut, "/v1/node/register", registerBody(id, secret), nil)
	a.okAs(secret, http.MethodPut, "/v1/node/register", registerBody(id, secret), nil)
	a.okAs(secret, http.MethodPut, "/v1/node/"+id+"/heartbeat", nil, nil)
	a.okAs(secret, http.MethodGet, "/v1/node/"+id+"/allocations", nil, nil)
	a.failAs(secret, http.MethodGet, "/v1/nodes", nil, http.StatusForbidden)
	a.failAs(secret, http.MethodGet, "/v1/jobs", nil, http.StatusForbidden)
	a.failAs(secret, http.MethodGet, "/v1/allocations", nil, http.StatusForbidden)

	// Even a node:write token cannot take over a registered node by
	// registering its ID with another secret.
	const other = "20000000-0000-4000-8000-0000000000bb"
	a.failAs(intro, http.MethodPut, "/v1/node/register", registerBody(id, other), http.StatusBadRequest, "Node.SecretID")
	a.failAs(other, http.MethodPut, "/v1/node/"+id+"/heartbeat", nil, http.StatusForbidden)
}

// Node secrets are stored hashed: neither the store nor a snapshot holds
// one in plain text.
func TestNodeSecretStoredHashed(t *testing.T) {
	a := newACLHarness(t, true, "")
	const id, secret = "10000000-0000-4000-8000-0000000000cc", "20000000-0000-4000-8000-0000000000cc"
	a.okAs(a.managementToken(), http.MethodPut, "/v1/node/register", registerBody(id, secret), nil)
	n, err := a.store.NodeByID(nil, id)
	if err != nil || n == nil {
		t.Fatalf("node: %v, %v", n, err)
	}
	if n.SecretID != "" || n.SecretHash != state.HashSecret(secret) {
		t.Errorf("stored node: SecretID %q, SecretHash %q; want only the hash", n.SecretID, n.SecretHash)
	}
	var buf bytes.Buffer
	snap, err := a.store.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), secret) {
		t.Error("the snapshot holds the node's secret in plain text")
	}
}
