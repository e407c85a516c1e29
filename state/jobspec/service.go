package jobspec

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/schedhq/sched/state"
	"github.com/zclconf/go-cty/cty"
)

// services reads every service block of c, of a group or of a task.
func (d *decoder) services(c *hcl.BodyContent) []*state.Service {
	var out []*state.Service
	for _, b := range blocksOf(c, "service") {
		out = append(out, d.service(b))
	}
	return out
}

// service reads one service block with its checks.
func (d *decoder) service(b *hcl.Block) *state.Service {
	c := d.content(b.Body, spec("name port tags canary_tags provider address address_mode "+
		"enable_tag_override task meta", blk("meta"), blk("check")))
	s := &state.Service{}
	d.str(c, "name", &s.Name)
	d.str(c, "port", &s.PortLabel)
	d.strings(c, "tags", &s.Tags)
	d.strings(c, "canary_tags", &s.CanaryTags)
	d.str(c, "provider", &s.Provider)
	d.str(c, "address", &s.Address)
	d.str(c, "address_mode", &s.AddressMode)
	d.boolean(c, "enable_tag_override", &s.EnableTagOverride)
	d.str(c, "task", &s.TaskName)
	s.Meta = d.stringMap(c, "meta")
	for _, cb := range blocksOf(c, "check") {
		s.Checks = append(s.Checks, d.check(cb))
	}
	return s
}

// check reads one check block of a service.
func (d *decoder) check(b *hcl.Block) *state.ServiceCheck {
	c := d.content(b.Body, spec("name type command args path protocol method port interval timeout "+
		"initial_status on_update task header", blk("header")))
	k := &state.ServiceCheck{}
	d.str(c, "name", &k.Name)
	d.str(c, "type", &k.Type)
	d.str(c, "command", &k.Command)
	d.strings(c, "args", &k.Args)
	d.str(c, "path", &k.Path)
	d.str(c, "protocol", &k.Protocol)
	d.str(c, "method", &k.Method)
	d.str(c, "port", &k.PortLabel)
	d.duration(c, "interval", &k.Interval)
	d.duration(c, "timeout", &k.Timeout)
	d.str(c, "initial_status", &k.InitialStatus)
	d.str(c, "on_update", &k.OnUpdate)
	d.str(c, "task", &k.TaskName)
	k.Header = d.header(c)
	return k
}

// header reads a check's HTTP headers, `header { X-Token = ["a"] }` or the
// attribute form. A header may have several values; a single string is
// taken as a list of one.
func (d *decoder) header(c *hcl.BodyContent) map[string][]string {
	var attrs hcl.Attributes
	if b := d.one(c, "header"); b != nil {
		var diags hcl.Diagnostics
		attrs, diags = b.Body.JustAttributes()
		d.add(diags...)
		if a, ok := c.Attributes["header"]; ok {
			d.add(problem(b.DefRange, "Duplicate header", "\"header\" is set both as a block and at %s", pos(a.Range)))
		}
	} else if a, ok := c.Attributes["header"]; ok {
		v, ok := d.evalAttr(a, cty.DynamicPseudoType)
		if !ok {
			return nil
		}
		if !v.Type().IsObjectType() && !v.Type().IsMapType() {
			d.add(problem(a.Expr.Range(), "Invalid header", "\"header\" must be a map of header names to values"))
			return nil
		}
		out := map[string][]string{}
		for k, e := range v.AsValueMap() {
			if vals, ok := d.headerValues(a, k, e); ok {
				out[k] = vals
			}
		}
		return out
	}
	if attrs == nil {
		return nil
	}
	out := map[string][]string{}
	for name, a := range attrs {
		if v, ok := d.evalAttr(a, cty.DynamicPseudoType); ok {
			if vals, ok := d.headerValues(a, name, v); ok {
				out[name] = vals
			}
		}
	}
	return out
}

// headerValues converts one header's value, a string or a list of strings.
func (d *decoder) headerValues(a *hcl.Attribute, name string, v cty.Value) ([]string, bool) {
	if v.Type() == cty.String {
		return []string{v.AsString()}, true
	}
	var out []string
	ok := v.CanIterateElements()
	if ok {
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if e.IsNull() || e.Type() != cty.String {
				ok = false
				break
			}
			out = append(out, e.AsString())
		}
	}
	if !ok || v.Type().IsMapType() || v.Type().IsObjectType() {
		d.add(problem(a.Expr.Range(), "Invalid header", "header %q must be a string or a list of strings", name))
		return nil, false
	}
	return out, true
}
