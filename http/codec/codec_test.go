package codec

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestStatusOf(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{&CodedError{Code: http.StatusServiceUnavailable, Message: "no leader"}, http.StatusServiceUnavailable},
		{fmt.Errorf("forwarded: %w", &CodedError{Code: http.StatusConflict}), http.StatusConflict},
		{state.Invalidf("Name", "required"), http.StatusBadRequest},
		{state.NotFoundf("job %q", "web"), http.StatusNotFound},
		{fmt.Errorf("write: %w", state.ErrConflict), http.StatusConflict},
		{errors.New("disk on fire"), http.StatusInternalServerError},
	}
	for _, c := range cases {
		if got := StatusOf(c.err); got != c.want {
			t.Errorf("StatusOf(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

func TestWriteError(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteError(rec, state.NotFoundf("job %q", "web"))
	if body := rec.Body.String(); rec.Code != http.StatusNotFound || !strings.HasPrefix(body, `job "web"`) || strings.Count(body, "\n") != 1 {
		t.Errorf("%d %q", rec.Code, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestClientGone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)
	if ClientGone(r, context.Canceled) {
		t.Error("a live request's caller is gone")
	}
	cancel()
	if !ClientGone(r, context.Canceled) || !ClientGone(r, errors.New("write: broken pipe")) {
		t.Error("a canceled request's caller is not gone")
	}
	if ClientGone(r, state.Invalidf("x", "bad")) {
		t.Error("a 400 is taken for a caller that went away")
	}
}

func TestDecodeBody(t *testing.T) {
	deep := strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1)
	cases := []struct {
		body string
		want string // "" decodes
	}{
		{`{"Name":"web"}`, ""},
		{``, "request body is required"},
		{`  `, "request body is required"},
		{`{"Name":`, "failed to parse request body"},
		{`{"Name":1}`, "Name: cannot use JSON number"},
		{`{"Name":"web"} {}`, "unexpected data after the JSON document"},
		{deep, "nested more than"},
	}
	for _, c := range cases {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body))
		var v struct{ Name string }
		err := DecodeBody(r, &v)
		switch {
		case c.want == "" && (err != nil || v.Name != "web"):
			t.Errorf("%q: %v, %+v", c.body, err, v)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || StatusOf(err) != http.StatusBadRequest):
			t.Errorf("%q: %v, want a 400 with %q", c.body, err, c.want)
		}
	}
}

func TestDecodeKeptBody(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"Name":"web"}`))
	var v struct{ Name string }
	if err := DecodeKeptBody(r, &v); err != nil || v.Name != "web" {
		t.Fatalf("%v, %+v", err, v)
	}
	var again struct{ Name string }
	if err := DecodeBody(r, &again); err != nil || again.Name != "web" {
		t.Errorf("the body was not put back: %v, %+v", err, again)
	}
	empty := httptest.NewRequest(http.MethodPost, "/", nil)
	v.Name = "kept"
	if err := DecodeKeptBody(empty, &v); err != nil || v.Name != "kept" {
		t.Errorf("an empty body: %v, %+v", err, v)
	}
}

func TestParams(t *testing.T) {
	q := url.Values{"on": {""}, "off": {"false"}, "bad": {"maybe"}, "n": {"42"}, "nan": {"x"}}
	for name, want := range map[string]bool{"on": true, "off": false, "absent": false} {
		if got, err := BoolParam(q, name); err != nil || got != want {
			t.Errorf("BoolParam(%s) = %v, %v", name, got, err)
		}
	}
	if _, err := BoolParam(q, "bad"); err == nil || StatusOf(err) != http.StatusBadRequest {
		t.Errorf("BoolParam(bad): %v", err)
	}
	if n, err := IntParam(q, "n", 7); err != nil || n != 42 {
		t.Errorf("IntParam(n) = %d, %v", n, err)
	}
	if n, err := IntParam(q, "absent", 7); err != nil || n != 7 {
		t.Errorf("IntParam(absent) = %d, %v", n, err)
	}
	if _, err := IntParam(q, "nan", 0); err == nil || !strings.Contains(err.Error(), `nan: "x" is not an integer`) {
		t.Errorf("IntParam(nan): %v", err)
	}
}

// The query rules the core and a client agent share: decoded keys count,
// a parameter repeated with another value is refused, as is a query that
// does not decode.
func TestResolveQuery(t *testing.T) {
	for raw, want := range map[string]string{
		"":                                   "",
		"%6eamespace=b":                      "b",
		"namespace=a&namespace=a":            "a",
		"namespace=a&%6Eamespace=b":          "error: namespace",
		"namespace=%zz":                      "error: query",
		"alloc_id=x&allocID=y":               "error: alloc_id",
		"task=a&task=b":                      "error: task",
		"allocID=x&namespace=c&task=t&x=%41": "c",
	} {
		sc, err := ResolveQuery(raw)
		got := sc.Namespace
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, want) {
			t.Errorf("ResolveQuery(%q) = %q, want %q…", raw, got, want)
		}
	}
	if sc, _ := ResolveQuery("allocID=x&task=t"); sc.AllocID != "x" || sc.Task != "t" {
		t.Errorf("legacy allocID and task: %+v", sc)
	}
}
