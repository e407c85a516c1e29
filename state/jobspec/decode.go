package jobspec

import (
	"math/big"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/schedhq/sched/state"
)

// decoder reads blocks of a job file into state values. It records every
// problem instead of stopping at the first, so a user fixes a file in one
// round. It works on hcl.Body, which both the HCL2 and the HCL1 front ends
// provide, so the two syntaxes share one meaning.
type decoder struct {
	// ctx evaluates expressions: var.*, local.* and functions for HCL2,
	// nil for HCL1 whose values are literals.
	ctx   *hcl.EvalContext
	diags hcl.Diagnostics
	// jobUpdate is the job's update block while its groups are read: a
	// group's update block without max_parallel inherits the job's.
	jobUpdate *state.UpdateStrategy
	// jobReschedule is the job's reschedule block while its groups are
	// read: a group without one takes it, and a group's own block sets
	// its attributes over it.
	jobReschedule *state.ReschedulePolicy
	// jobType is the job's type (service when it names none) while its
	// blocks are read: a reschedule block starts from its defaults.
	jobType string
}

// spec builds the schema of a block: attrs is a space-separated list of
// attribute names; a name may be both an attribute and a block (meta, env),
// so `meta { ... }` and `meta = { ... }` both work.
func spec(attrs string, blocks ...hcl.BlockHeaderSchema) *hcl.BodySchema {
	s := &hcl.BodySchema{Blocks: blocks}
	for _, name := range strings.Fields(attrs) {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: name})
	}
	return s
}

// blk declares a nested block type and the names of its labels.
func blk(typ string, labels ...string) hcl.BlockHeaderSchema {
	return hcl.BlockHeaderSchema{Type: typ, LabelNames: labels}
}

// add records diagnostics.
func (d *decoder) add(diags ...*hcl.Diagnostic) {
	d.diags = append(d.diags, diags...)
}

// content reads body against s; anything s does not declare is an error
// naming it and its position.
func (d *decoder) content(body hcl.Body, s *hcl.BodySchema) *hcl.BodyContent {
	c, diags := body.Content(s)
	d.add(diags...)
	if c == nil {
		c = &hcl.BodyContent{}
	}
	if c.Attributes == nil {
		c.Attributes = hcl.Attributes{}
	}
	return c
}

// blocksOf returns c's blocks of type typ in source order.
func blocksOf(c *hcl.BodyContent, typ string) []*hcl.Block {
	var out []*hcl.Block
	for _, b := range c.Blocks {
		if b.Type == typ {
			out = append(out, b)
		}
	}
	return out
}

// one returns the block of type typ, or nil; a second one is an error, as
// these blocks configure a single thing.
func (d *decoder) one(c *hcl.BodyContent, typ string) *hcl.Block {
	bs := blocksOf(c, typ)
	if len(bs) == 0 {
		return nil
	}
	for _, extra := range bs[1:] {
		d.add(problem(extra.DefRange, "Duplicate block",
			"only one %q block is allowed here; the first is at %s", typ, pos(bs[0].DefRange)))
	}
	return bs[0]
}

// eval evaluates attribute name of c and converts it to ty. It returns false
// when the attribute is absent or null (both mean "not set") or broken (the
// problem is recorded).
func (d *decoder) eval(c *hcl.BodyContent, name string, ty cty.Type) (cty.Value, bool) {
	a, ok := c.Attributes[name]
	if !ok {
		return cty.NilVal, false
	}
	return d.evalAttr(a, ty)
}

// evalAttr is eval for an attribute in hand.
func (d *decoder) evalAttr(a *hcl.Attribute, ty cty.Type) (cty.Value, bool) {
	v, diags := a.Expr.Value(d.ctx)
	d.add(diags...)
	if diags.HasErrors() || v.IsNull() {
		return cty.NilVal, false
	}
	if !v.IsWhollyKnown() {
		// Only a variable or local that already failed (and was reported)
		// is unknown; its uses are skipped rather than reported again.
		return cty.NilVal, false
	}
	if ty == cty.DynamicPseudoType {
		return v, true
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		d.add(problem(a.Expr.Range(), "Incorrect attribute value type",
			"%q must be %s: %s", a.Name, ty.FriendlyName(), err))
		return cty.NilVal, false
	}
	if cv.IsNull() {
		return cty.NilVal, false
	}
	return cv, true
}

