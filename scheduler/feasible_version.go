package scheduler

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/go-version"
)

// versionMatches checks the "version" operand: l is parsed leniently
// ("1.2", "v1.2.3-beta") and r is a go-version constraint such as
// ">= 1.2, < 3". As with go-version, a prerelease satisfies a constraint
// only when the constraint names a prerelease of the same version.
func (c *evalContext) versionMatches(l, r string) bool {
	vc, err := c.versionConstraint(r)
	if err != nil {
		return false
	}
	v, err := version.NewVersion(l)
	if err != nil {
		return false
	}
	return vc.Check(v)
}

// strictSemverRe is the grammar of semver.org 2.0: MAJOR.MINOR.PATCH
// without leading zeros, then an optional prerelease and build metadata.
var strictSemverRe = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)` +
	`(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// newStrictSemver parses a strict semantic version.
func newStrictSemver(s string) (*version.Version, error) {
	if !strictSemverRe.MatchString(s) {
		return nil, fmt.Errorf("%q is not a semantic version (MAJOR.MINOR.PATCH)", s)
	}
	return version.NewSemver(s)
}

// semverTerm is one comparison of a semver constraint.
type semverTerm struct {
	op string
	v  *version.Version
	// pessimistic holds "~>" terms, checked with go-version's rule.
	pessimistic version.Constraints
}

// parseSemverConstraint parses a comma-separated list of "op version"
// terms with op one of =, !=, >, >=, <, <=, ~> (none means =). Missing
// minor or patch numbers in a constraint count as 0, as job validation
// accepts them; it is the node's value that must be a strict semantic
// version.
func parseSemverConstraint(s string) ([]semverTerm, error) {
	var terms []semverTerm
	for _, raw := range strings.Split(s, ",") {
		raw = strings.TrimSpace(raw)
		op, rest := splitOperator(raw)
		v, err := version.NewSemver(rest)
		if err != nil {
			return nil, fmt.Errorf("semver constraint %q: %w", raw, err)
		}
		t := semverTerm{op: op, v: v}
		if op == "~>" {
			if t.pessimistic, err = version.NewConstraint(raw); err != nil {
				return nil, err
			}
		}
		terms = append(terms, t)
	}
	return terms, nil
}

// splitOperator splits "op version" into its operator ("=" when absent)
// and version.
func splitOperator(s string) (string, string) {
	for _, op := range []string{">=", "<=", "!=", "~>", "=", ">", "<"} {
		if rest, ok := strings.CutPrefix(s, op); ok {
			return op, strings.TrimSpace(rest)
		}
	}
	return "=", s
}

// semverMatches checks the "semver" operand: like "version", but l must be
// a strict semantic version (MAJOR.MINOR.PATCH, no "v", no leading zeros) and comparisons follow semver precedence, in
// which a prerelease sorts just before its release and is otherwise
// compared like any version, so "1.3.0-beta.1" satisfies ">= 1.2.0".
func (c *evalContext) semverMatches(l, r string) bool {
	terms, err := c.semverConstraint(r)
	if err != nil {
		return false
	}
	v, err := newStrictSemver(l)
	if err != nil {
		return false
	}
	for _, t := range terms {
		cmp := v.Compare(t.v)
		var ok bool
		switch t.op {
		case "=":
			ok = cmp == 0
		case "!=":
			ok = cmp != 0
		case ">":
			ok = cmp > 0
		case ">=":
			ok = cmp >= 0
		case "<":
			ok = cmp < 0
		case "<=":
			ok = cmp <= 0
		case "~>":
			ok = t.pessimistic.Check(v)
		}
		if !ok {
			return false
		}
	}
	return true
}
