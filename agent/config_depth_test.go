package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

// A config file nested deeper than the parser's stack allows (brackets,
// or a run of unary operators) is refused with an error naming the file,
// the line and the limit, instead of killing the agent with a stack
// overflow (issue 28).
func TestConfigRefusesDeepNesting(t *testing.T) {
	const n = 1_000_000
	want := fmt.Sprintf("nested more than %d levels deep (limit %d)", state.MaxHCLDepth, state.MaxHCLDepth)
	for _, tc := range []struct {
		name, file, body string
		line             int
	}{
		{"nots", "c.hcl", "data_dir = \"/x\"\n\nname = " + strings.Repeat("!", n) + "true\n", 3},
		{"negations", "c.hcl", "data_dir = \"/x\"\n\nname = " + strings.Repeat("-", n) + "1\n", 3},
		{"parens", "c.hcl", "data_dir = \"/x\"\n\nname = " + strings.Repeat("(", n) + "1\n", 3},
		{"brackets at 80,000", "c.hcl", "data_dir = \"/x\"\n\nname = " + strings.Repeat("[", 80000) + "\n", 3},
		{"nots at 80,000", "c.hcl", "data_dir = \"/x\"\n\nname = " + strings.Repeat("!", 80000) + "true\n", 3},
		{"json", "c.json", "{\"data_dir\": \"/x\",\n\"name\": " + strings.Repeat("[", n) + "\n}", 2},
	} {
		p := filepath.Join(t.TempDir(), tc.file)
		if err := os.WriteFile(p, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		err := (&Config{}).LoadFile(p)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), fmt.Sprintf("line %d: ", tc.line)) ||
			!strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s, the line and the limit", tc.name, err, p)
		}
	}
}