// str sets *dst from string attribute name, when present.
func (d *decoder) str(c *hcl.BodyContent, name string, dst *string) bool {
	v, ok := d.eval(c, name, cty.String)
	if ok {
		*dst = v.AsString()
	}
	return ok
}

// boolean sets *dst from bool attribute name, when present.
func (d *decoder) boolean(c *hcl.BodyContent, name string, dst *bool) bool {
	v, ok := d.eval(c, name, cty.Bool)
	if ok {
		*dst = v.True()
	}
	return ok
}

// strings sets *dst from list-of-strings attribute name, when present.
func (d *decoder) strings(c *hcl.BodyContent, name string, dst *[]string) bool {
	v, ok := d.eval(c, name, cty.List(cty.String))
	if !ok {
		return false
	}
	out := make([]string, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() {
			d.add(problem(c.Attributes[name].Expr.Range(), "Invalid list", "%q must not contain null", name))
			return false
		}
		out = append(out, e.AsString())
	}
	*dst = out
	return true
}

// integer is the set of Go integer types the job structs use.
type integer interface {
	~int | ~int8 | ~int64 | ~uint8 | ~uint64
}

// setInt sets *dst from whole-number attribute name, when present and in
// the range of T.
func setInt[T integer](d *decoder, c *hcl.BodyContent, name string, dst *T) bool {
	v, ok := d.eval(c, name, cty.Number)
	if !ok {
		return false
	}
	rng := c.Attributes[name].Expr.Range()
	bf := v.AsBigFloat()
	i, acc := bf.Int64()
	if !bf.IsInt() || acc != big.Exact {
		d.add(problem(rng, "Invalid number", "%q must be a whole number, not %s", name, bf.Text('g', -1)))
		return false
	}
	t := T(i)
	var zero T
	if int64(t) != i || (i < 0 && zero-1 > zero) {
		d.add(problem(rng, "Number out of range", "%d is out of range for %q", i, name))
		return false
	}
	*dst = t
	return true
}

// duration sets *dst from duration attribute name ("30s", "5m", "1h30m"),
// when present.
func (d *decoder) duration(c *hcl.BodyContent, name string, dst *time.Duration) bool {
	v, ok := d.eval(c, name, cty.String)
	if !ok {
		return false
	}
	dur, err := time.ParseDuration(v.AsString())
	if err != nil {
		d.add(problem(c.Attributes[name].Expr.Range(), "Invalid duration",
			"%q for %q is not a duration like \"30s\", \"5m\" or \"1h30m\"", v.AsString(), name))
		return false
	}
	*dst = dur
	return true
}

// durationPtr is duration for the optional durations of a group, where nil
// means "not set" and a zero is a real value.
func (d *decoder) durationPtr(c *hcl.BodyContent, name string, dst **time.Duration) {
	var dur time.Duration
	if d.duration(c, name, &dur) {
		*dst = &dur
	}
}

// stringMap reads a map of strings written either as a block
// (`meta { owner = "ops" }`) or as an attribute (`meta = { "a.b" = "c" }`,
// for keys that are not identifiers). It returns nil when neither is there.
func (d *decoder) stringMap(c *hcl.BodyContent, name string) map[string]string {
	b := d.one(c, name)
	a, isAttr := c.Attributes[name]
	switch {
	case b != nil && isAttr:
		d.add(problem(b.DefRange, "Duplicate "+name, "%q is set both as a block and at %s", name, pos(a.Range)))
		return nil
	case b != nil:
		return d.blockStringMap(b)
	case isAttr:
		v, ok := d.evalAttr(a, cty.Map(cty.String))
		if !ok {
			return nil
		}
		out := map[string]string{}
		for k, e := range v.AsValueMap() {
			if !e.IsNull() {
				out[k] = e.AsString()
			}
		}
		return out
	}
	return nil
}

// blockStringMap reads a block of `key = value` lines into a map, each value
// converted to a string (so `port = 8080` in meta is "8080").
func (d *decoder) blockStringMap(b *hcl.Block) map[string]string {
	attrs, diags := b.Body.JustAttributes()
	d.add(diags...)
	out := make(map[string]string, len(attrs))
	for name, a := range attrs {
		if v, ok := d.evalAttr(a, cty.String); ok {
			out[name] = v.AsString()
		}
	}
	return out
}

// label returns the block's first label, which schemas that declare one
// guarantee.
func label(b *hcl.Block) string {
	if len(b.Labels) == 0 {
		return ""
	}
	return b.Labels[0]
}
