package jobspec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// refusesDeep asserts err is a validation error naming the nesting limit.
func refusesDeep(t *testing.T, name string, err error) {
	t.Helper()
	want := fmt.Sprintf("nested more than %d levels deep (limit %d)", state.MaxHCLDepth, state.MaxHCLDepth)
	if !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v, want a validation error naming the nesting limit", name, err)
	}
}

// A deeply nested file is refused before a parser recurses into it: 60,000
// nested '[' overflowed the HCL parser's stack, a fatal crash of the
// server that received it (issue 13), and so did 1,000,000 '!', which the
// first check, counting only brackets, let through (issue 28).
func TestParseRefusesDeepNesting(t *testing.T) {
	const n = 1_000_000
	for name, value := range map[string]string{
		"brackets":               strings.Repeat("[", 60000),
		"parens":                 strings.Repeat("(", n) + "1",
		"nots":                   strings.Repeat("!", n) + "true",
		"negations":              strings.Repeat("-", n) + "1",
		"spaced negations":       strings.Repeat("- ", n) + "1",
		"nots at 80,000":         strings.Repeat("!", 80000) + "true",
		"sum":                    "1" + strings.Repeat("+1", n),
		"mixed operators":        "1" + strings.Repeat("*2+3", n/4),
		"conditionals":           strings.Repeat("true ? 1 : ", n/10) + "1",
		"nested true arms":       strings.Repeat("true ? ", n/10) + "1" + strings.Repeat(" : 1", n/10),
		"calls":                  strings.Repeat("upper(", n/6) + `"a"` + strings.Repeat(")", n/6),
		"interpolations":         strings.Repeat(`"${`, n/3),
		"if directives":          `"` + strings.Repeat("%{if true}", n/10) + strings.Repeat("%{endif}", n/10) + `"`,
		"for directives":         `"` + strings.Repeat("%{for x in [1]}", n/15) + `"`,
		"splats":                 "[1]" + strings.Repeat("[*]", n/3),
		"attribute splats":       "[{a=1}]" + strings.Repeat(".*[0]", n/5),
		"indexes":                "[1]" + strings.Repeat("[0]", n/3),
		"for expressions":        strings.Repeat("[for x in ", n/10),
		"for objects":            "{for k, v in {a=1}:\nk => v" + strings.Repeat(" +\nv", n/4) + "}",
		"parens over lines":      "(1" + strings.Repeat("+\n1", n/3) + ")",
		"heredoc interpolations": strings.Repeat("<<EOT\n${", 1000),
		"jsondecode":             `jsondecode("` + strings.Repeat("[", 60_000) + `")`, // under MaxHCLTokens
		"built jsondecode":       `jsondecode(join("", [for i in range(10): join("", [for j in range(1000): "["])]))`,
	} {
		job := "job \"x\" {\n  meta = { a = " + value + "\n}\n}\n"
		start := time.Now()
		_, err := Parse(ParseConfig{Body: []byte(job)})
		if name == "jsondecode" || name == "built jsondecode" {
			if err == nil || !strings.Contains(err.Error(), "nested more than") {
				t.Errorf("%s: %v, want the nesting limit", name, err)
			}
		} else {
			refusesDeep(t, name, err)
		}
		t.Logf("%s: refused after %v", name, time.Since(start)) // a figure to read, not a bound (timings are benchmarks' business)
	}
	for name, parse := range map[string]func() error{
		"hcl1": func() error {
			_, err := ParseHCL1("", []byte("job \"x\" {\n meta { a = "+strings.Repeat("[", 60000)+"\n}\n"))
			return err
		},
		"hcl1 keys": func() error {
			_, err := ParseHCL1("", []byte("job \"x\" {\n meta {"+strings.Repeat(" k", 200000)+" { } }\n}\n"))
			return err
		},
		"var file": func() error {
			_, err := Parse(ParseConfig{Body: []byte(`job "x" {}`), VarFiles: []VarFile{{Filename: "v.hcl", Body: []byte("a = " + strings.Repeat("{x=", 60000))}}})
			return err
		},
		"var file nots": func() error {
			_, err := Parse(ParseConfig{Body: []byte(`job "x" {}`), VarFiles: []VarFile{{Filename: "v.hcl", Body: []byte("a = " + strings.Repeat("!", 1_000_000) + "true")}}})
			return err
		},
		"bare": func() error { _, err := Parse(ParseConfig{Body: []byte(strings.Repeat("[", 60000))}); return err },
	} {
		refusesDeep(t, name, parse())
	}
}

// A variable given as text (-var or the environment) is an expression too.
func TestRawVarRefusesDeepNesting(t *testing.T) {
	job := "variable \"v\" { type = list(bool) }\njob \"x\" {\n meta = { a = \"${length(var.v)}\" }\n}\n"
	_, err := Parse(ParseConfig{Body: []byte(job), VarFlags: map[string]string{"v": "[" + strings.Repeat("!", 1_000_000) + "true]"}})
	if err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Fatalf("%v, want the nesting limit", err)
	}
}

