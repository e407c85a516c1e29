package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
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

// ptrMarshaled has a MarshalJSON on its pointer: json.Marshal calls it
// for the elements of a slice of values.
type ptrMarshaled struct{ N int }

func (p *ptrMarshaled) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf(`"n%d"`, p.N)), nil }

// TestStreamListAsMarshal: a list of streamListMin elements or more is
// streamed element by element, and the bytes are json.Marshal's; shorter
// lists, bytes and types with their own encoding are not streamed; an
// element that cannot be encoded ends the answer with broken JSON.
func TestStreamListAsMarshal(t *testing.T) {
	n := streamListMin + 7
	stubs := make([]*state.AllocListStub, n)
	strs := make([]string, n)
	blobs := make([][]byte, n)
	vals := make([]ptrMarshaled, n)
	anys := make([]any, n)
	for i := range n {
		if i%5 != 0 {
			stubs[i] = &state.AllocListStub{ID: fmt.Sprintf("a%d", i), Name: "web.g[<0>]&", ModifyIndex: uint64(i)}
		}
		strs[i] = fmt.Sprintf("<%d>", i)
		blobs[i] = []byte{byte(i), 0xff}
		vals[i] = ptrMarshaled{i}
		if i%3 == 0 {
			anys[i] = map[string]int{"i": i}
		}
	}
	for _, v := range []any{stubs, strs, blobs, vals, anys} {
		list, ok := longList(v)
		if !ok {
			t.Fatalf("%T of %d not streamed", v, n)
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		if err := streamList(rec, list); err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if got := rec.Body.Bytes(); !bytes.Equal(got, want) {
			t.Fatalf("%T streamed as %.200q..., want %.200q...", v, got, want)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
	}
	for _, v := range []any{strs[:streamListMin-1], make([]byte, 5000), json.RawMessage(bytes.Repeat([]byte(" "), 5000)), map[string]int{}} {
		if _, ok := longList(v); ok {
			t.Errorf("%T of length %d is streamed", v, len(fmt.Sprint(v)))
		}
	}
	bad := make([]float64, n)
	bad[n-1] = math.NaN()
	list, _ := longList(bad)
	rec := httptest.NewRecorder()
	if err := streamList(rec, list); err == nil {
		t.Fatal("a NaN was streamed")
	}
	var out []float64
	if json.Unmarshal(rec.Body.Bytes(), &out) == nil {
		t.Error("an answer cut by an element that cannot be encoded parses")
	}
}
