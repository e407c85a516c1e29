package state

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"
)

// ACLPolicy is a named set of rules that tokens refer to by name. Rules is
// kept as written (HCL or JSON) so that operators read back what they
// applied; it is parsed and validated before it is stored, and compiled
// into an ACL when a token that uses it is resolved.
type ACLPolicy struct {
	Name        string
	Description string
	Rules       string
	CreateIndex uint64
	ModifyIndex uint64
}

// Limits of a policy.
const (
	maxPolicyDescription = 256
	maxPolicyRulesBytes  = 64 << 10
)

// policyNameRE is the name rule: letters, digits and dashes, 1 to 128
// characters, so a name is safe in a URL path and on a command line.
var policyNameRE = regexp.MustCompile(`^[a-zA-Z0-9-]{1,128}$`)

// Validate checks the policy's name, description and rules, naming each
// problem's field.
func (p *ACLPolicy) Validate() error {
	v := &ValidationError{}
	if p.Name == "" {
		v.Add("Name", "required")
	} else if !policyNameRE.MatchString(p.Name) {
		v.Add("Name", "%q must be 1 to 128 letters, digits or dashes", p.Name)
	}
	if len(p.Description) > maxPolicyDescription {
		v.Add("Description", "must be at most %d characters, got %d", maxPolicyDescription, len(p.Description))
	}
	if _, err := ParsePolicyRules(p.Rules); err != nil {
		v.Errors = append(v.Errors, err.(*ValidationError).Errors...)
	}
	return v.Err()
}

// PolicyRules is the parsed form of a policy's Rules.
type PolicyRules struct {
	Namespaces []*NamespaceRule
	Node       *LevelRule
	Agent      *LevelRule
	Operator   *LevelRule
	// Quota is the quota rule (quota.go): read lets a token list and
	// read quota specifications and their usage; writing them needs a
	// management token, as in Nomad Enterprise.
	Quota *LevelRule
}

// NamespaceRule grants capabilities in the namespaces whose name matches
// Name, which may hold `*` wildcards.
type NamespaceRule struct {
	Name         string
	Policy       string
	Capabilities []string
}

// LevelRule is a node, agent or operator rule: deny, read or write.
type LevelRule struct {
	Policy string
}

// Block and attribute names of the rules language.
var (
	policySchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "namespace", LabelNames: []string{"name"}},
		{Type: "node"},
		{Type: "agent"},
		{Type: "operator"},
		{Type: "quota"},
	}}
	namespaceRuleSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "policy"},
		{Name: "capabilities"},
	}}
	levelRuleSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "policy", Required: true},
	}}
)

