package jobspec

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/hashicorp/hcl/hcl/ast"
	hcl1parser "github.com/hashicorp/hcl/hcl/parser"
	hcl1scanner "github.com/hashicorp/hcl/hcl/scanner"
	"github.com/hashicorp/hcl/hcl/token"
	"github.com/hashicorp/hcl/v2"
	"github.com/schedhq/sched/state"
	"github.com/zclconf/go-cty/cty"
)

// ParseHCL1 turns a job file in the legacy HCL1 syntax into a job. HCL1 has
// no variables or functions: every value is a literal, and "${...}" is kept
// as text for the client or scheduler, as it always was. The blocks and
// attributes are those of Parse.
func ParseHCL1(filename string, body []byte) (*state.Job, error) {
	if filename == "" {
		filename = DefaultFilename
	}
	if err := checkHCL1Depth(filename, body, state.MaxHCLDepth); err != nil {
		return nil, err
	}
	if err := state.CheckHCLTokens(filename, body); err != nil {
		return nil, err
	}
	f, err := hcl1parser.Parse(body)
	if err != nil {
		var pe *hcl1parser.PosError
		if errors.As(err, &pe) {
			return nil, state.Invalidf(fmt.Sprintf("%s:%d:%d", filename, pe.Pos.Line, pe.Pos.Column), "%s", pe.Err)
		}
		return nil, state.Invalidf(filename, "%s", err)
	}
	list, ok := f.Node.(*ast.ObjectList)
	if !ok {
		return nil, state.Invalidf(filename, "the file is not a list of blocks")
	}
	root := &hcl1Body{file: filename, list: list, open: token.Pos{Line: 1, Column: 1}}
	d := &decoder{}
	top := d.content(root, spec("", blk("job", "id")))
	job := d.onlyJob(top, root.MissingItemRange())
	if err := diagsError(d.diags); err != nil {
		return nil, err
	}
	return job, nil
}

