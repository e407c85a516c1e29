package testutil

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
)

// JSONEqual reports whether got and want encode the same JSON value
// (object key order and spacing aside). It fails the test if either is
// not JSON.
func JSONEqual(t testing.TB, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON: %v", err)
	}
	return reflect.DeepEqual(g, w)
}

// MustJSON encodes v, failing the test if it cannot.
func MustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Body is a request body for v: nil for nil, a string or []byte as is,
// anything else JSON-encoded (failing the test if it cannot be).
func Body(t testing.TB, v any) io.Reader {
	t.Helper()
	switch b := v.(type) {
	case nil:
		return nil
	case string:
		return strings.NewReader(b)
	case []byte:
		return bytes.NewReader(b)
	default:
		return strings.NewReader(MustJSON(t, b))
	}
}