// ParsePolicyRules parses and validates policy rules written in HCL or, when
// the text starts with `{`, JSON:
//
//	namespace "default" { policy = "read" }
//	namespace "prod-*"  { capabilities = ["submit-job", "read-logs"] }
//	node     { policy = "read" }
//	agent    { policy = "read" }
//	operator { policy = "write" }
//	quota    { policy = "read" }
//
// Errors are a *ValidationError on field "Rules", each message giving the
// line and column of the problem. It is deterministic, so Apply may call
// it.
func ParsePolicyRules(rules string) (*PolicyRules, error) {
	if strings.TrimSpace(rules) == "" {
		return nil, Invalidf("Rules", "required")
	}
	if len(rules) > maxPolicyRulesBytes {
		return nil, Invalidf("Rules", "must be at most %d bytes, got %d", maxPolicyRulesBytes, len(rules))
	}
	// Before a parser recurses: no valid policy nests nearly this deep, so
	// the check changes no verdict of Apply on an older log.
	isJSON := strings.HasPrefix(strings.TrimSpace(rules), "{")
	check := CheckHCLDepth
	if isJSON {
		check = CheckHCLJSONDepth
	}
	if err := check("Rules", []byte(rules), MaxHCLDepth); err != nil {
		return nil, err
	}
	var file *hcl.File
	var diags hcl.Diagnostics
	if isJSON {
		file, diags = hcljson.Parse([]byte(rules), "rules")
	} else {
		file, diags = hclsyntax.ParseConfig([]byte(rules), "rules", hcl.InitialPos)
	}
	if diags.HasErrors() {
		return nil, rulesError(diags)
	}
	content, diags := file.Body.Content(policySchema)
	if diags.HasErrors() {
		return nil, rulesError(diags)
	}
	p := &PolicyRules{}
	v := &ValidationError{}
	seen := map[string]bool{}
	for _, b := range content.Blocks {
		key := b.Type
		if b.Type == "namespace" {
			key += " " + b.Labels[0]
		}
		if seen[key] {
			v.Add("Rules", "%s: %s is defined more than once", posOf(b.DefRange), describeBlock(b))
			continue
		}
		seen[key] = true
		switch b.Type {
		case "namespace":
			r, err := parseNamespaceRule(b)
			if err != nil {
				v.Errors = append(v.Errors, err.(*ValidationError).Errors...)
				continue
			}
			p.Namespaces = append(p.Namespaces, r)
		default:
			r, err := parseLevelRule(b)
			if err != nil {
				v.Errors = append(v.Errors, err.(*ValidationError).Errors...)
				continue
			}
			switch b.Type {
			case "node":
				p.Node = r
			case "agent":
				p.Agent = r
			case "operator":
				p.Operator = r
			case "quota":
				p.Quota = r
			}
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if len(p.Namespaces) == 0 && p.Node == nil && p.Agent == nil && p.Operator == nil && p.Quota == nil {
		return nil, Invalidf("Rules", "no rules: expected namespace, node, agent, operator or quota blocks")
	}
	return p, nil
}

func parseNamespaceRule(b *hcl.Block) (*NamespaceRule, error) {
	r := &NamespaceRule{Name: b.Labels[0]}
	where := posOf(b.DefRange) + ": " + describeBlock(b)
	if r.Name == "" {
		return nil, Invalidf("Rules", "%s: the namespace name must not be empty", where)
	}
	if strings.ContainsAny(r.Name, " \t\n/") {
		return nil, Invalidf("Rules", "%s: a namespace name or glob holds no spaces or slashes", where)
	}
	content, diags := b.Body.Content(namespaceRuleSchema)
	if diags.HasErrors() {
		return nil, rulesError(diags)
	}
	v := &ValidationError{}
	if a, ok := content.Attributes["policy"]; ok {
		s, err := stringAttr(a)
		if err != nil {
			return nil, err
		}
		if _, ok := namespaceBundle(s); !ok {
			v.Add("Rules", "%s: policy %q is not one of deny, read, write, scale", posOf(a.Range), s)
		}
		r.Policy = s
	}
	if a, ok := content.Attributes["capabilities"]; ok {
		caps, err := stringListAttr(a)
		if err != nil {
			return nil, err
		}
		for _, c := range caps {
			if _, ok := capabilityBit(c); !ok {
				v.Add("Rules", "%s: unknown capability %q; known: %s", posOf(a.Range), c, strings.Join(namespaceCapabilities, ", "))
			}
		}
		r.Capabilities = caps
	}
	if r.Policy == "" && len(r.Capabilities) == 0 {
		v.Add("Rules", "%s: needs a policy or capabilities", where)
	}
	return r, v.Err()
}

func parseLevelRule(b *hcl.Block) (*LevelRule, error) {
	content, diags := b.Body.Content(levelRuleSchema)
	if diags.HasErrors() {
		return nil, rulesError(diags)
	}
	a := content.Attributes["policy"]
	s, err := stringAttr(a)
	if err != nil {
		return nil, err
	}
	if !slices.Contains([]string{PolicyDeny, PolicyRead, PolicyWrite}, s) {
		return nil, Invalidf("Rules", "%s: %s policy %q is not one of deny, read, write", posOf(a.Range), b.Type, s)
	}
	return &LevelRule{Policy: s}, nil
}

// stringAttr evaluates a constant string attribute.
func stringAttr(a *hcl.Attribute) (string, error) {
	val, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return "", rulesError(diags)
	}
	if val.IsNull() || !val.IsKnown() || val.Type() != cty.String {
		return "", Invalidf("Rules", "%s: %s must be a string", posOf(a.Range), a.Name)
	}
	return val.AsString(), nil
}

// stringListAttr evaluates a constant list of strings.
func stringListAttr(a *hcl.Attribute) ([]string, error) {
	val, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return nil, rulesError(diags)
	}
	ty := val.Type()
	if val.IsNull() || !val.IsKnown() || !(ty.IsListType() || ty.IsTupleType() || ty.IsSetType()) {
		return nil, Invalidf("Rules", "%s: %s must be a list of strings", posOf(a.Range), a.Name)
	}
	var out []string
	for it := val.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			return nil, Invalidf("Rules", "%s: %s must be a list of strings", posOf(a.Range), a.Name)
		}
		out = append(out, e.AsString())
	}
	return out, nil
}

// rulesError turns HCL diagnostics into a validation error on Rules, one
// entry per error with its position.
func rulesError(diags hcl.Diagnostics) error {
	v := &ValidationError{}
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		if d.Subject != nil {
			msg = posOf(*d.Subject) + ": " + msg
		}
		v.Add("Rules", "%s", msg)
	}
	return v.Err()
}

func posOf(r hcl.Range) string {
	return fmt.Sprintf("line %d, column %d", r.Start.Line, r.Start.Column)
}

func describeBlock(b *hcl.Block) string {
	if len(b.Labels) > 0 {
		return fmt.Sprintf("%s %q", b.Type, b.Labels[0])
	}
	return b.Type
}
