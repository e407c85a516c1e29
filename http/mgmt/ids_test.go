package mgmt

import (
	"strings"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state/mgmt"
)

// TestIDsFromInjectedSource: the IDs the management API gives out come
// from the core's ID source, not from a random source of its own. Each
// created object's ID is the one idFrom derives from the source's next
// ID, and two servers with the same source, sent the same requests, give
// the same IDs.
func TestIDsFromInjectedSource(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	next := func(prefix string) string { return idFrom(prefix, apitest.SourceID(m.ids.Load()+1)) }

	want := next(mgmt.PrefixProject)
	if got := m.project(w.owner, w.org, "web", nil).ID; got != want {
		t.Errorf("project ID = %q, want %q from the ID source", got, want)
	}
	want = next(mgmt.PrefixTeam)
	if got := m.team(w.owner, w.org, "ops", "organization", nil); got != want {
		t.Errorf("team ID = %q, want %q from the ID source", got, want)
	}
	want = next(mgmt.PrefixWorkspace)
	if got := m.call(w.owner, "POST", "/organizations/acme/workspaces", docBody("workspaces", map[string]any{"name": "net"}), 201).one(t).ID; got != want {
		t.Errorf("workspace ID = %q, want %q from the ID source", got, want)
	}
	want = next(mgmt.PrefixPolicySet)
	if got := m.call(w.owner, "POST", "/organizations/acme/policy-sets", docBody("policy-sets", map[string]any{"name": "base"}), 201).one(t).ID; got != want {
		t.Errorf("policy set ID = %q, want %q from the ID source", got, want)
	}
	want = next(mgmt.PrefixUser)
	if got, _ := m.user("uma"); got != want {
		t.Errorf("user ID = %q, want %q from the ID source", got, want)
	}
	if id := next(mgmt.PrefixTeam); !strings.HasPrefix(id, "team-") || len(id) != len("team-")+16 {
		t.Errorf("ID %q is not a prefix and 16 characters", id)
	}

	a, b := newAPIHarness(t).world(), newAPIHarness(t).world()
	if a.ownerID != b.ownerID || a.managersTeam != b.managersTeam || a.appProject != b.appProject || a.defaultProject != b.defaultProject {
		t.Errorf("two servers with one ID source gave different IDs: %s %s %s %s, %s %s %s %s",
			a.ownerID, a.managersTeam, a.appProject, a.defaultProject, b.ownerID, b.managersTeam, b.appProject, b.defaultProject)
	}
}
