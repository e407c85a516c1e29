package state

import (
	"regexp"
	"strconv"

	"github.com/hashicorp/go-version"
)

// Validation of a group's ports, services and checks, and of placement
// rules (constraints, affinities, spreads), split from job_validate.go.

// ports checks the ports of a group's and its tasks' networks together:
// they share the allocation's network, so labels and static values must
// not collide across them.
func (v *validator) ports(p string, tg *TaskGroup) {
	labels := make(map[string]bool)
	static := make(map[string]bool)
	check := func(np string, n *NetworkResource) {
		for _, list := range []struct {
			field    string
			ports    []Port
			reserved bool
		}{{"ReservedPorts", n.ReservedPorts, true}, {"DynamicPorts", n.DynamicPorts, false}} {
			for i, port := range list.ports {
				pp := idx(np, list.field, i)
				if port.Label == "" {
					v.add(at(pp, "Label"), "missing port label")
				} else if labels[port.Label] {
					v.add(at(pp, "Label"), "port label %q is used twice in the group", port.Label)
				}
				labels[port.Label] = true
				switch {
				case list.reserved && (port.Value < 1 || port.Value > 65535):
					v.add(at(pp, "Value"), "static port %d is outside 1 to 65535", port.Value)
				case !list.reserved && (port.Value < 0 || port.Value > 65535):
					v.add(at(pp, "Value"), "port %d is outside 0 to 65535", port.Value)
				case list.reserved:
					key := port.HostNetwork + ":" + strconv.Itoa(port.Value)
					if static[key] {
						v.add(at(pp, "Value"), "static port %d is reserved twice in the group", port.Value)
					}
					static[key] = true
				}
				if port.To < -1 || port.To > 65535 {
					v.add(at(pp, "To"), "mapped port %d is outside -1 to 65535", port.To)
				}
			}
		}
	}
	for i, n := range tg.Networks {
		if n == nil {
			v.add(idx(p, "Networks", i), "network is null")
			continue
		}
		check(idx(p, "Networks", i), n)
	}
	for k, t := range tg.Tasks {
		if t == nil || t.Resources == nil {
			continue
		}
		rp := at(idx(p, "Tasks", k), "Resources")
		for i, n := range t.Resources.Networks {
			if n == nil {
				v.add(idx(rp, "Networks", i), "network is null")
				continue
			}
			check(idx(rp, "Networks", i), n)
		}
	}
}

// services checks the services of a group and its tasks; their names must
// be unique across the group, as they register from the same allocation.
func (v *validator) services(p string, tg *TaskGroup) {
	seen := make(map[string]bool)
	check := func(list []*Service, lp string) {
		for i, s := range list {
			sp := idx(lp, "Services", i)
			if s == nil {
				v.add(sp, "service is null")
				continue
			}
			switch {
			case s.Name == "":
				v.add(at(sp, "Name"), "missing service name")
			case seen[s.Name]:
				v.add(at(sp, "Name"), "service %q is defined twice in the group", s.Name)
			}
			seen[s.Name] = true
			if s.Provider != ServiceProviderSched {
				v.add(at(sp, "Provider"), "unsupported service provider %q: want %s", s.Provider, ServiceProviderSched)
			}
			for k, c := range s.Checks {
				v.check(idx(sp, "Checks", k), c)
			}
		}
	}
	check(tg.Services, p)
	for k, t := range tg.Tasks {
		if t != nil {
			check(t.Services, idx(p, "Tasks", k))
		}
	}
}

func (v *validator) check(p string, c *ServiceCheck) {
	if c == nil {
		v.add(p, "check is null")
		return
	}
	switch c.Type {
	case ServiceCheckHTTP:
		if c.Path == "" {
			v.add(at(p, "Path"), "http checks need a path")
		}
	case ServiceCheckScript:
		if c.Command == "" {
			v.add(at(p, "Command"), "script checks need a command")
		}
	case ServiceCheckTCP, ServiceCheckGRPC:
	default:
		v.add(at(p, "Type"), "invalid check type %q: want http, tcp, script or grpc", c.Type)
	}
	if c.Interval <= 0 {
		v.add(at(p, "Interval"), "check interval must be positive")
	}
	if c.Timeout <= 0 {
		v.add(at(p, "Timeout"), "check timeout must be positive")
	}
}

