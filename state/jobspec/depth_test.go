package jobspec

import (
	"errors"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

// A deeply nested file is refused before a parser recurses into it: 60,000
// nested '[' overflowed the HCL parser's stack, a fatal crash of the
// server that received it (issue 13).
func TestParseRefusesDeepNesting(t *testing.T) {
	deep := "job \"x\" {\n  meta = { a = " + strings.Repeat("[", 60000) + "\n}\n"
	for name, parse := range map[string]func() error{
		"hcl2": func() error { _, err := Parse(ParseConfig{Body: []byte(deep)}); return err },
		"hcl1": func() error { _, err := ParseHCL1("", []byte(deep)); return err },
		"var file": func() error {
			_, err := Parse(ParseConfig{Body: []byte(`job "x" {}`), VarFiles: []VarFile{{Filename: "v.hcl", Body: []byte("a = " + strings.Repeat("{x=", 60000))}}})
			return err
		},
		"bare": func() error { _, err := Parse(ParseConfig{Body: []byte(strings.Repeat("[", 60000))}); return err },
	} {
		err := parse()
		if !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), "nested more than") {
			t.Errorf("%s: %v, want a validation error naming the nesting limit", name, err)
		}
	}
}

// Brackets inside strings, comments and heredocs do not count; those of
// interpolations do, even inside strings and heredocs.
func TestCheckDepth(t *testing.T) {
	open := strings.Repeat("[", state.MaxHCLDepth+1)
	for _, tc := range []struct {
		name string
		src  string
		ok   bool
	}{
		{"at the limit", strings.Repeat("[", state.MaxHCLDepth) + strings.Repeat("]", state.MaxHCLDepth), true},
		{"over the limit", open, false},
		{"in a string", `a = "` + open + `"`, true},
		{"escaped quote", `a = "\"` + open + `"`, true},
		{"in a comment", "# " + open + "\n// " + open + "\n/* " + open + " */", true},
		{"in a heredoc", "a = <<EOF\n" + open + "\nEOF\n", true},
		{"interpolation in a string", `a = "${` + open + `}"`, false},
		{"interpolation in a heredoc", "a = <<-EOF\n${" + open + "}\nEOF\n", false},
		{"literal interpolation", `a = "$${` + open + `"`, true},
		{"closers in a string hide nothing", `a = "` + strings.Repeat("]", state.MaxHCLDepth) + `" ` + open, false},
		{"nested strings", `a = "${f("]]]]")}` + `" ` + open, false},
	} {
		err := state.CheckHCLDepth("f.hcl", []byte(tc.src), state.MaxHCLDepth)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
