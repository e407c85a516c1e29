package http

import (
	"net/url"
	"strings"
	"testing"
)

// The key's query is the query's encoding without the blocking
// parameters, whatever the order and escaping of the request's.
func TestEncodeQueryWithout(t *testing.T) {
	for _, raw := range []string{
		"",
		"index=5&wait=1m",
		"prefix=web&index=7&namespace=team-b&stale",
		"%6eamespace=a%20b&filter=Status+%3D%3D+%22running%22&index=3&x=1&x=2",
	} {
		q, err := url.ParseQuery(raw)
		if err != nil {
			t.Fatal(err)
		}
		got := encodeQueryWithout(q, "index", "wait", "stale")
		want := url.Values{}
		for k, v := range q {
			want[k] = v
		}
		delete(want, "index")
		delete(want, "wait")
		delete(want, "stale")
		if got != want.Encode() {
			t.Errorf("%q: got %q, want %q", raw, got, want.Encode())
		}
		if strings.Contains(raw, "index=") && q.Get("index") == "" {
			t.Errorf("%q: the request's own query lost index", raw)
		}
	}
}