func (v *validator) constraints(p string, cs []*Constraint) {
	for i, c := range cs {
		cp := idx(p, "Constraints", i)
		if c == nil {
			v.add(cp, "constraint is null")
			continue
		}
		v.constraint(cp, c.LTarget, c.Operand, c.RTarget, true)
	}
}

// constraint checks one constraint or (with constraint false) affinity.
func (v *validator) constraint(p, l, op, r string, constraint bool) {
	needR := true
	switch op {
	case "=", "==", "is", "!=", "not", "<", "<=", ">", ">=",
		ConstraintSetContains, ConstraintSetContainsAll, ConstraintSetContainsAny:
	case ConstraintRegex:
		if _, err := regexp.Compile(r); err != nil {
			v.add(at(p, "RTarget"), "invalid regular expression %q: %v", r, err)
		}
	case ConstraintVersion, ConstraintSemver:
		if _, err := version.NewConstraint(r); err != nil {
			v.add(at(p, "RTarget"), "invalid version constraint %q: %v", r, err)
		}
	case ConstraintAttributeIsSet, ConstraintAttributeNotSet:
		needR = false
		if !constraint {
			v.add(at(p, "Operand"), "operand %q is not allowed in an affinity", op)
		}
	case ConstraintDistinctHosts:
		if !constraint {
			v.add(at(p, "Operand"), "operand %q is not allowed in an affinity", op)
		}
		return // Targets are ignored: the operand says it all.
	case ConstraintDistinctProperty:
		needR = false
		if !constraint {
			v.add(at(p, "Operand"), "operand %q is not allowed in an affinity", op)
		}
		if r != "" {
			if n, err := strconv.ParseUint(r, 10, 64); err != nil || n < 1 {
				v.add(at(p, "RTarget"), "distinct_property limit %q must be a positive integer", r)
			}
		}
	default:
		v.add(at(p, "Operand"), "unknown operand %q", op)
		return
	}
	if l == "" {
		v.add(at(p, "LTarget"), "missing left target")
	}
	if needR && r == "" {
		v.add(at(p, "RTarget"), "operand %q needs a right target", op)
	}
}

func (v *validator) affinities(p string, as []*Affinity) {
	for i, a := range as {
		ap := idx(p, "Affinities", i)
		if a == nil {
			v.add(ap, "affinity is null")
			continue
		}
		v.constraint(ap, a.LTarget, a.Operand, a.RTarget, false)
		if a.Weight == 0 || a.Weight < -100 || a.Weight > 100 {
			v.add(at(ap, "Weight"), "weight %d must be non-zero, from -100 to 100", a.Weight)
		}
	}
}

func (v *validator) spreads(p string, ss []*Spread) {
	for i, s := range ss {
		sp := idx(p, "Spreads", i)
		if s == nil {
			v.add(sp, "spread is null")
			continue
		}
		if s.Attribute == "" {
			v.add(at(sp, "Attribute"), "missing spread attribute")
		}
		if s.Weight < 0 || s.Weight > 100 {
			v.add(at(sp, "Weight"), "weight %d is outside 0 to 100", s.Weight)
		}
		sum := 0
		values := make(map[string]bool)
		for k, t := range s.SpreadTarget {
			tp := idx(sp, "SpreadTarget", k)
			if t == nil {
				v.add(tp, "spread target is null")
				continue
			}
			if t.Value == "" {
				v.add(at(tp, "Value"), "missing spread target value")
			} else if values[t.Value] {
				v.add(at(tp, "Value"), "spread target %q is listed twice", t.Value)
			}
			values[t.Value] = true
			sum += int(t.Percent)
		}
		if sum > 100 {
			v.add(at(sp, "SpreadTarget"), "target percentages sum to %d, above 100", sum)
		}
	}
}
