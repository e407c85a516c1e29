package state

import (
	"github.com/apparentlymart/go-textseg/v15/textseg"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// MaxHCLDepth bounds how deeply an HCL text (a job file, a var file, an
// ACL policy, an agent config) may nest. The HCL parsers recurse once (or
// more) per level, and the evaluator once per node of the expression
// tree; a stack overflow is fatal to the whole process, so a text is
// measured by CheckHCLDepth (or CheckHCLJSONDepth), which do not recurse,
// before a parser sees it. A job needs about ten levels around its
// free-form values, which may nest MaxNestingDepth more.
const MaxHCLDepth = MaxNestingDepth + 36

// tooDeep is the error of every depth check: where, and the limit.
func tooDeep(filename string, line, max int) error {
	return Invalidf(filename, "line %d: nested more than %d levels deep (limit %d)", line, max, max)
}

// CheckHCLDepth returns a validation error naming the line where src, in
// HCL's native syntax, nests deeper than max, or nil.
//
// It reads the tokens of HCL's own lexer (a state machine with its stack
// on the heap), so strings, comments and heredocs are told apart exactly
// as the parser will see them, and counts as one level each of:
//
//   - an open '{', '[', '(', "${" or "%{";
//   - an open %{if} or %{for} directive of a template;
//   - an operator (unary '!' and '-' as well as every binary one, and the
//     '?' of a conditional) since the last ',' or, in a block body or an
//     object, the last newline or '=': a prefix operator and a '?' make the
//     parser recurse, and a chain of binary operators, indexes or splats
//     makes an expression tree that deep, which evaluation recurses into;
//   - a closed '[...]' or '(...)' (an index, a splat, a call), likewise.
//
// The parser's recursion is then bounded by a small multiple of max, and
// the expression tree's depth by about max²/4.
func CheckHCLDepth(filename string, src []byte, max int) error {
	if err := checkHCLPrefix(filename, src, max); err != nil {
		return err
	}
	if err := CheckHCLTokens(filename, src); err != nil {
		return err
	}
	toks, _ := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	m := nestMeter{max: max, stack: []nestFrame{{kind: frameFile}}}
	for i, tok := range toks {
		if !m.token(toks, i) {
			return tooDeep(filename, tok.Range.Start.Line, max)
		}
	}
	return nil
}

// depthPrefix is how much of a long text checkHCLPrefix lexes first.
const depthPrefix = 64 << 10

// checkHCLPrefix refuses a long text that nests too deep within its first
// depthPrefix bytes before the whole is lexed: the lexer keeps every token,
// about 470 bytes allocated per byte of a run of one-byte tokens such as
// "!!!!", so a megabyte would cost half a gigabyte and most of a second to
// refuse. It only refuses: a text it lets through is then checked whole.
//
// A token of the prefix is the token of the whole text unless it comes
// after a "/*" the prefix leaves open (the lexer reads an unclosed comment
// as code) or among the last few (a heredoc's "<<-EOT", unfinished at the
// cut, falls back to four tokens; no other token looks further ahead). The
// meter sees only the tokens before those, so its lookahead past them
// finds nothing, which counts less, never more.
func checkHCLPrefix(filename string, src []byte, max int) error {
	const unsure = 8 // tokens at the cut that may differ
	if len(src) <= 2*depthPrefix {
		return nil
	}
	toks, _ := hclsyntax.LexConfig(src[:depthPrefix], filename, hcl.InitialPos)
	if len(toks) <= unsure {
		return nil
	}
	toks = toks[:len(toks)-unsure]
	for i, tok := range toks {
		if tok.Type == hclsyntax.TokenSlash && i+1 < len(toks) && toks[i+1].Type == hclsyntax.TokenStar &&
			toks[i+1].Range.Start.Byte == tok.Range.End.Byte {
			toks = toks[:i]
			break
		}
	}
	m := nestMeter{max: max, stack: []nestFrame{{kind: frameFile}}}
	for i, tok := range toks {
		if !m.token(toks, i) {
			return tooDeep(filename, tok.Range.Start.Line, max)
		}
	}
	return nil
}

type frameKind uint8

const (
	frameFile     frameKind = iota // the file: items end at a newline
	frameBody                      // a block body or an object, likewise
	frameFor                       // {for ...}: newlines do not end its expressions
	frameParen                     // (
	frameBrack                     // [
	frameInterp                    // ${ or %{
	frameTemplate                  // a quoted string or a heredoc
)

// nestFrame is one open bracket, interpolation or template.
type nestFrame struct {
	kind frameKind
	// ops counts the operators (or, in a template, the open directives)
	// of the expression being read in this frame.
	ops int
}

// nestMeter follows the nesting of a token stream. level is the sum of
// the weights of the open frames and of their ops.
type nestMeter struct {
	max, level int
	stack      []nestFrame
}

func weight(k frameKind) int {
	if k == frameFile || k == frameTemplate {
		return 0 // a template nests only through "${", counted itself
	}
	return 1
}

// itemsByLine: in the file, a block body or an object, a newline or an
// '=' ends an expression.
func (f *nestFrame) itemsByLine() bool { return f.kind == frameFile || f.kind == frameBody }

func (m *nestMeter) top() *nestFrame { return &m.stack[len(m.stack)-1] }

func (m *nestMeter) push(k frameKind) bool {
	m.stack = append(m.stack, nestFrame{kind: k})
	m.level += weight(k)
	return m.level <= m.max
}

// pop closes the top frame if it is one of kinds; a closer that does not
// match is a syntax error the parser reports, and leaves the count as it
// was (counting too much, never too little).
func (m *nestMeter) pop(kinds ...frameKind) bool {
	t := m.top()
	if len(m.stack) == 1 {
		return false
	}
	for _, k := range kinds {
		if t.kind == k {
			m.level -= weight(t.kind) + t.ops
			m.stack = m.stack[:len(m.stack)-1]
			return true
		}
	}
	return false
}

func (m *nestMeter) op() bool {
	m.top().ops++
	m.level++
	return m.level <= m.max
}

// reset ends the expression being read in the top frame.
func (m *nestMeter) reset() {
	t := m.top()
	m.level -= t.ops
	t.ops = 0
}

// token counts toks[i]; false when the level passes max.
func (m *nestMeter) token(toks hclsyntax.Tokens, i int) bool {
	tok := toks[i]
	switch tok.Type {
	case hclsyntax.TokenOBrace:
		k := frameBody
		if next := nextSignificant(toks, i); next != nil && next.Type == hclsyntax.TokenIdent && string(next.Bytes) == "for" {
			k = frameFor
		}
		return m.push(k)
	case hclsyntax.TokenCBrace:
		m.pop(frameBody, frameFor)
	case hclsyntax.TokenOBrack:
		return m.push(frameBrack)
	case hclsyntax.TokenOParen:
		return m.push(frameParen)
	case hclsyntax.TokenCBrack, hclsyntax.TokenCParen:
		k := frameBrack
		if tok.Type == hclsyntax.TokenCParen {
			k = frameParen
		}
		if m.pop(k) {
			return m.op() // the index, splat or call is one more node around what follows
		}
	case hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
		return m.push(frameTemplate)
	case hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
		m.pop(frameTemplate)
	case hclsyntax.TokenTemplateInterp:
		return m.push(frameInterp)
	case hclsyntax.TokenTemplateControl:
		if i+1 < len(toks) && toks[i+1].Type == hclsyntax.TokenIdent {
			switch string(toks[i+1].Bytes) {
			case "if", "for":
				if !m.op() { // the template parser recurses into each open directive
					return false
				}
			case "endif", "endfor":
				if t := m.top(); t.kind == frameTemplate && t.ops > 0 {
					t.ops--
					m.level--
				}
			}
		}
		return m.push(frameInterp)
	case hclsyntax.TokenTemplateSeqEnd:
		m.pop(frameInterp)
	case hclsyntax.TokenNewline, hclsyntax.TokenEqual:
		if m.top().itemsByLine() {
			m.reset()
		}
	case hclsyntax.TokenComment:
		// A line comment ends with the newline that ends the item.
		if b := tok.Bytes; m.top().itemsByLine() && len(b) > 0 && b[len(b)-1] == '\n' {
			m.reset()
		}
	case hclsyntax.TokenComma:
		m.reset()
	case hclsyntax.TokenBang, hclsyntax.TokenMinus, hclsyntax.TokenPlus, hclsyntax.TokenStar,
		hclsyntax.TokenSlash, hclsyntax.TokenPercent, hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual,
		hclsyntax.TokenLessThan, hclsyntax.TokenLessThanEq, hclsyntax.TokenGreaterThan,
		hclsyntax.TokenGreaterThanEq, hclsyntax.TokenAnd, hclsyntax.TokenOr, hclsyntax.TokenQuestion:
		return m.op()
	}
	return true
}

// nextSignificant returns the first token after toks[i] that is neither a
// newline nor a comment (the parser looks past them for "for"), or nil.
func nextSignificant(toks hclsyntax.Tokens, i int) *hclsyntax.Token {
	for j := i + 1; j < len(toks); j++ {
		switch toks[j].Type {
		case hclsyntax.TokenNewline, hclsyntax.TokenComment:
			continue
		}
		return &toks[j]
	}
	return nil
}

// CheckHCLJSONDepth is CheckHCLDepth for HCL's JSON syntax (a policy or an
// agent config written as JSON): JSON has no operators, so only '{' and
// '[' nest. Strings are skipped by the rules of HCL's JSON scanner, to the
// grapheme cluster, so that no bracket its parser reads is hidden.
func CheckHCLJSONDepth(filename string, src []byte, max int) error {
	if err := checkJSON(filename, src, max, skipHCLJSONString); err != nil {
		return err
	}
	return CheckHCLTokens(filename, src)
}

// CheckJSONDepth is CheckHCLJSONDepth for standard JSON, as encoding/json
// reads it (a value given to jsondecode).
func CheckJSONDepth(filename string, src []byte, max int) error {
	return checkJSON(filename, src, max, skipJSONString)
}

func checkJSON(filename string, src []byte, max int, skipString func([]byte, int) int) error {
	var open []byte
	line := 1
	for i := 0; i < len(src); {
		switch c := src[i]; c {
		case '\n':
			line++
		case '"':
			i = skipString(src, i)
			continue
		case '{', '[':
			if open = append(open, c); len(open) > max {
				return tooDeep(filename, line, max)
			}
		case '}', ']':
			// Only the matching closer closes: a parser refuses the
			// others, so counting on is never too little.
			if n := len(open); n > 0 && open[n-1] == c-2 { // '{'+2 == '}', '['+2 == ']'
				open = open[:n-1]
			}
		}
		i++
	}
	return nil
}

// skipHCLJSONString returns the index after the string starting at
// src[i], as HCL's JSON scanner ends it: at an unescaped quote or before
// a control character, advancing a grapheme cluster at a time (a cluster
// may swallow a quote that follows a prepended character).
func skipHCLJSONString(src []byte, i int) int {
	escaping := false
	for i++; i < len(src); {
		switch b := src[i]; {
		case b == '\\':
			escaping = !escaping
			i++
		case b == '"':
			i++
			if !escaping {
				return i
			}
			escaping = false
		case b < 32:
			return i
		default:
			adv, _, _ := textseg.ScanGraphemeClusters(src[i:], true)
			i += max(adv, 1)
			escaping = false
		}
	}
	return i
}

// skipJSONString returns the index after the string starting at src[i],
// as encoding/json ends it.
func skipJSONString(src []byte, i int) int {
	for i++; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}
