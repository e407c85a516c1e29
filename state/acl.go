package state

import (
	"cmp"
	"slices"
	"strings"
)

// Namespace capabilities: what a token may do with the jobs of a namespace
// (spec/jobs-api.md §5). A namespace rule grants them one by one through
// `capabilities = [...]` or in bundles through `policy = "..."`.
const (
	// NamespaceCapabilityDeny denies every capability of the namespace,
	// whatever else the matching rule grants.
	NamespaceCapabilityDeny              = "deny"
	NamespaceCapabilityListJobs          = "list-jobs"
	NamespaceCapabilityParseJob          = "parse-job"
	NamespaceCapabilityReadJob           = "read-job"
	NamespaceCapabilitySubmitJob         = "submit-job"
	NamespaceCapabilityDispatchJob       = "dispatch-job"
	NamespaceCapabilityReadJobScaling    = "read-job-scaling"
	NamespaceCapabilityScaleJob          = "scale-job"
	NamespaceCapabilityReadLogs          = "read-logs"
	NamespaceCapabilityReadFS            = "read-fs"
	NamespaceCapabilityAllocExec         = "alloc-exec"
	NamespaceCapabilityAllocNodeExec     = "alloc-node-exec"
	NamespaceCapabilityAllocLifecycle    = "alloc-lifecycle"
	NamespaceCapabilityGateOverride      = "gate-override"
	NamespaceCapabilityListScaling       = "list-scaling-policies"
	NamespaceCapabilityReadScaling       = "read-scaling-policy"
	NamespaceCapabilityCSIListVolume     = "csi-list-volume"
	NamespaceCapabilityCSIReadVolume     = "csi-read-volume"
	NamespaceCapabilityCSIWriteVolume    = "csi-write-volume"
	NamespaceCapabilityCSIMountVolume    = "csi-mount-volume"
	NamespaceCapabilityCSIRegisterPlugin = "csi-register-plugin"
)

// Policy levels: the value of `policy = "..."` in a rule. Node, agent and
// operator rules take deny, read or write; namespace rules also take
// scale.
const (
	PolicyDeny  = "deny"
	PolicyRead  = "read"
	PolicyWrite = "write"
	// PolicyScale is a namespace bundle for autoscalers: read and change
	// job counts, nothing else.
	PolicyScale = "scale"
)

// capabilitySet is a set of namespace capabilities, one bit each, so that a
// check is a mask test rather than a slice walk.
type capabilitySet uint32

// namespaceCapabilities lists every capability in bit order. The order is
// internal (sets are never persisted), so adding one anywhere is safe.
var namespaceCapabilities = []string{
	NamespaceCapabilityDeny,
	NamespaceCapabilityListJobs,
	NamespaceCapabilityParseJob,
	NamespaceCapabilityReadJob,
	NamespaceCapabilitySubmitJob,
	NamespaceCapabilityDispatchJob,
	NamespaceCapabilityReadJobScaling,
	NamespaceCapabilityScaleJob,
	NamespaceCapabilityReadLogs,
	NamespaceCapabilityReadFS,
	NamespaceCapabilityAllocExec,
	NamespaceCapabilityAllocNodeExec,
	NamespaceCapabilityAllocLifecycle,
	NamespaceCapabilityGateOverride,
	NamespaceCapabilityListScaling,
	NamespaceCapabilityReadScaling,
	NamespaceCapabilityCSIListVolume,
	NamespaceCapabilityCSIReadVolume,
	NamespaceCapabilityCSIWriteVolume,
	NamespaceCapabilityCSIMountVolume,
	NamespaceCapabilityCSIRegisterPlugin,
}

// NamespaceCapabilities returns every capability a namespace rule may name,
// in a fixed order.
func NamespaceCapabilities() []string { return slices.Clone(namespaceCapabilities) }

// capabilityBit returns the bit of a capability name, or false.
func capabilityBit(name string) (capabilitySet, bool) {
	i := slices.Index(namespaceCapabilities, name)
	if i < 0 {
		return 0, false
	}
	return 1 << i, true
}

// capsOf returns the set of the named capabilities; unknown names are
// ignored (policies are validated before they are compiled).
func capsOf(names ...string) capabilitySet {
	var s capabilitySet
	for _, n := range names {
		if b, ok := capabilityBit(n); ok {
			s |= b
		}
	}
	return s
}

