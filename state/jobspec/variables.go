package jobspec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/schedhq/sched/state"
)

// EnvVarPrefix is the prefix of environment variables that set input
// variables: SCHED_VAR_image=nginx sets var.image.
const EnvVarPrefix = "SCHED_VAR_"

// variable is a declared input variable.
type variable struct {
	name string
	// ty is the declared type; cty.DynamicPseudoType for `any` or none.
	ty cty.Type
	// def is the default, cty.NilVal when there is none (the variable must
	// then be given a value).
	def  cty.Value
	decl hcl.Range
}

// declare reads the variable blocks, in declaration order. Defaults may use
// functions but no other variable, as in Terraform: a default must be known
// before any value is.
func (d *decoder) declare(blocks []*hcl.Block) []*variable {
	var out []*variable
	seen := map[string]*variable{}
	for _, b := range blocks {
		c := d.content(b.Body, spec("type default description"))
		v := &variable{name: label(b), ty: cty.DynamicPseudoType, decl: b.DefRange}
		if prev, dup := seen[v.name]; dup {
			d.add(problem(b.DefRange, "Duplicate variable", "variable %q was already declared at %s", v.name, pos(prev.decl)))
			continue
		}
		if !hclsyntax.ValidIdentifier(v.name) {
			d.add(problem(b.LabelRanges[0], "Invalid variable name", "%q is not a valid identifier", v.name))
			continue
		}
		if a, ok := c.Attributes["type"]; ok {
			ty, diags := typeexpr.TypeConstraint(a.Expr)
			d.add(diags...)
			if !diags.HasErrors() {
				v.ty = ty
			}
		}
		var desc string
		d.str(c, "description", &desc)
		if a, ok := c.Attributes["default"]; ok {
			rng := a.Expr.Range()
			if def, ok := d.evalAttr(a, cty.DynamicPseudoType); ok {
				v.def = d.convertVar(v, def, &rng, "default")
			} else if !isNull(a) {
				// The default is broken and reported; an unknown value
				// keeps "no value" from being reported on top.
				v.def = cty.DynamicVal
			}
		}
		seen[v.name] = v
		out = append(out, v)
	}
	return out
}

// convertVar converts val to v's type, recording a problem at rng (nil for
// a flag or the environment, which have no position) naming source, e.g.
// "default" or "-var x", when it does not fit. A value that does not fit
// becomes unknown, so that its uses are skipped rather than each reported
// again.
func (d *decoder) convertVar(v *variable, val cty.Value, rng *hcl.Range, source string) cty.Value {
	if v.ty == cty.DynamicPseudoType {
		return val
	}
	cv, err := convert.Convert(val, v.ty)
	if err != nil {
		d.add(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid value for variable",
			Detail:   fmt.Sprintf("%s of variable %q must be %s: %s", source, v.name, v.ty.FriendlyName(), err),
			Subject:  rng,
		})
		return cty.DynamicVal
	}
	return cv
}

// isNull reports whether a is written as a literal null, which for a
// default means "no default".
func isNull(a *hcl.Attribute) bool {
	v, diags := a.Expr.Value(nil)
	return !diags.HasErrors() && v.IsNull()
}

// assign computes each declared variable's value. Later sources win:
// the default, then SCHED_VAR_<name> from cfg.Env, then the var files in
// order, then -var flags. Setting an undeclared variable from a file or a
// flag is an error (it is most likely a typo); environment variables are
// shared with everything else on the machine, so unknown ones are ignored.
func (d *decoder) assign(decls []*variable, cfg ParseConfig) map[string]cty.Value {
	byName := make(map[string]*variable, len(decls))
	vals := map[string]cty.Value{}
	for _, v := range decls {
		byName[v.name] = v
		if v.def != cty.NilVal {
			vals[v.name] = v.def
		}
	}
	for _, v := range decls {
		if raw, ok := cfg.Env[EnvVarPrefix+v.name]; ok {
			vals[v.name] = d.rawVar(v, raw, EnvVarPrefix+v.name)
		}
	}
	for _, f := range cfg.VarFiles {
		d.varFile(f, byName, vals)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.VarFlags)) {
		v, ok := byName[name]
		if !ok {
			d.add(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Undeclared variable",
				Detail:   fmt.Sprintf("-var %s=...: the job file declares no variable %q", name, name),
			})
			continue
		}
		vals[name] = d.rawVar(v, cfg.VarFlags[name], "-var "+name)
	}
	for _, v := range decls {
		if _, ok := vals[v.name]; !ok {
			d.add(problem(v.decl, "Missing variable value",
				"variable %q has no default and no value: set it in a var file, with -var %s=... or with %s%s",
				v.name, v.name, EnvVarPrefix, v.name))
			vals[v.name] = cty.DynamicVal
		}
	}
	return vals
}

// varFile reads one var file (`name = value` lines) into vals.
func (d *decoder) varFile(f VarFile, byName map[string]*variable, vals map[string]cty.Value) {
	file, diags := hclsyntax.ParseConfig(f.Body, f.Filename, hcl.InitialPos)
	d.add(diags...)
	if diags.HasErrors() {
		return
	}
	body := file.Body.(*hclsyntax.Body)
	d.add(keepRuntime(body, f.Body)...)
	attrs, diags := body.JustAttributes()
	d.add(diags...)
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		a := attrs[name]
		v, ok := byName[name]
		if !ok {
			d.add(problem(a.NameRange, "Undeclared variable",
				"%s sets %q, but the job file declares no such variable", f.Filename, name))
			continue
		}
		if val, ok := d.evalAttr(a, cty.DynamicPseudoType); ok {
			rng := a.Expr.Range()
			vals[name] = d.convertVar(v, val, &rng, f.Filename)
		}
	}
}

