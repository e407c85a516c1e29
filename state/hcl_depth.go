package state

import (
	"bytes"
)

// MaxHCLDepth bounds how deeply an HCL text (a job file, a var file, an
// ACL policy) may nest blocks, objects, lists, parentheses and template
// interpolations. The HCL parsers recurse once (or more) per level, and a
// stack overflow is fatal to the whole process, so a text is measured by
// CheckHCLDepth, which does not recurse, before a parser sees it. A job
// needs about ten levels around its free-form values, which may nest
// MaxNestingDepth more.
const MaxHCLDepth = MaxNestingDepth + 36

// scanFrame is one level of CheckHCLDepth's stack: code (the file itself, or
// an interpolation inside a string) or a string (quoted, or a heredoc
// ending at a line holding only marker).
type scanFrame struct {
	str    bool
	marker []byte // heredoc terminator; nil for a quoted string
	// braces counts the '{' opened in this code frame, so that the '}'
	// closing an interpolation is told from one closing an object.
	braces int
	interp bool // a code frame inside a string
}

// CheckHCLDepth returns a validation error naming the line where src
// nests deeper than max, or nil. It follows HCL's lexical structure closely enough that
// brackets inside strings, comments and heredocs are not counted, while
// the brackets of interpolations inside them are: an adversary cannot
// hide nesting from it that the parser would then recurse into.
func CheckHCLDepth(filename string, src []byte, max int) error {
	stack := []scanFrame{{}}
	depth, line := 0, 1
	tooDeep := func() error {
		return Invalidf(filename, "line %d: nested more than %d levels deep (limit %d)", line, max, max)
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '\n' {
			line++
		}
		top := &stack[len(stack)-1]
		if top.str {
			switch {
			case top.marker == nil && c == '\\':
				i++ // an escaped character
			case top.marker == nil && (c == '"' || c == '\n'):
				stack = stack[:len(stack)-1] // a string ends at its quote (or, unterminated, at the line's end)
			case top.marker != nil && c == '\n':
				end := bytes.IndexByte(src[i+1:], '\n')
				next := src[i+1:]
				if end >= 0 {
					next = next[:end]
				}
				if bytes.Equal(bytes.TrimSpace(next), top.marker) {
					stack = stack[:len(stack)-1]
				}
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == c:
				i++ // $${ and %%{ are literal
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == '{':
				i++
				if depth++; depth > max {
					return tooDeep()
				}
				stack = append(stack, scanFrame{interp: true})
			}
			continue
		}
		switch c {
		case '"':
			stack = append(stack, scanFrame{str: true})
		case '#':
			i = skipLine(src, i) - 1
		case '/':
			if i+1 < len(src) && src[i+1] == '/' {
				i = skipLine(src, i) - 1
			} else if i+1 < len(src) && src[i+1] == '*' {
				end := bytes.Index(src[i+2:], []byte("*/"))
				if end < 0 {
					return nil // unterminated: the parser reports it
				}
				line += bytes.Count(src[i:i+2+end], []byte("\n"))
				i += end + 3
			}
		case '<':
			if i+1 < len(src) && src[i+1] == '<' {
				end := skipLine(src, i)
				marker := bytes.TrimSpace(bytes.TrimPrefix(src[i+2:end], []byte("-")))
				if len(marker) > 0 {
					stack = append(stack, scanFrame{str: true, marker: marker})
					i = end - 1
				}
			}
		case '{', '[', '(':
			if c == '{' {
				top.braces++
			}
			if depth++; depth > max {
				return tooDeep()
			}
		case '}', ']', ')':
			if c == '}' {
				if top.braces == 0 && top.interp {
					stack = stack[:len(stack)-1]
				} else {
					top.braces--
				}
			}
			depth = max0(depth - 1)
		}
	}
	return nil
}

// skipLine returns the index of the newline ending the line holding i, or
// len(src).
func skipLine(src []byte, i int) int {
	if end := bytes.IndexByte(src[i:], '\n'); end >= 0 {
		return i + end
	}
	return len(src)
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}
