package state

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// A policy is refused before its parser recurses: in HCL through brackets
// or operators, in JSON through brackets (issue 28).
func TestParsePolicyRulesRefusesDeepNesting(t *testing.T) {
	for name, rules := range map[string]string{
		"nots":     "namespace \"default\" {\n policy = " + strings.Repeat("!", 60_000) + "true\n}",
		"brackets": "namespace \"default\" {\n capabilities = " + strings.Repeat("[", 60_000) + "\n}",
		"json":     `{"namespace": {"default": {"capabilities": ` + strings.Repeat("[", 60_000) + `}}}`,
	} {
		_, err := ParsePolicyRules(rules)
		if err == nil || !strings.Contains(err.Error(), "nested more than 100 levels deep (limit 100)") {
			t.Errorf("%s: %v, want the nesting limit", name, err)
		}
	}
}

// The JSON checks skip strings as their parsers do: HCL's JSON scanner
// ends a string before a control character and steps over a grapheme
// cluster at a time (a prepended character takes the quote after it);
// encoding/json steps over a byte after each backslash.
func TestCheckJSONDepth(t *testing.T) {
	const max = 10
	open := strings.Repeat("[", max+1)
	for _, tc := range []struct {
		name   string
		src    string
		hclOK  bool
		jsonOK bool
	}{
		{"at the limit", strings.Repeat("[", max) + strings.Repeat("]", max), true, true},
		{"over the limit", open, false, false},
		{"in a string", `["` + open + `"]`, true, true},
		{"escaped quote", `["\"` + open + `"]`, true, true},
		{"escaped backslash", `["\\"` + open, false, false},
		{"a control character ends an HCL string", "[\"\n" + open + `"]`, false, true},
		{"a prepended quote", "[\"\u0600\"" + open + `"]`, true, false},
		{"mismatched closers close nothing", strings.Repeat("[}", max+1), false, false},
	} {
		if err := CheckHCLJSONDepth("f.json", []byte(tc.src), max); (err == nil) != tc.hclOK {
			t.Errorf("%s: HCL JSON: %v, want ok=%v", tc.name, err, tc.hclOK)
		}
		if err := CheckJSONDepth("f.json", []byte(tc.src), max); (err == nil) != tc.jsonOK {
			t.Errorf("%s: JSON: %v, want ok=%v", tc.name, err, tc.jsonOK)
		}
	}
}

// A long text is first checked on its first bytes alone; what the lexer
// reads differently there for want of the rest (a comment or a heredoc
// marker cut short) refuses nothing that the whole would not.
func TestCheckHCLDepthPrefix(t *testing.T) {
	pad := func(n int) string { return strings.Repeat("#\n", n/2) + strings.Repeat("\n", n%2) }
	cutAt := func(head, tail string) string {
		return pad(depthPrefix-len(head)) + head + tail + "\n" + pad(2*depthPrefix)
	}
	for name, src := range map[string]string{
		"a comment open at the cut": cutAt("a = 1 /* "+strings.Repeat("!", 500), strings.Repeat("!", 500)+" */"),
		"a heredoc marker at the cut": cutAt("a = "+strings.Repeat("(", MaxHCLDepth-2)+"<<-EO",
			"T\n x\nEOT\n"+strings.Repeat(")", MaxHCLDepth-2)),
	} {
		if err := CheckHCLDepth("f.hcl", []byte(src), MaxHCLDepth); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	deep := pad(1000) + "a = " + strings.Repeat("!", MaxHCLDepth+1) + "true\n" + pad(4*depthPrefix)
	if err := CheckHCLDepth("f.hcl", []byte(deep), MaxHCLDepth); err == nil || !strings.Contains(err.Error(), "line 501:") {
		t.Errorf("deep in the prefix: %v", err)
	}
}

// A text of more than MaxHCLTokens tokens is refused before it is lexed,
// whatever the tokens are; one just under the bound is not refused for
// its size. The count is an upper bound of the lexer's.
func TestHCLTokensBounded(t *testing.T) {
	for name, src := range map[string]string{
		"newlines":     strings.Repeat("\n", MaxHCLTokens+1),
		"list of ones": "a = [" + strings.Repeat("1,", MaxHCLTokens/2+1) + "]\n",
		"words":        strings.Repeat("a ", MaxHCLTokens+1),
		"json":         `{"a": [` + strings.Repeat("1,", MaxHCLTokens/2+1) + `1]}`,
	} {
		check := CheckHCLDepth
		if name == "json" {
			check = CheckHCLJSONDepth
		}
		err := check("big.hcl", []byte(src), MaxHCLDepth)
		if err == nil || !strings.Contains(err.Error(), "tokens (limit 200000)") {
			t.Errorf("%s: %v, want a refusal naming the token limit", name, err)
		}
	}
	ok := "a = [" + strings.Repeat("1,", MaxHCLTokens/2-10) + "]\n"
	if err := CheckHCLDepth("ok.hcl", []byte(ok), MaxHCLDepth); err != nil {
		t.Errorf("just under the bound: %v", err)
	}
	toks, _ := hclsyntax.LexConfig([]byte(ok), "ok.hcl", hcl.InitialPos)
	if len(toks) > MaxHCLTokens {
		t.Errorf("the lexer made %d tokens of a text the bound let through", len(toks))
	}
}