// checkHCL1Depth is state.CheckHCLDepth for the legacy syntax, which has
// no expressions: its parser recurses once per '{' and '[', and an item
// with several keys (`a "b" "c" { }`) becomes one object per key, so each
// key but the first counts as a level too. It reads the tokens of HCL1's
// own scanner (which does not recurse), over the text as the parser gets
// it, so no bracket the parser reads is hidden in what the check took for
// a string, a comment or a heredoc.
func checkHCL1Depth(filename string, src []byte, max int) error {
	sc := hcl1scanner.New(bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n")))
	sc.Error = func(token.Pos, string) {} // the parser reports them
	type open struct {
		brace  bool
		levels int
	}
	var stack []open
	depth, keys := 0, 0
	prev := token.ILLEGAL
	for tok := sc.Scan(); tok.Type != token.EOF; tok = sc.Scan() {
		switch tok.Type {
		case token.LBRACE, token.LBRACK:
			o := open{brace: tok.Type == token.LBRACE, levels: 1 + max0(keys-1)}
			stack = append(stack, o)
			if depth += o.levels; depth > max {
				return state.Invalidf(filename, "line %d: nested more than %d levels deep (limit %d)", tok.Pos.Line, max, max)
			}
		case token.RBRACE, token.RBRACK:
			if n := len(stack); n > 0 && stack[n-1].brace == (tok.Type == token.RBRACE) {
				depth -= stack[n-1].levels
				stack = stack[:n-1]
			}
		}
		switch tok.Type {
		case token.COMMENT:
		case token.IDENT, token.STRING:
			if keys++; prev == token.ASSIGN {
				keys = 0 // a value, not a key
			}
			prev = tok.Type
		default:
			keys, prev = 0, tok.Type
		}
	}
	return nil
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}

// hcl1Body presents an HCL1 object list as an hcl.Body, so the one decoder
// reads both syntaxes. HCL1 does not tell `meta { }` from `meta = { }` the
// way HCL2 does; the schema decides: an object for a name the schema calls a
// block is a block.
type hcl1Body struct {
	file string
	list *ast.ObjectList
	// open is the position of the body's opening brace, for errors about
	// something missing from it.
	open token.Pos
}

var _ hcl.Body = (*hcl1Body)(nil)
var _ rawBody = (*hcl1Body)(nil)

// Content implements hcl.Body.
func (b *hcl1Body) Content(s *hcl.BodySchema) (*hcl.BodyContent, hcl.Diagnostics) {
	c, rest, diags := b.PartialContent(s)
	blocks := map[string]bool{}
	for _, bs := range s.Blocks {
		blocks[bs.Type] = true
	}
	for _, item := range rest.(*hcl1Body).list.Items {
		name, rng := b.key(item, 0)
		switch {
		case blocks[name]:
			diags = append(diags, problem(rng, "Invalid block",
				"%q must be a block, like %s { ... }", name, name))
		case len(item.Keys) > 1 && hasAttr(s, name):
			diags = append(diags, problem(rng, "Invalid argument",
				"%q takes no labels: write %s = ...", name, name))
		default:
			diags = append(diags, problem(rng, "Unsupported argument",
				"an argument or block named %q is not expected here", name))
		}
	}
	return c, diags
}

// hasAttr reports whether s declares an attribute called name.
func hasAttr(s *hcl.BodySchema, name string) bool {
	for _, a := range s.Attributes {
		if a.Name == name {
			return true
		}
	}
	return false
}

// PartialContent implements hcl.Body.
func (b *hcl1Body) PartialContent(s *hcl.BodySchema) (*hcl.BodyContent, hcl.Body, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	blocks := map[string]hcl.BlockHeaderSchema{}
	for _, bs := range s.Blocks {
		blocks[bs.Type] = bs
	}
	c := &hcl.BodyContent{Attributes: hcl.Attributes{}, MissingItemRange: b.MissingItemRange()}
	rest := &hcl1Body{file: b.file, list: &ast.ObjectList{}, open: b.open}
	for _, item := range b.list.Items {
		name, rng := b.key(item, 0)
		obj, isObj := item.Val.(*ast.ObjectType)
		bs, isBlock := blocks[name]
		isAttr := hasAttr(s, name)
		switch {
		case isBlock && isObj && (!item.Assign.IsValid() || !isAttr):
			if blk, ok := b.block(item, obj, bs, &diags); ok {
				c.Blocks = append(c.Blocks, blk)
			}
		case isAttr && len(item.Keys) == 1:
			if prev, dup := c.Attributes[name]; dup {
				diags = append(diags, problem(rng, "Duplicate argument",
					"%q was already set at %s", name, pos(prev.NameRange)))
				continue
			}
			c.Attributes[name] = b.attribute(name, rng, item)
		default:
			rest.list.Items = append(rest.list.Items, item)
		}
	}
	for _, as := range s.Attributes {
		if _, ok := c.Attributes[as.Name]; as.Required && !ok {
			diags = append(diags, problem(c.MissingItemRange, "Missing required argument",
				"the argument %q is required", as.Name))
		}
	}
	return c, rest, diags
}

// block converts an item to a block of schema bs, checking its labels.
func (b *hcl1Body) block(item *ast.ObjectItem, obj *ast.ObjectType, bs hcl.BlockHeaderSchema, diags *hcl.Diagnostics) (*hcl.Block, bool) {
	_, typeRange := b.key(item, 0)
	if got, want := len(item.Keys)-1, len(bs.LabelNames); got != want {
		*diags = append(*diags, problem(typeRange, "Wrong number of labels",
			"%s blocks take %d label(s), not %d", bs.Type, want, got))
		return nil, false
	}
	blk := &hcl.Block{
		Type:      bs.Type,
		Body:      &hcl1Body{file: b.file, list: obj.List, open: obj.Lbrace},
		DefRange:  typeRange,
		TypeRange: typeRange,
	}
	for i := 1; i < len(item.Keys); i++ {
		l, rng := b.key(item, i)
		blk.Labels = append(blk.Labels, l)
		blk.LabelRanges = append(blk.LabelRanges, rng)
	}
	return blk, true
}

// attribute converts an item to an attribute.
func (b *hcl1Body) attribute(name string, nameRange hcl.Range, item *ast.ObjectItem) *hcl.Attribute {
	expr := &hcl1Expr{file: b.file, node: item.Val}
	return &hcl.Attribute{
		Name:      name,
		Expr:      expr,
		Range:     hcl.RangeBetween(nameRange, expr.Range()),
		NameRange: nameRange,
	}
}

// JustAttributes implements hcl.Body.
func (b *hcl1Body) JustAttributes() (hcl.Attributes, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	attrs := hcl.Attributes{}
	for _, item := range b.list.Items {
		name, rng := b.key(item, 0)
		if _, isObj := item.Val.(*ast.ObjectType); len(item.Keys) > 1 || (isObj && !item.Assign.IsValid()) {
			diags = append(diags, problem(rng, "Unexpected block", "blocks are not allowed here; %q must be name = value", name))
			continue
		}
		if prev, dup := attrs[name]; dup {
			diags = append(diags, problem(rng, "Duplicate argument", "%q was already set at %s", name, pos(prev.NameRange)))
			continue
		}
		attrs[name] = b.attribute(name, rng, item)
	}
	return attrs, diags
}

// MissingItemRange implements hcl.Body.
func (b *hcl1Body) MissingItemRange() hcl.Range {
	return posRange(b.file, b.open, 1)
}

// items implements rawBody: an object without "=" is a block, labelled by
// its extra keys; anything else is an attribute.
func (b *hcl1Body) items() ([]*hcl.Attribute, []*hcl.Block) {
	var attrs []*hcl.Attribute
	var blocks []*hcl.Block
	for _, item := range b.list.Items {
		name, rng := b.key(item, 0)
		obj, isObj := item.Val.(*ast.ObjectType)
		if isObj && (!item.Assign.IsValid() || len(item.Keys) > 1) {
			bs := hcl.BlockHeaderSchema{Type: name, LabelNames: make([]string, len(item.Keys)-1)}
			var diags hcl.Diagnostics
			if blk, ok := b.block(item, obj, bs, &diags); ok {
				blocks = append(blocks, blk)
			}
			continue
		}
		attrs = append(attrs, b.attribute(name, rng, item))
	}
	return attrs, blocks
}

// key returns the i-th key of item, unquoted, and its range.
func (b *hcl1Body) key(item *ast.ObjectItem, i int) (string, hcl.Range) {
	if i >= len(item.Keys) {
		return "", posRange(b.file, item.Pos(), 0)
	}
	tok := item.Keys[i].Token
	name := tok.Text
	if v, err := tokenString(tok); err == nil {
		name = v
	}
	return name, posRange(b.file, tok.Pos, len(tok.Text))
}

// posRange is the range of n bytes at p.
func posRange(file string, p token.Pos, n int) hcl.Range {
	start := hcl.Pos{Line: p.Line, Column: p.Column, Byte: p.Offset}
	end := hcl.Pos{Line: p.Line, Column: p.Column + n, Byte: p.Offset + n}
	return hcl.Range{Filename: file, Start: start, End: end}
}

// hcl1Expr is an HCL1 value presented as an hcl.Expression. HCL1 values
// are literals, so evaluation ignores the context.
type hcl1Expr struct {
	file string
	node ast.Node
}

var _ hcl.Expression = (*hcl1Expr)(nil)

// Value implements hcl.Expression.
func (e *hcl1Expr) Value(*hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	return hcl1Value(e.file, e.node)
}

// Variables implements hcl.Expression: HCL1 values reference nothing.
func (e *hcl1Expr) Variables() []hcl.Traversal { return nil }

// Range implements hcl.Expression.
func (e *hcl1Expr) Range() hcl.Range {
	n := 1
	if lit, ok := e.node.(*ast.LiteralType); ok {
		n = len(lit.Token.Text)
	}
	return posRange(e.file, e.node.Pos(), n)
}

// StartRange implements hcl.Expression.
func (e *hcl1Expr) StartRange() hcl.Range { return e.Range() }

// hcl1Value converts an HCL1 value node to a cty value.
func hcl1Value(file string, n ast.Node) (cty.Value, hcl.Diagnostics) {
	switch n := n.(type) {
	case *ast.LiteralType:
		v, err := tokenValue(n.Token)
		if err != nil {
			return cty.DynamicVal, hcl.Diagnostics{problem(posRange(file, n.Token.Pos, len(n.Token.Text)),
				"Invalid value", "%s", err)}
		}
		return v, nil
	case *ast.ListType:
		if len(n.List) == 0 {
			return cty.EmptyTupleVal, nil
		}
		var diags hcl.Diagnostics
		elems := make([]cty.Value, len(n.List))
		for i, e := range n.List {
			var ds hcl.Diagnostics
			elems[i], ds = hcl1Value(file, e)
			diags = append(diags, ds...)
		}
		return cty.TupleVal(elems), diags
	case *ast.ObjectType:
		return hcl1Object(file, n.List)
	}
	return cty.DynamicVal, hcl.Diagnostics{problem(posRange(file, n.Pos(), 1), "Invalid value",
		"unsupported HCL1 value %T", n)}
}

// hcl1Object converts the items of an HCL1 object to a cty object; an item
// with several keys (`a "b" { }`) nests one object per key.
func hcl1Object(file string, list *ast.ObjectList) (cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	attrs := map[string]cty.Value{}
	body := &hcl1Body{file: file}
	for _, item := range list.Items {
		v, ds := hcl1Value(file, item.Val)
		diags = append(diags, ds...)
		for i := len(item.Keys) - 1; i > 0; i-- {
			k, _ := body.key(item, i)
			v = cty.ObjectVal(map[string]cty.Value{k: v})
		}
		name, rng := body.key(item, 0)
		if _, dup := attrs[name]; dup {
			diags = append(diags, problem(rng, "Duplicate key", "%q is set twice", name))
			continue
		}
		attrs[name] = v
	}
	return cty.ObjectVal(attrs), diags
}

// tokenValue converts an HCL1 literal token. Numbers are parsed here rather
// than by the token, which panics on a number that overflows.
func tokenValue(tok token.Token) (cty.Value, error) {
	switch tok.Type {
	case token.NUMBER:
		i, err := strconv.ParseInt(tok.Text, 0, 64)
		if err != nil {
			return cty.NilVal, fmt.Errorf("invalid number %s", tok.Text)
		}
		return cty.NumberIntVal(i), nil
	case token.FLOAT:
		f, err := strconv.ParseFloat(tok.Text, 64)
		if err != nil {
			return cty.NilVal, fmt.Errorf("invalid number %s", tok.Text)
		}
		return cty.NumberFloatVal(f), nil
	case token.BOOL:
		return cty.BoolVal(tok.Text == "true"), nil
	case token.STRING, token.HEREDOC:
		s, err := tokenString(tok)
		if err != nil {
			return cty.NilVal, err
		}
		return cty.StringVal(s), nil
	}
	return cty.NilVal, fmt.Errorf("unexpected %s %q", tok.Type, tok.Text)
}

// tokenString is the text of a string, heredoc or identifier token. The
// token's own decoding panics on a bad escape; that is turned into an error.
func tokenString(tok token.Token) (s string, err error) {
	switch tok.Type {
	case token.STRING, token.HEREDOC, token.IDENT:
	default:
		return "", fmt.Errorf("unexpected %s %q", tok.Type, tok.Text)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid string %s: %v", tok.Text, r)
		}
	}()
	s, _ = tok.Value().(string)
	return s, nil
}
