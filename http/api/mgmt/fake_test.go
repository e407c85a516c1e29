package mgmt

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
)

// mgmtSeen is one request as the management fake saw it, with the query
// kept raw so tests can check how brackets were encoded.
type mgmtSeen struct {
	Method   string
	Path     string // escaped
	RawQuery string
	Header   http.Header
	Body     []byte
}

// mgmtFake answers every request with a fixed status and body and records
// what it received.
type mgmtFake struct {
	*httptest.Server
	status int
	body   string
	mu     sync.Mutex
	seen   []mgmtSeen
}

func newMgmtFake(t *testing.T, status int, body string) *mgmtFake {
	t.Helper()
	f := &mgmtFake{status: status, body: body}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.seen = append(f.seen, mgmtSeen{Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: b})
		f.mu.Unlock()
		if f.body != "" {
			w.Header().Set("Content-Type", MediaTypeJSONAPI)
		}
		w.WriteHeader(f.status)
		io.WriteString(w, f.body)
	}))
	t.Cleanup(f.Close)
	return f
}

// mgmt returns a management client of f authenticating with token.
func (f *mgmtFake) mgmt(t *testing.T, token string) *Client {
	t.Helper()
	c, err := api.NewClient(api.Config{Address: f.URL, Token: token, Namespace: "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	return New(c)
}

// only returns the single request f received.
func (f *mgmtFake) only(t *testing.T) mgmtSeen {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) != 1 {
		t.Fatalf("%d requests, want 1", len(f.seen))
	}
	return f.seen[0]
}

// mgmtCase is one call of the management client: what the server answers,
// what the client must send, and what it must return.
type mgmtCase struct {
	name   string
	call   func(ctx context.Context, m *Client) (any, error)
	status int // 0: 200
	reply  string
	method string
	path   string
	// query is the exact raw query string.
	query string
	// body is the expected JSON body; "" means no body.
	body string
	want any
}

func runMgmtCases(t *testing.T, cases []mgmtCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status := tc.status
			if status == 0 {
				status = http.StatusOK
			}
			f := newMgmtFake(t, status, tc.reply)
			got, err := tc.call(t.Context(), f.mgmt(t, "s3cret"))
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			r := f.only(t)
			if r.Method != tc.method || r.Path != tc.path {
				t.Errorf("request = %s %s, want %s %s", r.Method, r.Path, tc.method, tc.path)
			}
			if r.RawQuery != tc.query {
				t.Errorf("query = %q, want %q", r.RawQuery, tc.query)
			}
			if h := r.Header.Get("Authorization"); h != "Bearer s3cret" {
				t.Errorf("Authorization = %q", h)
			}
			if h := r.Header.Get("Accept"); h != MediaTypeJSONAPI {
				t.Errorf("Accept = %q", h)
			}
			if tc.body == "" {
				if len(r.Body) != 0 || r.Header.Get("Content-Type") != "" {
					t.Errorf("unexpected body %q (Content-Type %q)", r.Body, r.Header.Get("Content-Type"))
				}
			} else {
				if h := r.Header.Get("Content-Type"); h != MediaTypeJSONAPI {
					t.Errorf("Content-Type = %q", h)
				}
				if !testutil.JSONEqual(t, r.Body, tc.body) {
					t.Errorf("body:\n%s\nwant:\n%s", r.Body, tc.body)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got:\n%s\nwant:\n%s", testutil.MustJSON(t, got), testutil.MustJSON(t, tc.want))
			}
		})
	}
}

// mgmtNoValue adapts a call returning only an error to mgmtCase.call.
func mgmtNoValue(err error) (any, error) { return nil, err }

// itemsOf strips a page to its items, for cases that check them only.
func itemsOf[T any](p *Page[T], err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return p.Items, nil
}

func ptrTo[T any](v T) *T { return &v }
