package http

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/schedhq/sched/state"
)

// TestEncodeResponseAsMarshal: answers encoded into a reused buffer are
// byte for byte what json.Marshal gives, whatever the buffer held before.
func TestEncodeResponseAsMarshal(t *testing.T) {
	values := []any{
		&state.JobRegisterResponse{EvalID: "e<1>&", Index: 7, Warnings: "a\nb"},
		[]*state.Allocation{{ID: "a1", Name: "web.g[0]", Job: &state.Job{ID: "web", Meta: map[string]string{"<": ">"}}}},
		map[string]any{"html": "<script>", "n": 1.5},
		nil,
		"",
	}
	buf := new(bytes.Buffer)
	buf.WriteString("left over from a larger answer, longer than what follows")
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := encodeResponse(buf, v); err != nil {
			t.Fatalf("encodeResponse(%#v): %v", v, err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("encodeResponse = %q, want %q", buf.Bytes(), want)
		}
	}
	if err := encodeResponse(buf, func() {}); err == nil {
		t.Error("a value JSON cannot encode was encoded")
	}
}
