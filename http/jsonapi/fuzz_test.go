package jsonapi

import "testing"

// FuzzParseRequest: no request document crashes the decoder.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"data":{"type":"workspaces","attributes":{"name":"w1"},"relationships":{"project":{"data":{"type":"projects","id":"prj-1"}}}}}`))
	f.Add([]byte(`{"data":[{"type":"users","id":"user-1"}]}`))
	f.Add([]byte(`{"data":null,"included":[]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		doc, err := ParseRequest(raw)
		if err != nil {
			return
		}
		_, _ = doc.Resource(Expect{Type: "workspaces"})
		_, _ = doc.Identifiers("users")
		_, _, _ = doc.Objects("users")
	})
}
