package jobspec

import (
	"bytes"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Roots the parser evaluates. Every other name in an interpolation is a
// runtime value (attr.*, node.*, meta.*, env["X"], SCHED_ALLOC_ID, any
// task environment variable) that a client or the scheduler resolves later.
const (
	rootVar   = "var"
	rootLocal = "local"
)

// keepRuntime rewrites, in place, every interpolation of body that names a
// runtime value into literal text equal to its source, so evaluation yields
// "${attr.kernel.name}" unchanged while "${var.dc}" in the same string is
// still evaluated. HCL has no hook for unknown variables, and evaluating
// with placeholder values would lose the original text; replacing the
// syntax nodes before evaluation keeps both exact.
//
// The unit is one interpolation: "${upper(node.class)}" is kept whole,
// function and all, because part of it can only be known at run time. A
// runtime name outside any string (`value = node.class`) is not
// rewritten and fails evaluation as an unknown variable. A runtime name in
// the condition of a %{if} or the collection of a %{for} directive fails the
// same way; interpolations inside a directive's body are kept as usual.
func keepRuntime(body *hclsyntax.Body, src []byte) hcl.Diagnostics {
	return hclsyntax.Walk(body, &runtimeWalker{src: src})
}

// runtimeWalker does keepRuntime's rewrite. It tracks the names bound by
// enclosing for expressions, which are neither runtime values nor
// variables: `[for s in var.list : "${s}-x"]` must still evaluate.
type runtimeWalker struct {
	src    []byte
	scopes []map[string]struct{}
}

// Enter rewrites the parts of a template before the walk descends into
// them, and opens a for expression's scope.
func (w *runtimeWalker) Enter(n hclsyntax.Node) hcl.Diagnostics {
	switch n := n.(type) {
	case hclsyntax.ChildScope:
		w.scopes = append(w.scopes, n.LocalNames)
	case *hclsyntax.TemplateExpr:
		for i, part := range n.Parts {
			if w.isRuntime(part) {
				n.Parts[i] = w.literal(part)
			}
		}
	case *hclsyntax.TemplateWrapExpr:
		// A string that is a single interpolation, "${node.class}".
		if w.isRuntime(n.Wrapped) {
			n.Wrapped = w.literal(n.Wrapped)
		}
	}
	return nil
}

// Exit closes a for expression's scope.
func (w *runtimeWalker) Exit(n hclsyntax.Node) hcl.Diagnostics {
	if _, ok := n.(hclsyntax.ChildScope); ok {
		w.scopes = w.scopes[:len(w.scopes)-1]
	}
	return nil
}

// isRuntime reports whether the interpolation part e names a runtime value.
func (w *runtimeWalker) isRuntime(e hclsyntax.Expression) bool {
	if _, lit := e.(*hclsyntax.LiteralValueExpr); lit || w.isDirective(e) {
		return false
	}
	for _, t := range hclsyntax.Variables(e) {
		root := t.RootName()
		if root != rootVar && root != rootLocal && !w.bound(root) {
			return true
		}
	}
	return false
}

// isDirective reports whether e is a %{if} or %{for} of a template, which
// has no ${...} source of its own to keep.
func (w *runtimeWalker) isDirective(e hclsyntax.Expression) bool {
	start := e.Range().Start.Byte
	return start >= 0 && start < len(w.src) && bytes.HasPrefix(w.src[start:], []byte("%{"))
}

// bound reports whether name is bound by an enclosing for expression.
func (w *runtimeWalker) bound(name string) bool {
	for _, s := range w.scopes {
		if _, ok := s[name]; ok {
			return true
		}
	}
	return false
}

// literal is the ${...} text of the interpolation part e as a string.
func (w *runtimeWalker) literal(e hclsyntax.Expression) hclsyntax.Expression {
	r := e.Range()
	var text string
	if r.Start.Byte >= 0 && r.End.Byte <= len(w.src) && r.Start.Byte <= r.End.Byte {
		text = string(w.src[r.Start.Byte:r.End.Byte])
	}
	return &hclsyntax.LiteralValueExpr{Val: cty.StringVal("${" + text + "}"), SrcRange: r}
}
