package sched_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/schedhq/sched"

// allowed lists, for each package (by path below the module; a trailing
// "/..." covers subpackages), the packages of ours its product code may
// import. Any package not listed may import nothing of ours. It mirrors
// the package table of ARCHITECTURE.md; README.md's "Layout" says the
// same in prose.
var allowed = map[string][]string{
	"":                 {}, // the root package
	"state":            {},
	"state/jobspec":    {"state"},
	"state/mgmt":       {"state"},
	"state/store":      {"state", "state/mgmt", "state/store/internal/packed"},
	"raft/...":         {},
	"scheduler":        {"state"},
	"scheduler/leader": {"scheduler", "state", "state/store"},
	// The core: it parses no job and runs no scheduler (http/jobs does).
	"http": {"state", "state/store", "http/blocking", "http/jsonapi",
		"http/codec", "http/router", "http/agentops", "http/clientapi"},
	"http/blocking": {},
	// The /v1 handlers, mounted on the core through their Core interface.
	// http/blocking: the one blocking-read helper, for the changes
	// endpoint's in-process form (LocalAllocChanges).
	"http/jobs": {"state", "state/jobspec", "state/store", "scheduler", "http/codec", "http/clientapi", "http/blocking"},
	// The pieces the core and the client agent's surface share: the codec
	// (errors, bodies, query parameters), the router, and what every agent
	// answers about itself (metrics, its log lines).
	"http/codec":    {"state"},
	"http/router":   {},
	"http/agentops": {"http/codec"},
	// The client agent's own HTTP surface: state's types and the shared
	// pieces, never the store (a client agent links no go-memdb).
	"http/clientapi":         {"state", "http/codec", "http/router", "http/agentops", "http/clientapi/allocfs"},
	"http/clientapi/allocfs": {},
	"http/jsonapi":           {"state"},
	"http/ui":                {},
	"http/mgmt":              {"state", "state/mgmt", "state/store", "http/jsonapi"},
	"http/api":               {"state"},
	"http/api/mgmt":          {"http/api", "state", "state/mgmt"},
	"client/...":             {"http/api", "state", "client/...", "http/clientapi/..."},
	"agent/...":              {"..."},
	"cmd/sched":              {"agent", "cmd/sched/command"},
	// The CLI parses job files itself only for `job validate` without a
	// server (state/jobspec is pure: it links no store).
	"cmd/sched/command": {"http/api", "http/api/mgmt", "state", "state/mgmt", "state/jobspec"},
	"cmd/...":           {"http/api", "state"},
	"e2e/...":           {"http/api", "http/api/mgmt", "state", "state/mgmt"},
	"internal/testutil": {},
	// A Docker engine and a locally built image for the docker driver's
	// tests and the e2e tests.
	"internal/testutil/dockertest": {},
	// The scheduler's exported test harness, shared by the tests of
	// scheduler and scheduler/leader.
	"scheduler/schedtest": {"scheduler", "state", "state/store"},
	// The HTTP packages' shared test harness: it imports neither the core
	// nor the jobs API, so the internal tests of both can use it.
	"http/internal/apitest": {"state", "state/store", "internal/testutil"},
	// The store's memory machinery, behind its one entry point.
	"state/store/internal/packed": {"state"},
	// The run executor, a leader service of the management API's runs:
	// it reads the store and writes through a one-method interface.
	"agent/runexec": {"state", "state/mgmt", "state/store"},
}

// testAllowed adds, per package, what its tests may import beyond its
// product rules. internal/testutil is open to every test.
var testAllowed = map[string][]string{
	// The harness (scheduler/schedtest) applies real store commands,
	// without Raft.
	"scheduler": {"state/store", "scheduler/schedtest"},
	// Tests may assemble the whole HTTP server: the jobs API's and the
	// management API's tests mount them on the real core (the management
	// API's tests mount the jobs API too, for the ACL bootstrap), and the
	// core's tests mount both (product code of none imports another). The
	// core's and the jobs API's tests also drive the Go client.
	"http/mgmt": {"http", "http/jobs", "http/internal/apitest"},
	"http/jobs": {"http", "http/api", "http/internal/apitest"},
	// The core's relay tests make a task's non-regular files.
	"http": {"http/api", "http/mgmt", "http/jobs", "http/clientapi/allocfs", "http/internal/apitest"},
	// The agent's tests read through the clients.
	"agent/...": {"..."},
	// One CLI test runs the management commands against an in-process agent.
	"cmd/sched/command": {"agent"},
	// The leader's tests share the scheduler's harness.
	"scheduler/leader": {"scheduler/schedtest"},
}

