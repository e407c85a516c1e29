package state

// MaxHCLTokens bounds how many tokens an HCL text (a job file, a var file,
// an ACL policy, an agent config) may hold. HCL's lexer keeps every token
// of a text and its parser builds a node for most of them: a text of
// one-byte tokens costs about 1.2 KB allocated per byte to check and parse
// (a megabyte of newlines, 1.2 GB), so the count is bounded before either
// runs. A job file of a few thousand lines holds some tens of thousands;
// a template inlined as a heredoc costs about two tokens a line.
const MaxHCLTokens = 200_000

// CheckHCLTokens returns a validation error when src may hold more than
// MaxHCLTokens tokens, or nil. It reads each byte once and allocates
// nothing: the count it makes is an upper bound of what any of HCL's
// lexers (native, JSON, HCL1) would make of src, since every token of them
// either holds a byte that is neither a letter, a digit, '_' nor blank, or
// is a run of such word bytes (a string's words count one each, though the
// lexer reads the string as one token).
func CheckHCLTokens(filename string, src []byte) error {
	n, inWord := 0, false
	for _, c := range src {
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			inWord = false
		case c >= 0x80 || c == '_' || c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z':
			if !inWord {
				n++
				inWord = true
			}
		default:
			n++ // a newline, an operator, a bracket, a quote, ...
			inWord = false
		}
		if n > MaxHCLTokens {
			return Invalidf(filename, "more than %d tokens (limit %d)", MaxHCLTokens, MaxHCLTokens)
		}
	}
	return nil
}
