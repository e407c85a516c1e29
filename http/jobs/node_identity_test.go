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
	a.FailAs(secret, http.MethodPut, "/v1/node/register", registerBody(id, secret), http.StatusForbidden)
	a.FailAs("", http.MethodPut, "/v1/node/register", registerBody(id, secret), http.StatusForbidden)
	if n, _ := a.Store.NodeByID(nil, id); n != nil {
		t.Fatal("a refused register wrote the node")
	}
	// A namespace-scoped token is no introduction either.
	writer := a.ClientToken(`namespace "*" { policy = "write" }`)
	a.DeniedAs(writer, http.MethodPut, "/v1/node/register", registerBody(id, secret))

	// An operator's node:write token (the client's intro_token) introduces
	// the node; from then on its secret authenticates only its own calls.
	intro := a.ClientToken(`node { policy = "write" }`)
	a.OKAs(intro, http.MethodPut, "/v1/node/register", registerBody(id, secret), nil)
	a.OKAs(secret, http.MethodPut, "/v1/node/register", registerBody(id, secret), nil)
	a.OKAs(secret, http.MethodPut, "/v1/node/"+id+"/heartbeat", nil, nil)
	a.OKAs(secret, http.MethodGet, "/v1/node/"+id+"/allocations", nil, nil)
	a.FailAs(secret, http.MethodGet, "/v1/nodes", nil, http.StatusForbidden)
	a.FailAs(secret, http.MethodGet, "/v1/jobs", nil, http.StatusForbidden)
	a.FailAs(secret, http.MethodGet, "/v1/allocations", nil, http.StatusForbidden)

	// Even a node:write token cannot take over a registered node by
	// registering its ID with another secret.
	const other = "20000000-0000-4000-8000-0000000000bb"
	a.FailAs(intro, http.MethodPut, "/v1/node/register", registerBody(id, other), http.StatusBadRequest, "Node.SecretID")
	a.FailAs(other, http.MethodPut, "/v1/node/"+id+"/heartbeat", nil, http.StatusForbidden)
}

// Node secrets are stored hashed: neither the store nor a snapshot holds
// one in plain text.
func TestNodeSecretStoredHashed(t *testing.T) {
	a := newACLHarness(t, true, "")
	const id, secret = "10000000-0000-4000-8000-0000000000cc", "20000000-0000-4000-8000-0000000000cc"
	a.OKAs(a.ManagementToken(), http.MethodPut, "/v1/node/register", registerBody(id, secret), nil)
	n, err := a.Store.NodeByID(nil, id)
	if err != nil || n == nil {
		t.Fatalf("node: %v, %v", n, err)
	}
	if n.SecretID != "" || n.SecretHash != state.HashSecret(secret) {
		t.Errorf("stored node: SecretID %q, SecretHash %q; want only the hash", n.SecretID, n.SecretHash)
	}
	var buf bytes.Buffer
	snap, err := a.Store.Snapshot()
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