func matches(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

// mostSpecific picks the longest pattern of table that covers pkg.
func mostSpecific(table map[string][]string, pkg string) ([]string, bool) {
	best, bestLen, found := []string(nil), -1, false
	for pattern, rules := range table {
		if matches(pattern, pkg) && len(pattern) > bestLen {
			best, bestLen, found = rules, len(pattern), true
		}
	}
	return best, found
}

// rulesFor is what pkg's product code may import; testRulesFor adds what
// its tests may.
func rulesFor(pkg string) ([]string, bool) { return mostSpecific(allowed, pkg) }

func testRulesFor(pkg string) []string {
	rules, _ := rulesFor(pkg)
	extra, _ := mostSpecific(testAllowed, pkg)
	return append(append(append([]string(nil), rules...), extra...), "internal/testutil", "internal/testutil/dockertest")
}

// permits reports whether rules let a package import dep.
func permits(rules []string, dep string) bool {
	for _, r := range rules {
		if matches(r, dep) {
			return true
		}
	}
	return false
}

// ours keeps the module's packages of imports, below the module path.
func ours(imports string) []string {
	var out []string
	for _, imp := range strings.Fields(imports) {
		if imp == module || strings.HasPrefix(imp, module+"/") {
			out = append(out, strings.TrimPrefix(strings.TrimPrefix(imp, module), "/"))
		}
	}
	return out
}

func TestImportBoundaries(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", "-tags", "e2e", "-f",
		`{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		pkg := strings.TrimPrefix(strings.TrimPrefix(parts[0], module), "/")
		rules, ok := rulesFor(pkg)
		if !ok {
			t.Errorf("package %q has no entry in the boundary table: add one (and to ARCHITECTURE.md / README)", pkg)
			continue
		}
		checked++
		for _, dep := range ours(parts[1]) {
			if dep != pkg && !permits(rules, dep) {
				t.Errorf("%s imports %s, which ARCHITECTURE.md forbids", pkg, dep)
			}
		}
		testRules := testRulesFor(pkg)
		for _, dep := range ours(parts[2]) {
			if dep != pkg && !permits(testRules, dep) {
				t.Errorf("tests of %s import %s, which ARCHITECTURE.md forbids", pkg, dep)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no packages checked")
	}
}

// TestBoundaryRulesCatchViolations shows the table can fail: each pair is
// an import ARCHITECTURE.md names as forbidden, and the rules must refuse
// it (to product code, and to tests where marked).
func TestBoundaryRulesCatchViolations(t *testing.T) {
	forbidden := []struct {
		from, to string
		tests    bool // tests may not import it either
	}{
		{"state", "state/store", true}, {"state", "raft", true}, {"state", "http", true},
		{"state/mgmt", "state/store", true}, {"state/store", "raft", true},
		{"scheduler", "state/store", false}, {"scheduler", "scheduler/leader", true},
		{"scheduler", "raft", true}, {"scheduler", "http", true},
		{"scheduler/leader", "raft", true}, {"scheduler/leader", "http", true},
		{"scheduler", "scheduler/schedtest", false}, {"scheduler/schedtest", "scheduler/leader", true},
		{"scheduler/schedtest", "raft", true},
		{"http/mgmt", "http", false}, {"http", "http/mgmt", false},
		{"http/jobs", "http", false}, {"http", "http/jobs", false},
		{"http", "scheduler", true}, {"http", "state/jobspec", true},
		{"http/jobs", "http/mgmt", true}, {"http/mgmt", "http/jobs", false},
		{"http/api", "state/store", true}, {"http/api/mgmt", "state/store", true},
		{"http/api", "http", true}, {"http/api", "agent", true},
		{"client", "raft", true}, {"client", "scheduler", true}, {"client", "agent", true},
		{"client", "state/store", true},
		{"raft", "state", true}, {"e2e", "agent", true}, {"e2e", "state/store", true},
		{"cmd/sched", "raft", true}, {"cmd/sched", "state/store", true},
		{"cmd/sched/command", "agent", false}, {"cmd/sched/command", "state/store", true},
		{"internal/testutil", "state", true},
		{"http/ui", "http", true}, {"http/ui", "state", true},
		{"http/clientapi", "state/store", true}, {"http/clientapi", "http", true},
		{"http/clientapi", "http/mgmt", true}, {"http/clientapi", "raft", true},
		{"http/codec", "state/store", true}, {"http/codec", "http", true},
		{"http/router", "state", true}, {"http/agentops", "state/store", true},
		{"client", "http", true}, {"client", "http/mgmt", true},
	}
	for _, f := range forbidden {
		rules, ok := rulesFor(f.from)
		if !ok {
			t.Errorf("no rules for %s", f.from)
			continue
		}
		if permits(rules, f.to) {
			t.Errorf("rule for %s allows %s", f.from, f.to)
		}
		if f.tests && permits(testRulesFor(f.from), f.to) {
			t.Errorf("test rule for %s allows %s", f.from, f.to)
		}
	}
}

// TestClientsDoNotLinkTheStore: the Go clients, the CLI's commands (all
// but `sched agent`), the client agent and its HTTP surface (with the
// pieces it shares with the core) link no store, no Raft and no go-memdb
// (ARCHITECTURE.md: "the Go clients and the client agent linking
// go-memdb" is never allowed).
func TestClientsDoNotLinkTheStore(t *testing.T) {
	banned := []string{
		module + "/state/store", module + "/raft", module + "/scheduler",
		"github.com/hashicorp/go-memdb", "github.com/hashicorp/go-immutable-radix",
		"github.com/hashicorp/raft",
	}
	pkgs := []string{"./http/api", "./http/api/mgmt", "./client/...", "./cmd/sched/command",
		"./http/clientapi/...", "./http/codec", "./http/router", "./http/agentops"}
	for _, pkg := range pkgs {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed only %d packages", pkg, len(deps))
		}
		for _, d := range deps {
			for _, b := range banned {
				if d == b || strings.HasPrefix(d, b+"/") {
					t.Errorf("%s links %s", pkg, d)
				}
			}
		}
	}
}