// What counts: brackets, interpolations and open template directives;
// operators until the expression they belong to ends; a closed index,
// splat or call. Brackets and operators inside strings, comments and
// heredocs do not count; those of interpolations do, even inside strings
// and heredocs.
func TestCheckDepth(t *testing.T) {
	const max = state.MaxHCLDepth
	open := strings.Repeat("[", max+1)
	for _, tc := range []struct {
		name string
		src  string
		ok   bool
	}{
		{"at the limit", strings.Repeat("[", max) + strings.Repeat("]", max), true},
		{"over the limit", open, false},
		{"in a string", `a = "` + open + `"`, true},
		{"escaped quote", `a = "\"` + open + `"`, true},
		{"in a comment", "# " + open + "\n// " + open + "\n/* " + open + " */", true},
		{"in a heredoc", "a = <<EOF\n" + open + "\nEOF\n", true},
		{"interpolation in a string", `a = "${` + open + `}"`, false},
		{"interpolation in a heredoc", "a = <<-EOF\n${" + open + "}\nEOF\n", false},
		{"literal interpolation", `a = "$${` + open + `"`, true},
		{"closers in a string hide nothing", `a = "` + strings.Repeat("]", max) + `" ` + open, false},
		{"nested strings", `a = "${f("]]]]")}` + `" ` + open, false},
		{"a string spans lines", "a = \"x\n\" " + open, false},
		{"a dollar before an interpolation", `a = "$$${` + open + `}"`, true},

		{"nots at the limit", "a = " + strings.Repeat("!", max) + "true", true},
		{"nots over the limit", "a = " + strings.Repeat("!", max+1) + "true", false},
		{"negations over the limit", "a = " + strings.Repeat("-", max+1) + "1", false},
		{"nots inside brackets", "a = " + strings.Repeat("[", max/2) + strings.Repeat("!", max/2+1) + "true", false},
		{"a sum over the limit", "a = 1" + strings.Repeat(" + 1", max+1), false},
		{"sums on separate lines", strings.Repeat("a = 1"+strings.Repeat(" + 1", max/2)+"\n", 100), true},
		{"sums in separate items", "a = [" + strings.Repeat("1"+strings.Repeat("+1", max/2)+", ", 100) + "]", true},
		{"a sum split over lines", "a = (1" + strings.Repeat(" +\n 1", max+1) + ")", false},
		{"conditionals", "a = " + strings.Repeat("x ? 1 : ", max+1) + "1", false},
		{"indexes", "a = x" + strings.Repeat("[y]", max+1), false},
		{"splats", "a = x" + strings.Repeat("[*]", max+1), false},
		{"attribute splats", "a = x" + strings.Repeat(".*", max+1), false},
		{"if directives", `a = "` + strings.Repeat("%{if x}", max+1) + `"`, false},
		{"closed directives", `a = "` + strings.Repeat("%{if x}y%{endif}", max+1) + `"`, true},
		{"operators in a string", `a = "` + strings.Repeat("!-+", max) + `"`, true},
		{"operators in an interpolation", `a = "${` + strings.Repeat("!", max) + `x}"`, false},
		{"dashes in an identifier", "a-" + strings.Repeat("b-", max) + "c = 1", true},
		{"negative numbers, one a line", strings.Repeat("a = -1\n", max+1), true},
		{"a for object over lines", "a = {for k, v in x:\n k => v" + strings.Repeat(" +\n v", max+1) + "}", false},
		{"an object over lines", "a = {\n" + strings.Repeat(" k = -1\n", max+1) + "}", true},
	} {
		err := state.CheckHCLDepth("f.hcl", []byte(tc.src), max)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// The legacy syntax's check follows HCL1's own scanner: strings end at a
// newline, and "${" inside one is text that may hold quotes.
func TestCheckHCL1Depth(t *testing.T) {
	const max = state.MaxHCLDepth
	open := strings.Repeat("[", max+1)
	for _, tc := range []struct {
		name string
		src  string
		ok   bool
	}{
		{"at the limit", "a = " + strings.Repeat("[", max) + strings.Repeat("]", max), true},
		{"over the limit", "a = " + open, false},
		{"in a string", `a = "` + open + `"`, true},
		{"in a heredoc", "a = <<EOF\n" + open + "\nEOF\n", true},
		{"quote inside an interpolation", "a { b = \"${\"}\" }\nc = " + open, false},
		{"a broken heredoc anchor", "a = <<EOF \"\nc = " + open, false},
		{"keys at the limit", "a" + strings.Repeat(` "k"`, max-1) + " { }", true},
		{"keys over the limit", "a" + strings.Repeat(` "k"`, max) + " { }", false},
		{"blocks after string values", strings.Repeat(`b = "x" c {`, max/2), true},
	} {
		err := checkHCL1Depth("f.hcl", []byte(tc.src), max)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
