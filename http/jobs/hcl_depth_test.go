package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
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
		h.Fail(http.MethodPost, "/v1/jobs/parse", JobParseRequest{JobHCL: "job \"x\" {\n meta = { a = " + value + " }\n}\n"}, 400, want)
		t.Logf("%.10s...: answered after %v", value, time.Since(start)) // a figure, not a bound
	}
}

// A job file of more tokens than state.MaxHCLTokens is refused before it
// is lexed (a megabyte of newlines once cost 1.2 GB to parse), and parses
// wait for one of the server's slots, giving up when their caller does.
func TestParseBoundsTokensAndConcurrency(t *testing.T) {
	h := newHarness(t)
	h.Fail(http.MethodPost, "/v1/jobs/parse", JobParseRequest{JobHCL: strings.Repeat("\n", 1<<20) + `job "x" {}`}, 400,
		fmt.Sprintf("more than %d tokens (limit %d)", state.MaxHCLTokens, state.MaxHCLTokens))

	for range cap(h.api.hclSlots) {
		h.api.hclSlots <- struct{}{}
	}
	body, _ := json.Marshal(JobParseRequest{JobHCL: `job "x" {}`})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest(http.MethodPost, "/v1/jobs/parse", bytes.NewReader(body)).WithContext(ctx)
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, req)
	if strings.Contains(rec.Body.String(), `"ID"`) {
		t.Fatalf("parsed with every slot taken and its caller gone: %d %s", rec.Code, rec.Body)
	}
	for range cap(h.api.hclSlots) {
		<-h.api.hclSlots
	}
	h.OK(http.MethodPost, "/v1/jobs/parse", JobParseRequest{JobHCL: `job "x" {}`}, nil)
}
