package mgmt

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkMgmtStateVersionCreate10MB is the cost of storing a 10 MB state
// inline (base64 in the create document) through the handler and the
// store, without raft.
func BenchmarkMgmtStateVersionCreate10MB(b *testing.B) {
	m := newAPIHarness(b)
	w := m.world()
	ws := m.workspace(w.owner, "acme", "big", w.appProject, nil).ID
	m.call(w.owner, "POST", "/workspaces/"+ws+"/actions/lock", nil, 200)
	pad := strings.Repeat("x", 10<<20)
	b.SetBytes(10 << 20)
	b.ResetTimer()
	for i := range b.N {
		st := fmt.Appendf(nil, `{"version":4,"serial":%d,"lineage":"big","outputs":{"pad":{"value":%q,"type":"string"}},"resources":[]}`, i+1, pad)
		body := stateBody(st, nil)
		m.call(w.owner, "POST", "/workspaces/"+ws+"/state-versions", body, 201)
	}
}