// Policy bundles. read is what Nomad's read policy grants plus read-logs;
// write adds everything that changes jobs and allocations except
// alloc-node-exec (running commands outside any isolation) and
// gate-override (overriding policy checks), which must always be granted
// by name.
var (
	readBundle = capsOf(NamespaceCapabilityListJobs, NamespaceCapabilityParseJob, NamespaceCapabilityReadJob,
		NamespaceCapabilityReadJobScaling, NamespaceCapabilityReadLogs, NamespaceCapabilityListScaling,
		NamespaceCapabilityReadScaling, NamespaceCapabilityCSIListVolume, NamespaceCapabilityCSIReadVolume)
	writeBundle = readBundle | capsOf(NamespaceCapabilitySubmitJob, NamespaceCapabilityDispatchJob,
		NamespaceCapabilityScaleJob, NamespaceCapabilityReadFS, NamespaceCapabilityAllocExec,
		NamespaceCapabilityAllocLifecycle, NamespaceCapabilityCSIWriteVolume, NamespaceCapabilityCSIMountVolume,
		NamespaceCapabilityCSIRegisterPlugin)
	scaleBundle = capsOf(NamespaceCapabilityListScaling, NamespaceCapabilityReadScaling,
		NamespaceCapabilityReadJobScaling, NamespaceCapabilityScaleJob)
	denyBit = capsOf(NamespaceCapabilityDeny)
)

