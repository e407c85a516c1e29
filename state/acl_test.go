package state

import (
	"testing"
)

// aclOf compiles policies written in the rules language.
func aclOf(t *testing.T, rules ...string) *ACL {
	t.Helper()
	var parsed []*PolicyRules
	for _, r := range rules {
		p, err := ParsePolicyRules(r)
		if err != nil {
			t.Fatalf("parse %q: %v", r, err)
		}
		parsed = append(parsed, p)
	}
	return NewACL(parsed)
}

func TestACLNamespaceMatching(t *testing.T) {
	type check struct {
		ns, capability string
		want           bool
	}
	cases := []struct {
		name   string
		rules  []string
		checks []check
	}{
		{
			name:  "exact rule",
			rules: []string{`namespace "default" { capabilities = ["read-job"] }`},
			checks: []check{
				{"default", "read-job", true},
				{"default", "submit-job", false},
				{"other", "read-job", false},
				{"default", "unknown-cap", false},
				{"default", "deny", false},
			},
		},
		{
			name: "exact beats glob",
			rules: []string{
				`namespace "*" { policy = "write" }`,
				`namespace "prod" { policy = "read" }`,
			},
			checks: []check{
				{"prod", "read-job", true},
				{"prod", "submit-job", false},
				{"dev", "submit-job", true},
			},
		},
		{
			name: "longest glob wins",
			rules: []string{
				`namespace "prod-*" { policy = "read" }`,
				`namespace "prod-eu-*" { policy = "write" }`,
				`namespace "*" { capabilities = ["list-jobs"] }`,
			},
			checks: []check{
				{"prod-eu-1", "submit-job", true},
				{"prod-us-1", "submit-job", false},
				{"prod-us-1", "read-job", true},
				{"staging", "read-job", false},
				{"staging", "list-jobs", true},
			},
		},
		{
			name: "specific deny beats broad allow",
			rules: []string{
				`namespace "*" { policy = "write" }`,
				`namespace "secret" { policy = "deny" }`,
				`namespace "team-*-private" { policy = "deny" }`,
			},
			checks: []check{
				{"secret", "read-job", false},
				{"secret", "list-jobs", false},
				{"team-a-private", "read-job", false},
				{"team-a", "read-job", true},
			},
		},
		{
			name: "deny wins within the chosen rule, across policies",
			rules: []string{
				`namespace "prod" { policy = "write" }`,
				`namespace "prod" { capabilities = ["deny"] }`,
			},
			checks: []check{
				{"prod", "read-job", false},
				{"prod", "submit-job", false},
			},
		},
		{
			name: "specific allow beats broad deny (most specific rule counts)",
			rules: []string{
				`namespace "*" { policy = "deny" }`,
				`namespace "dev" { policy = "read" }`,
			},
			checks: []check{
				{"dev", "read-job", true},
				{"prod", "read-job", false},
			},
		},
		{
			name: "capabilities merge across policies",
			rules: []string{
				`namespace "default" { capabilities = ["read-job"] }`,
				`namespace "default" { capabilities = ["submit-job"] }`,
			},
			checks: []check{
				{"default", "read-job", true},
				{"default", "submit-job", true},
				{"default", "dispatch-job", false},
			},
		},
		{
			name:  "policy plus extra capabilities",
			rules: []string{"namespace \"default\" {\n policy = \"write\"\n capabilities = [\"alloc-node-exec\"]\n}"},
			checks: []check{
				{"default", "alloc-node-exec", true},
				{"default", "gate-override", false},
			},
		},
		{
			name:  "glob in the middle and at both ends",
			rules: []string{`namespace "*-web-*" { policy = "read" }`},
			checks: []check{
				{"eu-web-1", "read-job", true},
				{"-web-", "read-job", true},
				{"eu-api-1", "read-job", false},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			acl := aclOf(t, tc.rules...)
			for _, c := range tc.checks {
				if got := acl.AllowNamespaceOperation(c.ns, c.capability); got != c.want {
					t.Errorf("AllowNamespaceOperation(%q, %q) = %v, want %v", c.ns, c.capability, got, c.want)
				}
			}
		})
	}
}

