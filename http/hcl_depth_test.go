package http

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// A job file whose expressions nest past the limit through operators
// rather than brackets (a million '!' once overflowed the parser's stack
// and killed the server, issue 28) is answered 400 naming the limit,
// quickly.
func TestParseRefusesDeepExpressions(t *testing.T) {
	h := newHarness(t)
	want := fmt.Sprintf("line 2: nested more than %d levels deep (limit %d)", state.MaxHCLDepth, state.MaxHCLDepth)
	for _, value := range []string{
		strings.Repeat("!", 1_000_000) + "true",
		strings.Repeat("-", 1_000_000) + "1",
		strings.Repeat("(", 1_000_000) + "1",
		strings.Repeat("!", 80_000) + "true",
		"1" + strings.Repeat("+1", 500_000),
	} {
		start := time.Now()
		h.fail(http.MethodPost, "/v1/jobs/parse", JobParseRequest{JobHCL: "job \"x\" {\n meta = { a = " + value + " }\n}\n"}, 400, want)
		if d := time.Since(start); d > 10*time.Second { // about 1 s on 2 cores
			t.Errorf("%.10s...: answered after %v", value, d)
		}
	}
}
