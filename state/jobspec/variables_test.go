package jobspec

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// metaJob is a job whose meta "v" is the HCL expression expr, after the
// given declarations. Tests read the result from Job.Meta["v"].
func metaJob(decls, expr string) []byte {
	return []byte(decls + "\n" + jobWith("  meta = { v = "+expr+" }", ""))
}

// TestVariableSources checks where a variable's value comes from and which
// source wins: default < SCHED_VAR_ environment < var files in order <
// -var flags.
func TestVariableSources(t *testing.T) {
	const strVar = `variable "x" {
  type    = string
  default = "from-default"
}`
	tests := []struct {
		name  string
		decls string
		expr  string
		env   map[string]string
		files []VarFile
		flags map[string]string
		want  string
	}{
		{name: "default", decls: strVar, expr: "var.x", want: "from-default"},
		{name: "env over default", decls: strVar, expr: "var.x",
			env: map[string]string{"SCHED_VAR_x": "from-env", "SCHED_VAR_unrelated": "ignored", "x": "not prefixed"}, want: "from-env"},
		{name: "file over env", decls: strVar, expr: "var.x",
			env:   map[string]string{"SCHED_VAR_x": "from-env"},
			files: []VarFile{{Filename: "a.vars.hcl", Body: []byte(`x = "from-file"`)}}, want: "from-file"},
		{name: "later file wins", decls: strVar, expr: "var.x",
			files: []VarFile{
				{Filename: "a.vars.hcl", Body: []byte(`x = "first"`)},
				{Filename: "b.vars.hcl", Body: []byte(`x = "second"`)},
			}, want: "second"},
		{name: "flag over file and env", decls: strVar, expr: "var.x",
			env:   map[string]string{"SCHED_VAR_x": "from-env"},
			files: []VarFile{{Filename: "a.vars.hcl", Body: []byte(`x = "from-file"`)}},
			flags: map[string]string{"x": "from-flag"}, want: "from-flag"},
		{name: "untyped variable", decls: `variable "x" {}`, expr: "var.x",
			flags: map[string]string{"x": "[not parsed]"}, want: "[not parsed]"},
		{name: "number from env", decls: `variable "n" { type = number }`, expr: "var.n * 2",
			env: map[string]string{"SCHED_VAR_n": "21"}, want: "42"},
		{name: "bool from flag", decls: `variable "b" { type = bool }`, expr: `var.b ? "yes" : "no"`,
			flags: map[string]string{"b": "true"}, want: "yes"},
		{name: "list from flag in HCL syntax", decls: `variable "l" { type = list(string) }`, expr: `join("+", var.l)`,
			flags: map[string]string{"l": `["a", "b"]`}, want: "a+b"},
		{name: "map from var file", decls: `variable "m" { type = map(number) }`, expr: `var.m["b"]`,
			files: []VarFile{{Filename: "m.hcl", Body: []byte(`m = { a = 1, b = 2 }`)}}, want: "2"},
		{name: "object default with functions", decls: `variable "o" {
  default = { name = upper("web") }
}`, expr: "var.o.name", want: "WEB"},
		{name: "var file may use functions", decls: strVar, expr: "var.x",
			files: []VarFile{{Filename: "f.hcl", Body: []byte(`x = format("%s-%d", "v", 2)`)}}, want: "v-2"},
		{name: "number default converted to string", decls: `variable "x" {
  type    = string
  default = 8080
}`, expr: "var.x", want: "8080"},
		{name: "locals chain in any order", decls: `locals {
  c = "${local.b}!"
}
locals {
  b = upper(local.a)
  a = "hi"
}`, expr: "local.c", want: "HI!"},
		{name: "local from variable", decls: strVar + "\nlocals { y = \"${var.x}/y\" }", expr: "local.y", want: "from-default/y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job, err := Parse(ParseConfig{Body: metaJob(tt.decls, tt.expr), Env: tt.env, VarFiles: tt.files, VarFlags: tt.flags})
			if err != nil {
				t.Fatal(err)
			}
			if got := job.Meta["v"]; got != tt.want {
				t.Errorf("meta v = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestVariableErrors checks that bad variable input is reported with the
// variable's name and, where there is one, its position.
func TestVariableErrors(t *testing.T) {
	tests := []struct {
		name  string
		decls string
		expr  string
		env   map[string]string
		files []VarFile
		flags map[string]string
		want  []string
	}{
		{name: "missing value", decls: "variable \"image\" {\n  type = string\n}", expr: "var.image",
			want: []string{"job.hcl:1:1", `variable "image" has no default and no value`, "SCHED_VAR_image"}},
		{name: "missing value used in a function", decls: `variable "image" {}`, expr: "length(var.image)",
			want: []string{"job.hcl:1:1", `variable "image" has no default`}},
		{name: "missing value not hidden by env of another name", decls: `variable "image" {}`, expr: "var.image",
			env: map[string]string{"SCHED_VAR_img": "x"}, want: []string{`variable "image"`}},
		{name: "undeclared -var", decls: `variable "x" { default = "a" }`, expr: "var.x",
			flags: map[string]string{"typo": "1"}, want: []string{"-var typo", `no variable "typo"`}},
		{name: "undeclared in var file", decls: `variable "x" { default = "a" }`, expr: "var.x",
			files: []VarFile{{Filename: "prod.vars.hcl", Body: []byte("x = \"b\"\nimgae = \"c\"")}},
			want:  []string{"prod.vars.hcl:2:1", `"imgae"`}},
		{name: "var file syntax error", decls: `variable "x" { default = "a" }`, expr: "var.x",
			files: []VarFile{{Filename: "bad.hcl", Body: []byte("x = ")}}, want: []string{"bad.hcl:1:"}},
		{name: "var file blocks", decls: `variable "x" { default = "a" }`, expr: "var.x",
			files: []VarFile{{Filename: "blk.hcl", Body: []byte("x {\n}")}}, want: []string{"blk.hcl:1:1", "Blocks are not allowed"}},
		{name: "flag of wrong type", decls: `variable "n" { type = number }`, expr: "var.n",
			flags: map[string]string{"n": "many"}, want: []string{"-var n", `variable "n" must be number`}},
		{name: "env of wrong type", decls: `variable "l" { type = list(number) }`, expr: "length(var.l)",
			env: map[string]string{"SCHED_VAR_l": `["a"]`}, want: []string{"SCHED_VAR_l", `variable "l" must be list of number`}},
		{name: "default of wrong type", decls: "variable \"n\" {\n  type = number\n  default = \"lots\"\n}", expr: "var.n",
			want: []string{"job.hcl:3:13", `default of variable "n" must be number`}},
		{name: "default uses a variable", decls: "variable \"a\" { default = \"x\" }\nvariable \"b\" { default = var.a }", expr: "var.b",
			want: []string{"job.hcl:2:26", "Unknown variable"}},
		{name: "duplicate variable", decls: "variable \"x\" { default = 1 }\nvariable \"x\" { default = 2 }", expr: "var.x",
			want: []string{"job.hcl:2:1", `variable "x" was already declared`}},
		{name: "bad type expression", decls: `variable "x" { type = strin }`, expr: `"a"`,
			want: []string{"job.hcl:1:23", "strin"}},
		{name: "undeclared var reference", decls: "", expr: "var.nope",
			want: []string{"job.hcl:3:19", `"nope"`}},
		{name: "undeclared local", decls: `locals { a = 1 }`, expr: "local.b",
			want: []string{"job.hcl:3:21", `"b"`}},
		{name: "locals cycle", decls: "locals {\n  a = local.b\n  b = local.a\n}", expr: "local.a",
			want: []string{"job.hcl:2:3", "job.hcl:3:3", "Local value cycle"}},
		{name: "duplicate local", decls: "locals { a = 1 }\nlocals { a = 2 }", expr: "local.a",
			want: []string{"job.hcl:2:10", `local "a" was already defined`}},
		{name: "local object read whole", decls: "locals {\n  a = 1\n  b = local[\"a\"]\n}", expr: "local.b",
			want: []string{"job.hcl:3:7", "cannot be read whole"}},
		{name: "a cycle holds up its dependents", decls: "locals {\n  a = local.b\n  b = local.a\n  c = local.a\n  d = 1\n}", expr: "local.c",
			want: []string{"job.hcl:4:3", `local "c" depends on itself through the locals a, b, c`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(ParseConfig{Body: metaJob(tt.decls, tt.expr), Env: tt.env, VarFiles: tt.files, VarFlags: tt.flags})
			assertInvalid(t, err, tt.want...)
		})
	}
}

// TestFunctions checks a sample of the cty standard library under the
// names users write.
func TestFunctions(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		{`upper("web")`, "WEB"},
		{`lower("WEB")`, "web"},
		{`format("%s-%03d", "db", 7)`, "db-007"},
		{`join(",", ["a", "b", "c"])`, "a,b,c"},
		{`length(split(",", "a,b,c"))`, "3"},
		{`length("four")`, "4"},
		{`length(concat(["a"], ["b", "c"]))`, "3"},
		{`jsonencode(merge({ a = 1 }, { b = "x" }))`, `{"a":1,"b":"x"}`},
		{`min(3, 1, 2) + max(4, 9)`, "10"},
		{`jsondecode("{\"k\": \"v\"}").k`, "v"},
		{`replace("a-b-c", "-", "_")`, "a_b_c"},
		{`trimspace("  padded  ")`, "padded"},
		{`title("hello world")`, "Hello World"},
		{`substr("sched", 0, 3)`, "sch"},
		{`regex_replace("v1.2.3", "[.]", "_")`, "v1_2_3"},
		{`coalesce(null, "fallback")`, "fallback"},
		{`lookup({ a = "1" }, "b", "none")`, "none"},
		{`element(sort(["b", "a"]), 0)`, "a"},
		{`try(jsondecode("not json"), "bad")`, "bad"},
		{`join("/", [for s in ["x", "y"] : upper(s)])`, "X/Y"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			job, err := Parse(ParseConfig{Body: metaJob("", tt.expr)})
			if err != nil {
				t.Fatal(err)
			}
			if got := job.Meta["v"]; got != tt.want {
				t.Errorf("%s = %q, want %q", tt.expr, got, tt.want)
			}
		})
	}
}

// Locals cost in proportion to their number, whatever their order: 20,000
// of them took 96 s when each was evaluated with an object of all the
// others.
func TestManyLocals(t *testing.T) {
	const n = 20000
	var chained, flat strings.Builder
	chained.WriteString("locals {\n  z0 = 1\n")
	flat.WriteString("locals {\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&chained, "  z%d = local.z%d + 1\n", i, i-1)
		fmt.Fprintf(&flat, "  z%d = %d\n", i, i)
	}
	chained.WriteString("}\n")
	flat.WriteString("}\n")
	for name, decls := range map[string]string{"chained": chained.String(), "flat": flat.String()} {
		start := time.Now()
		job, err := Parse(ParseConfig{Body: metaJob(decls, fmt.Sprintf(`"${local.z%d}"`, n-1))})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, want := job.Meta["v"], fmt.Sprint(n-1); name == "flat" && got != want || name == "chained" && got != fmt.Sprint(n) {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
		if d := time.Since(start); d > 10*time.Second { // under a second here
			t.Errorf("%s: %v", name, d)
		}
	}
}
