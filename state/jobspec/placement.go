package jobspec

import (
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/schedhq/sched/state"
)

// operandShorthands are the attributes that name an operand and carry its
// right-hand value at once: `regexp = "^v1"` is operator "regexp" with value
// "^v1".
const operandShorthands = "regexp version semver set_contains set_contains_any set_contains_all"

// Operands set by the distinct_* shorthands of a constraint.
const (
	operandDistinctHosts    = "distinct_hosts"
	operandDistinctProperty = "distinct_property"
)

// constraints reads every constraint block of c.
func (d *decoder) constraints(c *hcl.BodyContent) []*state.Constraint {
	var out []*state.Constraint
	for _, b := range blocksOf(c, "constraint") {
		out = append(out, d.constraint(b))
	}
	return out
}

// constraint reads one constraint block. Besides attribute/operator/value
// it takes the shorthands, of which at most one may be used, since each of
// them sets the operator.
func (d *decoder) constraint(b *hcl.Block) *state.Constraint {
	c := d.content(b.Body, spec("attribute operator value distinct_hosts distinct_property "+operandShorthands))
	con := &state.Constraint{}
	d.str(c, "attribute", &con.LTarget)
	d.str(c, "value", &con.RTarget)
	d.str(c, "operator", &con.Operand)

	ops := d.operatorAttrs(c, "distinct_hosts", "distinct_property")
	for _, a := range ops {
		switch a.Name {
		case "distinct_hosts":
			var on bool
			if d.boolean(c, a.Name, &on) && on {
				con.Operand = operandDistinctHosts
			}
		case "distinct_property":
			// The property is the left side; value, if any, is how many
			// allocations may share one value of it.
			if d.str(c, a.Name, &con.LTarget) {
				con.Operand = operandDistinctProperty
			}
		default:
			d.shorthand(c, a, &con.Operand, &con.RTarget)
		}
	}
	if con.Operand == "" {
		con.Operand = state.DefaultConstraintOperand
	}
	return con
}

// operatorAttrs returns the attributes of c that set the operator (operator
// itself, the shorthands and extra), recording an error for each one after
// the first, and for a value next to a shorthand that carries its own.
func (d *decoder) operatorAttrs(c *hcl.BodyContent, extra ...string) []*hcl.Attribute {
	names := append([]string{"operator"}, strings.Fields(operandShorthands)...)
	names = append(names, extra...)
	var found []*hcl.Attribute
	for _, n := range names {
		if a, ok := c.Attributes[n]; ok {
			found = append(found, a)
		}
	}
	if len(found) > 1 {
		for _, a := range found[1:] {
			d.add(problem(a.NameRange, "Conflicting operator",
				"%q and %q both set the operator; use one", found[0].Name, a.Name))
		}
	}
	var out []*hcl.Attribute
	for _, a := range found {
		if a.Name == "operator" {
			continue
		}
		if v, ok := c.Attributes["value"]; ok && a.Name != "distinct_property" {
			d.add(problem(v.NameRange, "Conflicting value",
				"%q already carries the value; remove \"value\"", a.Name))
		}
		out = append(out, a)
	}
	return out
}

// shorthand applies an operand shorthand attribute: its name becomes the
// operand and its value the right-hand side.
func (d *decoder) shorthand(c *hcl.BodyContent, a *hcl.Attribute, operand, rtarget *string) {
	if d.str(c, a.Name, rtarget) {
		*operand = a.Name
	}
}

// affinities reads every affinity block of c.
func (d *decoder) affinities(c *hcl.BodyContent) []*state.Affinity {
	var out []*state.Affinity
	for _, b := range blocksOf(c, "affinity") {
		c := d.content(b.Body, spec("attribute operator value weight "+operandShorthands))
		a := &state.Affinity{}
		d.str(c, "attribute", &a.LTarget)
		d.str(c, "value", &a.RTarget)
		d.str(c, "operator", &a.Operand)
		setInt(d, c, "weight", &a.Weight)
		for _, attr := range d.operatorAttrs(c) {
			d.shorthand(c, attr, &a.Operand, &a.RTarget)
		}
		if a.Operand == "" {
			a.Operand = state.DefaultConstraintOperand
		}
		out = append(out, a)
	}
	return out
}

// spreads reads every spread block of c, with its target "value" blocks.
func (d *decoder) spreads(c *hcl.BodyContent) []*state.Spread {
	var out []*state.Spread
	for _, b := range blocksOf(c, "spread") {
		c := d.content(b.Body, spec("attribute weight", blk("target", "value")))
		s := &state.Spread{}
		d.str(c, "attribute", &s.Attribute)
		setInt(d, c, "weight", &s.Weight)
		for _, tb := range blocksOf(c, "target") {
			tc := d.content(tb.Body, spec("percent"))
			t := &state.SpreadTarget{Value: label(tb)}
			setInt(d, tc, "percent", &t.Percent)
			s.SpreadTarget = append(s.SpreadTarget, t)
		}
		out = append(out, s)
	}
	return out
}
