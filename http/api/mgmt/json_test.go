package mgmt

import (
	"encoding/json"
	"reflect"
	"testing"
)

// mgmtJSONEqual reports whether got and want are the same JSON value.
func mgmtJSONEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("request body is not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON: %v", err)
	}
	return reflect.DeepEqual(g, w)
}

// mgmtMustJSON encodes v, failing the test if it cannot.
func mgmtMustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
