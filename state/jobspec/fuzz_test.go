package jobspec

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/schedhq/sched/state"
	"github.com/zclconf/go-cty/cty"
)

// addJobFiles seeds f with the job files of testdata/ (the committed
// corpus beside testdata/fuzz/).
func addJobFiles(f *testing.F, suffix string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*"+suffix))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

// maxFuzzJobBytes bounds the job files the fuzz targets parse: ten times
// the largest in testdata/, so that each input stays cheap (a short run
// executes tens of thousands).
const maxFuzzJobBytes = 16 << 10

// fuzzStack is the stack the HCL targets parse within: a text the depth
// check accepts needs well under it (the parser takes up to 4 KB a level),
// while one that slipped past the check recursing once per byte of an
// input of maxFuzzJobBytes would overflow it, a crash the fuzzer reports.
const fuzzStack = 16 << 20

// FuzzParseHCL2: no job file crashes the parser, nor the checks behind it;
// a parsed job canonicalizes and validates without a panic.
func FuzzParseHCL2(f *testing.F) {
	addJobFiles(f, ".sched.hcl")
	f.Add([]byte(`job "x" { group "g" { task "t" { driver = "raw_exec" config { command = "${NOMAD_META_x}" } } } }`))
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > maxFuzzJobBytes {
			return
		}
		defer debug.SetMaxStack(debug.SetMaxStack(fuzzStack))
		job, err := Parse(ParseConfig{Body: src})
		if err != nil || job == nil {
			return
		}
		job.Canonicalize()
		_ = job.Validate()
	})
}

// FuzzParseHCL1 is FuzzParseHCL2 for the legacy syntax.
func FuzzParseHCL1(f *testing.F) {
	addJobFiles(f, ".hcl1")
	f.Add([]byte(`job "x" { group "g" { task "t" { driver = "raw_exec" } } }`))
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > maxFuzzJobBytes {
			return
		}
		defer debug.SetMaxStack(debug.SetMaxStack(fuzzStack))
		job, err := ParseHCL1("", src)
		if err != nil || job == nil {
			return
		}
		job.Canonicalize()
		_ = job.Validate()
	})
}

// nestings are the constructs FuzzHCLNesting nests: each level opens with
// open and closes with close around the next. Every one adds at least one
// level to state.CheckHCLDepth's count, so a text of more levels than
// state.MaxHCLDepth, around a leaf that cannot hide anything, must be
// refused.
var nestings = []struct {
	name, open, close string
	quoted            bool // the whole value is one quoted template
}{
	{name: "object", open: "{a=", close: "}"},
	{name: "tuple", open: "[", close: "]"},
	{name: "parentheses", open: "(", close: ")"},
	{name: "not", open: "!"},
	{name: "negation", open: "-"},
	{name: "spaced negation", open: "- "},
	{name: "call", open: "upper(", close: ")"},
	{name: "interpolation", open: `"${`, close: `}"`},
	{name: "heredoc", open: "<<EOT\n${", close: "}\nEOT\n"},
	{name: "conditional", open: "true ? ", close: " : 1"},
	{name: "false arm", open: "true ? 1 : "},
	{name: "for", open: "[for v in ", close: " : v]"},
	{name: "object for", open: "{for k, v in ", close: " : k => v}"},
	{name: "splat", close: "[*]"},
	{name: "attribute splat", close: ".*"},
	{name: "index", close: "[x]"},
	{name: "sum", close: "+1"},
	{name: "sum over lines", open: "(1 +\n", close: ")"},
	{name: "comparison", close: "==1"},
	{name: "if directive", open: "%{if true}", close: "%{endif}", quoted: true},
	{name: "for directive", open: "%{for v in [1]}", close: "%{endfor}", quoted: true},
}

// FuzzHCLNesting: a value nested depth levels deep in one construct
// (chosen by construct) around the leaf seed is either refused by the
// depth check or parsed and evaluated within a small stack; with a leaf
// of plain words, an accepted value is at most the limit deep. The legacy
// syntax's objects, lists and block keys are held to the same.
func FuzzHCLNesting(f *testing.F) {
	for i := range nestings {
		f.Add(byte(i), uint16(state.MaxHCLDepth), "x")
		f.Add(byte(i), uint16(state.MaxHCLDepth+1), "1")
	}
	f.Add(byte(0), uint16(3), `"}`)
	f.Add(byte(7), uint16(40), "${")
	f.Add(byte(8), uint16(500), "EOT\n")
	f.Add(byte(len(nestings)), uint16(200), "k")
	f.Fuzz(func(t *testing.T, construct byte, depth uint16, leaf string) {
		if len(leaf) > 64 {
			return // the leaf is not what is under test; keep inputs cheap
		}
		// Past the limit, a parser that recursed per level would need
		// several megabytes of stack; within it, well under one.
		defer debug.SetMaxStack(debug.SetMaxStack(4 << 20))
		n := int(depth) % 1500
		plain := strings.Trim(leaf, "abcdefghijklmnopqrstuvwxyz0123456789_ ") == "" && leaf != ""
		if c := int(construct) % (len(nestings) + 3); c >= len(nestings) {
			hcl1Nesting(t, c-len(nestings), n, leaf, plain)
			return
		}
		c := nestings[int(construct)%(len(nestings)+3)]
		value := strings.Repeat(c.open, n) + leaf + strings.Repeat(c.close, n)
		if c.quoted {
			value = `"` + value + `"`
		}
		src := []byte("a = " + value + "\n")
		if err := state.CheckHCLDepth("f.hcl", src, state.MaxHCLDepth); err != nil {
			return
		}
		if plain && n > state.MaxHCLDepth {
			t.Fatalf("%s nested %d deep accepted", c.name, n)
		}
		file, diags := hclsyntax.ParseConfig(src, "f.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			return
		}
		attrs, _ := file.Body.JustAttributes()
		ctx := &hcl.EvalContext{
			Variables: map[string]cty.Value{"x": cty.NumberIntVal(0)},
			Functions: functions(),
		}
		for _, a := range attrs {
			_, _ = a.Expr.Value(ctx)
			_ = a.Expr.Variables()
		}
		_, _ = Parse(ParseConfig{Body: []byte("job \"j\" {\n  meta = { a = " + value + " }\n}\n")})
	})
}

// hcl1Nesting is FuzzHCLNesting for the legacy syntax: objects, lists, or
// keys of one block.
func hcl1Nesting(t *testing.T, c, n int, leaf string, plain bool) {
	var body string
	switch c {
	case 0:
		body = "a = " + strings.Repeat("{a = ", n) + `"` + leaf + `"` + strings.Repeat("}", n)
	case 1:
		body = "a = " + strings.Repeat("[", n) + `"` + leaf + `"` + strings.Repeat("]", n)
	default:
		body = "a" + strings.Repeat(` "`+leaf+`"`, n) + " { }"
	}
	src := []byte("job \"j\" {\n  meta {\n" + body + "\n}\n}\n")
	if err := checkHCL1Depth("f.hcl", src, state.MaxHCLDepth); err != nil {
		return
	}
	if plain && n+2 > state.MaxHCLDepth {
		t.Fatalf("HCL1 construct %d nested %d deep accepted", c, n)
	}
	_, _ = ParseHCL1("f.hcl", src)
}
