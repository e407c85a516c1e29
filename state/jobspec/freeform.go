package jobspec

import (
	"math/big"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// rawBody is a body that can list what it holds without a schema. Free-form
// blocks (a task's driver config, a scaling policy) have no schema here:
// their driver or plugin validates them later.
type rawBody interface {
	// items returns the attributes and blocks in source order.
	items() ([]*hcl.Attribute, []*hcl.Block)
}

// items lists an HCL2 body in source order.
func syntaxItems(b *hclsyntax.Body) ([]*hcl.Attribute, []*hcl.Block) {
	attrs := make([]*hcl.Attribute, 0, len(b.Attributes))
	for _, a := range b.Attributes {
		attrs = append(attrs, a.AsHCLAttribute())
	}
	slices.SortFunc(attrs, func(x, y *hcl.Attribute) int { return x.Range.Start.Byte - y.Range.Start.Byte })
	blocks := make([]*hcl.Block, 0, len(b.Blocks))
	for _, blk := range b.Blocks {
		blocks = append(blocks, blk.AsHCLBlock())
	}
	return attrs, blocks
}

// freeform reads a schema-less body into a map. Attributes become plain Go
// values (string, int, float64, bool, []any, map[string]any); each nested
// block becomes a map appended to a list under its type, since a block may
// repeat (`mount { ... }` twice). A labelled block nests its body under its
// labels: `port "http" { to = 8080 }` is {"port": [{"http": {"to": 8080}}]}.
func (d *decoder) freeform(body hcl.Body) map[string]any {
	var attrs []*hcl.Attribute
	var blocks []*hcl.Block
	switch b := body.(type) {
	case *hclsyntax.Body:
		attrs, blocks = syntaxItems(b)
	case rawBody:
		attrs, blocks = b.items()
	default:
		as, diags := body.JustAttributes()
		d.add(diags...)
		for _, a := range as {
			attrs = append(attrs, a)
		}
	}
	out := make(map[string]any, len(attrs)+len(blocks))
	for _, a := range attrs {
		if v, ok := d.evalAttr(a, cty.DynamicPseudoType); ok {
			out[a.Name] = goValue(v)
		}
	}
	for _, b := range blocks {
		if attrNamed(attrs, b.Type) {
			d.add(problem(b.DefRange, "Duplicate "+b.Type, "%q is set both as an attribute and as a block", b.Type))
			continue
		}
		var v any = d.freeform(b.Body)
		for i := len(b.Labels) - 1; i >= 0; i-- {
			v = map[string]any{b.Labels[i]: v}
		}
		list, _ := out[b.Type].([]any)
		out[b.Type] = append(list, v)
	}
	return out
}

// attrNamed reports whether attrs holds one called name.
func attrNamed(attrs []*hcl.Attribute, name string) bool {
	return slices.ContainsFunc(attrs, func(a *hcl.Attribute) bool { return a.Name == name })
}

// goValue converts a known cty value to the plain Go value a driver config
// holds. Whole numbers become int, so `port = 8080` reads back as 8080.
func goValue(v cty.Value) any {
	if v.IsNull() {
		return nil
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		return v.AsString()
	case ty == cty.Bool:
		return v.True()
	case ty == cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() {
			if i, acc := bf.Int64(); acc == big.Exact {
				return int(i)
			}
		}
		f, _ := bf.Float64()
		return f
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType():
		out := make([]any, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, goValue(e))
		}
		return out
	case ty.IsMapType() || ty.IsObjectType():
		out := make(map[string]any, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			out[k.AsString()] = goValue(e)
		}
		return out
	}
	return nil
}