// rawVar reads a value given as text, from a -var flag or the environment.
// For a string, number or bool (or untyped) variable the text is the value
// itself, so -var image=nginx needs no quotes; a list, map or object is
// written in HCL syntax: -var 'dcs=["dc1","dc2"]'.
func (d *decoder) rawVar(v *variable, raw, source string) cty.Value {
	if v.ty == cty.DynamicPseudoType || v.ty.IsPrimitiveType() {
		return d.convertVar(v, cty.StringVal(raw), nil, source)
	}
	if err := state.CheckHCLDepth(source, []byte(raw), state.MaxHCLDepth); err != nil {
		d.add(problem(hcl.Range{Filename: source}, "Value too deep", "%v", err))
		return cty.DynamicVal
	}
	expr, diags := hclsyntax.ParseExpression([]byte(strings.TrimSpace(raw)), source, hcl.InitialPos)
	d.add(diags...)
	if diags.HasErrors() {
		return cty.DynamicVal
	}
	val, diags := expr.Value(&hcl.EvalContext{Functions: d.ctx.Functions})
	d.add(diags...)
	if diags.HasErrors() {
		return cty.DynamicVal
	}
	return d.convertVar(v, val, nil, source)
}

// locals evaluates the attributes of every locals block. A local may use
// variables and other locals in any order, so each is evaluated once the
// locals it names are (in declaration order among those ready at once);
// what is never ready is a cycle. A local is evaluated with an object of
// just the locals it names: building the whole object for each (as the
// rounds this replaced did) made n locals cost n², 96 s for 20,000.
func (d *decoder) locals(blocks []*hcl.Block) map[string]cty.Value {
	var pending []*hcl.Attribute
	declared := map[string]*hcl.Attribute{}
	for _, b := range blocks {
		attrs, diags := b.Body.JustAttributes()
		d.add(diags...)
		for _, name := range slices.Sorted(maps.Keys(attrs)) {
			a := attrs[name]
			if prev, dup := declared[name]; dup {
				d.add(problem(a.NameRange, "Duplicate local", "local %q was already defined at %s", name, pos(prev.NameRange)))
				continue
			}
			declared[name] = a
			pending = append(pending, a)
		}
	}
	refs := make([][]string, len(pending)) // the declared locals each names
	waiting := make([]int, len(pending))   // of those, how many have no value yet
	users := map[string][]int{}
	var ready []int
	for i, a := range pending {
		refs[i] = d.localRefs(a, declared)
		for _, name := range refs[i] {
			users[name] = append(users[name], i)
		}
		if waiting[i] = len(refs[i]); waiting[i] == 0 {
			ready = append(ready, i)
		}
	}
	vals := map[string]cty.Value{}
	for len(ready) > 0 {
		i := ready[0]
		ready = ready[1:]
		a := pending[i]
		scope := make(map[string]cty.Value, len(refs[i]))
		for _, name := range refs[i] {
			scope[name] = vals[name]
		}
		d.ctx.Variables[rootLocal] = cty.ObjectVal(scope)
		v, diags := a.Expr.Value(d.ctx)
		d.add(diags...)
		if diags.HasErrors() {
			v = cty.DynamicVal
		}
		vals[a.Name] = v
		for _, u := range users[a.Name] {
			if waiting[u]--; waiting[u] == 0 {
				ready = append(ready, u)
			}
		}
	}
	var stuck []*hcl.Attribute
	for _, a := range pending {
		if _, done := vals[a.Name]; !done {
			stuck = append(stuck, a)
		}
	}
	if len(stuck) > 0 {
		names := make([]string, len(stuck))
		for i, a := range stuck {
			names[i] = a.Name
		}
		for _, a := range stuck {
			d.add(problem(a.NameRange, "Local value cycle",
				"local %q depends on itself through the locals %s", a.Name, strings.Join(names, ", ")))
			vals[a.Name] = cty.DynamicVal
		}
	}
	d.ctx.Variables[rootLocal] = cty.ObjectVal(vals)
	return vals
}

// localRefs returns the declared locals a names (local.<name>), each once,
// in order. A reference to an undeclared local does not wait: evaluating it
// reports the name and its position. The local object is read only by
// name, as in Terraform: a local sees just the locals it names.
func (d *decoder) localRefs(a *hcl.Attribute, declared map[string]*hcl.Attribute) []string {
	var names []string
	seen := map[string]bool{}
	for _, t := range a.Expr.Variables() {
		if t.RootName() != rootLocal {
			continue
		}
		var step hcl.TraverseAttr
		ok := len(t) >= 2
		if ok {
			step, ok = t[1].(hcl.TraverseAttr)
		}
		if !ok {
			rng := t.SourceRange()
			d.add(problem(rng, "Invalid reference", "the local object cannot be read whole: name one of its values, as in local.<name>"))
			continue
		}
		if _, isDeclared := declared[step.Name]; isDeclared && !seen[step.Name] {
			seen[step.Name] = true
			names = append(names, step.Name)
		}
	}
	return names
}
