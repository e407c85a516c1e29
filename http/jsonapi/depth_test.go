package jsonapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// A document nested past MaxDepth is a 400 naming the limit, before the
// decoder recurses into it; brackets inside strings do not count.
func TestParseRequestRefusesDeepNesting(t *testing.T) {
	deep := `{"data":{"type":"workspaces","attributes":{"name":` + strings.Repeat("[", 1_000_000) + `}}}`
	_, err := ParseRequest([]byte(deep))
	var e *HTTPError
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest || !strings.Contains(e.Errors[0].Detail, "nested more than 100 levels deep (limit 100)") {
		t.Fatalf("%v, want a 400 naming the limit", err)
	}
	inString := `{"data":{"type":"workspaces","attributes":{"name":"` + strings.Repeat("[", 1000) + `\"` + strings.Repeat("{", 1000) + `"}}}`
	if _, err := ParseRequest([]byte(inString)); err != nil {
		t.Fatalf("brackets in a string: %v", err)
	}
}
