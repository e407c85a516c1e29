package state

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestPolicyRulesParseHCLAndJSON(t *testing.T) {
	hcl := `
namespace "default" {
  policy = "read"
}
namespace "prod-*" {
  policy       = "write"
  capabilities = ["alloc-node-exec", "gate-override"]
}
node     { policy = "read" }
agent    { policy = "write" }
operator { policy = "deny" }
`
	json := `{
  "namespace": {
    "default": {"policy": "read"},
    "prod-*": {"policy": "write", "capabilities": ["alloc-node-exec", "gate-override"]}
  },
  "node": {"policy": "read"},
  "agent": {"policy": "write"},
  "operator": {"policy": "deny"}
}`
	want := &PolicyRules{
		Namespaces: []*NamespaceRule{
			{Name: "default", Policy: "read"},
			{Name: "prod-*", Policy: "write", Capabilities: []string{"alloc-node-exec", "gate-override"}},
		},
		Node:     &LevelRule{Policy: "read"},
		Agent:    &LevelRule{Policy: "write"},
		Operator: &LevelRule{Policy: "deny"},
	}
	for name, src := range map[string]string{"hcl": hcl, "json": json} {
		t.Run(name, func(t *testing.T) {
			got, err := ParsePolicyRules(src)
			if err != nil {
				t.Fatal(err)
			}
			// JSON object keys come back in source order too, but do not
			// depend on it.
			if len(got.Namespaces) == 2 && got.Namespaces[0].Name != "default" {
				got.Namespaces[0], got.Namespaces[1] = got.Namespaces[1], got.Namespaces[0]
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestPolicyRulesParseErrors(t *testing.T) {
	cases := []struct {
		name  string
		rules string
		want  []string
	}{
		{"empty", "  ", []string{"Rules: required"}},
		{"syntax", "namespace \"a\" {\n  policy = \n}", []string{"Rules: line 2"}},
		{"unknown block", `plugin "x" { policy = "read" }`, []string{"Rules: line 1, column 1", "plugin"}},
		{"labelled quota block", `quota "x" { policy = "read" }`, []string{"Rules: line 1, column 7", "quota"}},
		{"unknown attribute", "namespace \"a\" {\n  polcy = \"read\"\n}", []string{"line 2", `"polcy"`}},
		{"bad namespace policy", `namespace "a" { policy = "admin" }`, []string{`policy "admin" is not one of deny, read, write, scale`}},
		{"bad capability", `namespace "a" { capabilities = ["read-job", "launch-missiles"] }`, []string{`unknown capability "launch-missiles"`}},
		{"capabilities not a list", `namespace "a" { capabilities = "read-job" }`, []string{"capabilities must be a list of strings"}},
		{"policy not a string", `namespace "a" { policy = 3 }`, []string{"policy must be a string"}},
		{"neither", `namespace "a" { }`, []string{`namespace "a": needs a policy or capabilities`}},
		{"node scale", `node { policy = "scale" }`, []string{`node policy "scale" is not one of deny, read, write`}},
		{"node without policy", `node { }`, []string{"policy"}},
		{"namespace twice", "namespace \"a\" { policy = \"read\" }\nnamespace \"a\" { policy = \"write\" }", []string{`line 2, column 1: namespace "a" is defined more than once`}},
		{"node twice", "node { policy = \"read\" }\nnode { policy = \"write\" }", []string{"node is defined more than once"}},
		{"no rules", `{}`, []string{"no rules"}},
		{"namespace with slash", `namespace "a/b" { policy = "read" }`, []string{"no spaces or slashes"}},
		{"variables not allowed", `namespace "a" { policy = var.x }`, []string{"line 1"}},
		{"bad json", `{"namespace": `, []string{"Rules: line 1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePolicyRules(tc.rules)
			if err == nil {
				t.Fatal("parsed; want an error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	ok := &ACLPolicy{Name: "readers-1", Description: "read only", Rules: `namespace "*" { policy = "read" }`}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid policy: %v", err)
	}
	bad := &ACLPolicy{Name: "no spaces", Description: strings.Repeat("x", 300), Rules: `node { policy = "root" }`}
	err := bad.Validate()
	for _, w := range []string{"Name:", "Description: must be at most 256", "Rules:"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not mention %q", err, w)
		}
	}
}

func TestPolicyBundles(t *testing.T) {
	read := PolicyCapabilities(PolicyRead)
	for _, c := range []string{"list-jobs", "parse-job", "read-job", "read-job-scaling", "read-logs"} {
		if !contains(read, c) {
			t.Errorf("read lacks %s", c)
		}
	}
	if contains(read, "submit-job") {
		t.Error("read grants submit-job")
	}
	write := PolicyCapabilities(PolicyWrite)
	for _, c := range append(read, "submit-job", "dispatch-job", "alloc-exec", "alloc-lifecycle", "scale-job", "read-fs") {
		if !contains(write, c) {
			t.Errorf("write lacks %s", c)
		}
	}
	for _, c := range []string{"alloc-node-exec", "gate-override", "deny"} {
		if contains(write, c) {
			t.Errorf("write grants %s; it must be named explicitly", c)
		}
	}
	if got := PolicyCapabilities(PolicyScale); !reflect.DeepEqual(got, []string{"read-job-scaling", "scale-job", "list-scaling-policies", "read-scaling-policy"}) {
		t.Errorf("scale = %v", got)
	}
	if PolicyCapabilities("root") != nil {
		t.Error("unknown policy expands to something")
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
