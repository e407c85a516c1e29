package state

import (
	"encoding/json"
	"testing"
)

// AppendJSONString writes what encoding/json writes for the same string,
// escapes and replacement of invalid UTF-8 included.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote " and \ backslash`, "tab\tnew\nline\rcr", "\x00\x01\x1f\x7f",
		"<script>&amp;</script>", "line\u2028para\u2029end", "bad \xff\xfe utf8", "héllo wörld ✓",
		"\xe2\x82", // a truncated rune
	} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendJSONString(%q) = %s, want %s", s, got[1:], want)
		}
	}
}
