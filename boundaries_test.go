package sched_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/schedhq/sched"

// allowed lists, for each package (by path below the module; a trailing
// "/..." covers subpackages), the packages of ours it may import. Any
// package not listed may import nothing of ours. It mirrors the table in
// ARCHITECTURE.md, plus jobspec (the HCL job parser, state only), which
// README.md documents.
var allowed = map[string][]string{
	"state/...":     {},
	"raft/...":      {},
	"jobspec/...":   {"state"},
	"scheduler/...": {"state/..."},
	"http/api/...":  {"state"},
	"http/...":      {"state/...", "scheduler/...", "jobspec", "http/..."},
	"client/...":    {"http/api", "state", "client/..."},
	"agent/...":     {"..."},
	"cmd/sched":     {"agent", "http/api", "state"},
	"cmd/...":       {"http/api", "state"},
	"e2e/...":       {"http/api", "state"},
	"":              {}, // the root package
	// internal/testutil holds test helpers; any package's tests may
	// import it (testOnly), no package's code.
	"internal/testutil": {},
}

// testOnly are the packages of ours any package's tests may import, on top
// of what the table allows.
var testOnly = []string{"internal/testutil"}

func matches(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

// rulesFor picks the most specific pattern that covers pkg.
func rulesFor(pkg string) ([]string, bool) {
	best, bestLen, found := []string(nil), -1, false
	for pattern, rules := range allowed {
		if matches(pattern, pkg) && len(pattern) > bestLen {
			best, bestLen, found = rules, len(pattern), true
		}
	}
	return best, found
}

func TestImportBoundaries(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkgPath, imports, _ := strings.Cut(line, "|")
		imports, testImports, _ := strings.Cut(imports, "|")
		pkg := strings.TrimPrefix(strings.TrimPrefix(pkgPath, module), "/")
		rules, ok := rulesFor(pkg)
		if !ok {
			t.Errorf("package %q has no entry in the boundary table: add one (and to ARCHITECTURE.md)", pkg)
			continue
		}
		checked++
		nonTest := len(strings.Fields(imports))
		for i, imp := range strings.Fields(imports + " " + testImports) {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			if dep == pkg {
				continue
			}
			ok := i >= nonTest && slices.Contains(testOnly, dep)
			for _, r := range rules {
				if matches(r, dep) {
					ok = true
					break
				}
			}
			if !ok {
				t.Errorf("%s imports %s, which ARCHITECTURE.md forbids", pkg, dep)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no packages checked")
	}
}

func TestBoundaryRulesCatchViolations(t *testing.T) {
	// The table itself must forbid the imports ARCHITECTURE.md names.
	forbidden := [][2]string{
		{"state", "raft"}, {"state", "http"}, {"scheduler", "raft"}, {"scheduler", "http"},
		{"client", "raft"}, {"client", "scheduler"}, {"client", "agent"}, {"raft", "state"},
		{"http/api", "agent"}, {"e2e", "agent"}, {"cmd/sched", "raft"},
		{"http", "internal/testutil"}, {"internal/testutil", "state"},
	}
	for _, f := range forbidden {
		rules, _ := rulesFor(f[0])
		for _, r := range rules {
			if matches(r, f[1]) {
				t.Errorf("rule for %s allows %s", f[0], f[1])
			}
		}
	}
}
