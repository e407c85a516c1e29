package command

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/schedhq/sched/state"
	"github.com/zclconf/go-cty/cty"
)

// jobVariables are the variable values given for an HCL job.
type jobVariables struct {
	// doc is one var-file document holding every value, files first and
	// -var flags last, a later definition replacing an earlier one. The
	// server's parse endpoint takes exactly one such document, and HCL
	// refuses a name defined twice in one document, so the CLI merges
	// rather than concatenates.
	doc string
	// flags are the -var values as typed, for the job submission.
	flags map[string]string
	// files is the var files' contents as written, for the submission.
	files string
}

// loadVariables reads varFiles (HCL, or JSON when named *.json) and
// varFlags (NAME=VALUE) into one document.
//
// A -var value is a string, which the server converts to the variable's
// declared type (number, bool), except that a value starting with "[" or
// "{" that parses as an HCL expression is taken as that list or object.
func loadVariables(varFiles, varFlags []string) (*jobVariables, error) {
	vals := map[string]cty.Value{}
	var order []string
	set := func(name string, v cty.Value) {
		if _, ok := vals[name]; !ok {
			order = append(order, name)
		}
		vals[name] = v
	}

	out := &jobVariables{}
	var raw []string
	for _, path := range varFiles {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading var file: %w", err)
		}
		raw = append(raw, string(src))
		if err := parseVarFile(path, src, set); err != nil {
			return nil, err
		}
	}
	out.files = strings.Join(raw, "\n")

	for _, f := range varFlags {
		name, value, ok := strings.Cut(f, "=")
		if !ok || !hclsyntax.ValidIdentifier(name) {
			return nil, fmt.Errorf("-var %q: want NAME=VALUE with NAME a valid identifier", f)
		}
		if out.flags == nil {
			out.flags = map[string]string{}
		}
		out.flags[name] = value
		set(name, varFlagValue(name, value))
	}

	if len(order) > 0 {
		f := hclwrite.NewEmptyFile()
		for _, name := range order {
			f.Body().SetAttributeValue(name, vals[name])
		}
		out.doc = string(f.Bytes())
	}
	return out, nil
}

// parseVarFile reads the attributes of one var file, in source order.
func parseVarFile(path string, src []byte, set func(string, cty.Value)) error {
	p := hclparse.NewParser()
	var (
		f     *hcl.File
		diags hcl.Diagnostics
	)
	// The parsers recurse once per level: a file nested too deep would
	// crash the CLI with a stack overflow rather than name the line.
	if strings.HasSuffix(strings.ToLower(path), ".json") {
		if err := state.CheckHCLJSONDepth(path, src, state.MaxHCLDepth); err != nil {
			return fmt.Errorf("parsing var file: %w", err)
		}
		f, diags = p.ParseJSON(src, path)
	} else {
		if err := state.CheckHCLDepth(path, src, state.MaxHCLDepth); err != nil {
			return fmt.Errorf("parsing var file: %w", err)
		}
		f, diags = p.ParseHCL(src, path)
	}
	if diags.HasErrors() {
		return fmt.Errorf("parsing var file: %w", diags)
	}
	attrs, diags := f.Body.JustAttributes()
	if diags.HasErrors() {
		return fmt.Errorf("parsing var file: %w", diags)
	}
	list := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		list = append(list, a)
	}
	slices.SortFunc(list, func(a, b *hcl.Attribute) int { return a.Range.Start.Byte - b.Range.Start.Byte })
	for _, a := range list {
		// No evaluation context: var files hold literal values only.
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return fmt.Errorf("parsing var file: %w", diags)
		}
		set(a.Name, v)
	}
	return nil
}

// varFlagValue turns the text of a -var flag into a value.
func varFlagValue(name, value string) cty.Value {
	t := strings.TrimSpace(value)
	if (strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{")) && state.CheckHCLDepth("-var "+name, []byte(t), state.MaxHCLDepth) == nil {
		expr, diags := hclsyntax.ParseExpression([]byte(t), "-var "+name, hcl.InitialPos)
		if !diags.HasErrors() {
			if v, diags := expr.Value(nil); !diags.HasErrors() {
				return v
			}
		}
	}
	return cty.StringVal(value)
}