func TestACLNamespaceWideChecks(t *testing.T) {
	acl := aclOf(t, `namespace "prod-*" { policy = "read" }`, `namespace "secret" { policy = "deny" }`)
	if !acl.AllowAnyNamespace("list-jobs") {
		t.Error("AllowAnyNamespace(list-jobs) = false with a prod-* read rule")
	}
	if acl.AllowAnyNamespace("submit-job") {
		t.Error("AllowAnyNamespace(submit-job) = true")
	}
	if acl.AllowAllNamespaces("list-jobs") {
		t.Error("AllowAllNamespaces without a * rule")
	}
	if !acl.AllowNamespace("prod-1") || acl.AllowNamespace("secret") || acl.AllowNamespace("dev") {
		t.Error("AllowNamespace wrong")
	}

	star := aclOf(t, `namespace "*" { policy = "read" }`)
	if !star.AllowAllNamespaces("read-job") {
		t.Error("AllowAllNamespaces(read-job) = false with * read")
	}
	withDeny := aclOf(t, `namespace "*" { policy = "read" }`, `namespace "secret" { policy = "deny" }`)
	if withDeny.AllowAllNamespaces("read-job") {
		t.Error("AllowAllNamespaces ignores a more specific deny")
	}
	narrower := aclOf(t, `namespace "*" { policy = "write" }`, `namespace "prod" { policy = "read" }`)
	if narrower.AllowAllNamespaces("submit-job") || !narrower.AllowAllNamespaces("read-job") {
		t.Error("AllowAllNamespaces ignores a narrower specific rule")
	}
	onlyDeny := aclOf(t, `namespace "*" { policy = "deny" }`)
	if onlyDeny.AllowAnyNamespace("read-job") || onlyDeny.AllowSomeNamespace() {
		t.Error("AllowAnyNamespace or AllowSomeNamespace through a deny rule")
	}
	if !acl.AllowSomeNamespace() || aclOf(t, `node { policy = "write" }`).AllowSomeNamespace() {
		t.Error("AllowSomeNamespace wrong")
	}
}

func TestACLLevels(t *testing.T) {
	cases := []struct {
		name  string
		rules []string
		want  [6]bool // node r/w, agent r/w, operator r/w
	}{
		{"none", []string{`namespace "a" { policy = "read" }`}, [6]bool{}},
		{"read", []string{`node { policy = "read" }`, `agent { policy = "read" }`, `operator { policy = "read" }`}, [6]bool{true, false, true, false, true, false}},
		{"write implies read", []string{`node { policy = "write" }`}, [6]bool{true, true}},
		{"highest wins", []string{`node { policy = "read" }`, `node { policy = "write" }`}, [6]bool{true, true}},
		{"deny wins", []string{`operator { policy = "write" }`, `operator { policy = "deny" }`}, [6]bool{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := aclOf(t, tc.rules...)
			got := [6]bool{a.AllowNodeRead(), a.AllowNodeWrite(), a.AllowAgentRead(), a.AllowAgentWrite(), a.AllowOperatorRead(), a.AllowOperatorWrite()}
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	m := ManagementACL()
	if !m.IsManagement() || !m.AllowOperatorWrite() || !m.AllowNamespaceOperation("x", "alloc-node-exec") || !m.AllowAllNamespaces("read-job") {
		t.Error("management ACL denies something")
	}
	if aclOf(t, `node { policy = "write" }`).IsManagement() {
		t.Error("a policy ACL claims management")
	}
}

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"a*", "a", true},
		{"a*", "ba", false},
		{"*a", "bba", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"a**", "abc", true},
		{"abc", "abc", true},
		{"abc", "abcd", false},
		{"*-*-*-*-*-*-*-*-x", "a-b-c-d-e-f-g-h-i-j-k-l-m-n-o-p-y", false},
	}
	for _, c := range cases {
		if got := globMatch(c.pattern, c.name); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}