// PolicyCapabilities returns the capabilities a namespace `policy` value
// expands to, or nil for an unknown value.
func PolicyCapabilities(policy string) []string {
	set, ok := namespaceBundle(policy)
	if !ok {
		return nil
	}
	var out []string
	for i, name := range namespaceCapabilities {
		if set&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	return out
}

func namespaceBundle(policy string) (capabilitySet, bool) {
	switch policy {
	case PolicyDeny:
		return denyBit, true
	case PolicyRead:
		return readBundle, true
	case PolicyWrite:
		return writeBundle, true
	case PolicyScale:
		return scaleBundle, true
	}
	return 0, false
}

// accessLevel is a node, agent or operator rule: nothing, read, or write
// (which implies read); denied overrides both.
type accessLevel struct {
	denied bool
	level  int // 0 none, 1 read, 2 write
}

func (a accessLevel) merge(policy string) accessLevel {
	switch policy {
	case PolicyDeny:
		a.denied = true
	case PolicyRead:
		a.level = max(a.level, 1)
	case PolicyWrite:
		a.level = max(a.level, 2)
	}
	return a
}

func (a accessLevel) allows(write bool) bool {
	if a.denied {
		return false
	}
	if write {
		return a.level >= 2
	}
	return a.level >= 1
}

// nsGlob is a namespace rule whose name holds a `*`.
type nsGlob struct {
	pattern string
	// literal is the number of non-wildcard characters: the more, the more
	// specific the rule.
	literal int
	caps    capabilitySet
}

// ACL is what a token may do, compiled from its policies once and then
// checked on every request without parsing anything. It is immutable and
// safe for concurrent use.
//
// Namespace rules: an exact rule for the namespace wins; otherwise the
// matching glob with the most literal characters (ties: the
// lexicographically smallest pattern, so the choice is stable). Only that
// one rule counts: `namespace "*" { policy = "write" }` with
// `namespace "secret" { policy = "deny" }` denies secret, and
// `namespace "*" { policy = "deny" }` with `namespace "dev" { policy =
// "read" }` lets dev be read. Within the chosen rule, merged over every
// policy of the token, deny wins over every capability. Node, agent and
// operator rules merge to the highest level unless one denies.
type ACL struct {
	management bool
	nsExact    map[string]capabilitySet
	nsGlobs    []nsGlob // most specific first
	node       accessLevel
	agent      accessLevel
	operator   accessLevel
	quota      accessLevel
}

// managementACL is shared: it holds no per-token data.
var managementACL = &ACL{management: true}

// ManagementACL returns the ACL of management tokens: everything allowed.
func ManagementACL() *ACL { return managementACL }

// NewACL compiles parsed policy rules into one ACL. Capabilities of the
// same namespace name merge across policies.
func NewACL(rules []*PolicyRules) *ACL {
	a := &ACL{nsExact: map[string]capabilitySet{}}
	globs := map[string]capabilitySet{}
	for _, r := range rules {
		if r == nil {
			continue
		}
		for _, ns := range r.Namespaces {
			caps := capsOf(ns.Capabilities...)
			if set, ok := namespaceBundle(ns.Policy); ok {
				caps |= set
			}
			if strings.Contains(ns.Name, "*") {
				globs[ns.Name] |= caps
			} else {
				a.nsExact[ns.Name] |= caps
			}
		}
		if r.Node != nil {
			a.node = a.node.merge(r.Node.Policy)
		}
		if r.Agent != nil {
			a.agent = a.agent.merge(r.Agent.Policy)
		}
		if r.Operator != nil {
			a.operator = a.operator.merge(r.Operator.Policy)
		}
		if r.Quota != nil {
			a.quota = a.quota.merge(r.Quota.Policy)
		}
	}
	for p, caps := range globs {
		a.nsGlobs = append(a.nsGlobs, nsGlob{pattern: p, literal: len(p) - strings.Count(p, "*"), caps: caps})
	}
	slices.SortFunc(a.nsGlobs, func(x, y nsGlob) int {
		return cmp.Or(cmp.Compare(y.literal, x.literal), cmp.Compare(x.pattern, y.pattern))
	})
	return a
}

// IsManagement reports whether a is a management token's ACL.
func (a *ACL) IsManagement() bool { return a.management }

// namespaceCaps returns the capabilities of the rule that governs ns, with
// deny already applied (a denying rule yields the empty set).
func (a *ACL) namespaceCaps(ns string) capabilitySet {
	caps, ok := a.nsExact[ns]
	if !ok {
		for _, g := range a.nsGlobs {
			if globMatch(g.pattern, ns) {
				caps, ok = g.caps, true
				break
			}
		}
	}
	if !ok || caps&denyBit != 0 {
		return 0
	}
	return caps
}

// AllowNamespaceOperation reports whether a grants capability in namespace
// ns. An unknown capability is never granted (except to management).
func (a *ACL) AllowNamespaceOperation(ns, capability string) bool {
	if a.management {
		return true
	}
	bit, ok := capabilityBit(capability)
	if !ok || bit == denyBit {
		return false
	}
	return a.namespaceCaps(ns)&bit != 0
}

// AllowNamespace reports whether a grants anything at all in ns: what
// listing or reading the namespace itself needs.
func (a *ACL) AllowNamespace(ns string) bool {
	return a.management || a.namespaceCaps(ns) != 0
}

// AllowSomeNamespace reports whether a grants anything in some namespace:
// what listing namespaces needs (the list is then filtered with
// AllowNamespace).
func (a *ACL) AllowSomeNamespace() bool {
	if a.management {
		return true
	}
	for _, caps := range a.nsExact {
		if caps != 0 && caps&denyBit == 0 {
			return true
		}
	}
	for _, g := range a.nsGlobs {
		if g.caps != 0 && g.caps&denyBit == 0 {
			return true
		}
	}
	return false
}

// AllowAnyNamespace reports whether some rule of a grants capability, so
// that a listing across namespaces (`namespace=*`) can have something to
// show: such a listing is then filtered namespace by namespace.
func (a *ACL) AllowAnyNamespace(capability string) bool {
	if a.management {
		return true
	}
	bit, ok := capabilityBit(capability)
	if !ok || bit == denyBit {
		return false
	}
	for _, caps := range a.nsExact {
		if caps&denyBit == 0 && caps&bit != 0 {
			return true
		}
	}
	for _, g := range a.nsGlobs {
		if g.caps&denyBit == 0 && g.caps&bit != 0 {
			return true
		}
	}
	return false
}

// AllowAllNamespaces reports whether a grants capability in every
// namespace that exists or may ever exist: through a `*` rule, with no
// more specific rule that withholds it. Endpoints that read across
// namespaces without filtering their results need this.
func (a *ACL) AllowAllNamespaces(capability string) bool {
	if a.management {
		return true
	}
	bit, ok := capabilityBit(capability)
	if !ok || bit == denyBit {
		return false
	}
	star := false
	for _, caps := range a.nsExact {
		if caps&denyBit != 0 || caps&bit == 0 {
			return false
		}
	}
	for _, g := range a.nsGlobs {
		if g.caps&denyBit != 0 || g.caps&bit == 0 {
			return false
		}
		star = star || g.pattern == "*"
	}
	return star
}

// AllowNodeRead reports whether a may read nodes.
func (a *ACL) AllowNodeRead() bool { return a.management || a.node.allows(false) }

// AllowNodeWrite reports whether a may change nodes (drain, eligibility,
// register on a node's behalf).
func (a *ACL) AllowNodeWrite() bool { return a.management || a.node.allows(true) }

// AllowAgentRead reports whether a may read an agent's configuration and
// members.
func (a *ACL) AllowAgentRead() bool { return a.management || a.agent.allows(false) }

// AllowAgentWrite reports whether a may change an agent (join).
func (a *ACL) AllowAgentWrite() bool { return a.management || a.agent.allows(true) }

// AllowOperatorRead reports whether a may read cluster operations (raft
// configuration).
func (a *ACL) AllowOperatorRead() bool { return a.management || a.operator.allows(false) }

// AllowOperatorWrite reports whether a may change cluster operations
// (remove a raft peer).
func (a *ACL) AllowOperatorWrite() bool { return a.management || a.operator.allows(true) }

// AllowQuotaRead reports whether a may list and read quota
// specifications and their usage.
func (a *ACL) AllowQuotaRead() bool { return a.management || a.quota.allows(false) }

// globMatch reports whether name matches pattern, where `*` matches any
// run of characters (including none) and everything else matches itself.
func globMatch(pattern, name string) bool {
	// Iterative matcher with one backtrack point: linear in practice and
	// never exponential, whatever the pattern.
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && pattern[p] == name[n]:
			p++
			n++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
