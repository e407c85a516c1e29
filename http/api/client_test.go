package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDefaultConfigReadsEnvironment(t *testing.T) {
	t.Setenv(EnvAddress, "")
	t.Setenv(EnvToken, "")
	t.Setenv(EnvNamespace, "")
	for _, k := range []string{EnvCACert, EnvClientCert, EnvClientKey, EnvTLSServerName} {
		t.Setenv(k, "")
	}
	if got := DefaultConfig(); got.Address != DefaultAddress || got.Token != "" || got.Namespace != "" {
		t.Fatalf("empty environment: got %+v", got)
	}
	t.Setenv(EnvAddress, "https://sched.example:4646")
	t.Setenv(EnvToken, "secret")
	t.Setenv(EnvNamespace, "prod")
	t.Setenv(EnvCACert, "/ca.pem")
	t.Setenv(EnvClientCert, "/cli.pem")
	t.Setenv(EnvClientKey, "/cli-key.pem")
	t.Setenv(EnvTLSServerName, "server.global.sched")
	got := DefaultConfig()
	want := Config{Address: "https://sched.example:4646", Token: "secret", Namespace: "prod",
		TLS: TLSConfig{CACert: "/ca.pem", ClientCert: "/cli.pem", ClientKey: "/cli-key.pem", ServerName: "server.global.sched"}}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestNewClientAddress(t *testing.T) {
	cases := []struct {
		addr    string
		want    string
		wantErr string
	}{
		{addr: "", want: DefaultAddress},
		{addr: "http://10.0.0.1:4646", want: "http://10.0.0.1:4646"},
		{addr: "https://sched.example/", want: "https://sched.example"},
		{addr: "http://proxy.example/sched/", want: "http://proxy.example/sched"},
		{addr: "10.0.0.1:4646", want: "http://10.0.0.1:4646"},
		{addr: "ftp://10.0.0.1", wantErr: "scheme must be http or https"},
		{addr: "http://", wantErr: "no host"},
		{addr: "http://h:1/?x=1", wantErr: "query or fragment"},
		{addr: "http://bad host", wantErr: "invalid address"},
	}
	for _, tc := range cases {
		t.Run(tc.addr, func(t *testing.T) {
			c, err := NewClient(Config{Address: tc.addr})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Address() != tc.want {
				t.Fatalf("Address() = %q, want %q", c.Address(), tc.want)
			}
		})
	}
}

func TestBasePathPrefixIsKept(t *testing.T) {
	f := newFake(t, reply{Body: `[]`})
	c, err := NewClient(Config{Address: f.URL + "/sched"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().List(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got := f.requests()[0].RawPath; got != "/sched/v1/jobs" {
		t.Fatalf("path = %q, want /sched/v1/jobs", got)
	}
}

func TestStatusError(t *testing.T) {
	f := newFake(t,
		reply{Status: http.StatusBadRequest, Body: "job ID is required\n"},
		reply{Status: http.StatusNotFound, Body: "job not found\n"},
	)
	c := f.client(t, Config{})
	ctx := context.Background()

	_, _, err := c.Jobs().Register(ctx, nil, nil, nil)
	var se *StatusError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v (%T), want *StatusError", err, err)
	}
	if se.Code != 400 || se.Body != "job ID is required" {
		t.Fatalf("got %+v", se)
	}
	if got, want := err.Error(), "Unexpected response code: 400 (job ID is required)"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if IsNotFound(err) {
		t.Fatal("IsNotFound(400) = true")
	}

	_, _, err = c.Jobs().Info(ctx, "nope", nil)
	if !IsNotFound(err) {
		t.Fatalf("IsNotFound(%v) = false", err)
	}
}

func TestErrorBodyIsBounded(t *testing.T) {
	f := newFake(t, reply{Status: 502, Body: strings.Repeat("x", MaxErrorBody*2)})
	_, _, err := f.client(t, Config{}).Jobs().List(context.Background(), nil)
	var se *StatusError
	if !errors.As(err, &se) || len(se.Body) != MaxErrorBody {
		t.Fatalf("got %v, want a StatusError with a %d-byte body", err, MaxErrorBody)
	}
}

func TestQueryMetaFromHeaders(t *testing.T) {
	f := newFake(t, reply{
		Header: map[string]string{
			HeaderIndex:       "42",
			HeaderKnownLeader: "true",
			HeaderLastContact: "150",
			HeaderNextToken:   "default.web",
		},
		Body: `[]`,
	})
	_, qm, err := f.client(t, Config{}).Jobs().List(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := QueryMeta{LastIndex: 42, KnownLeader: true, LastContact: 150 * time.Millisecond, NextToken: "default.web"}
	if *qm != want {
		t.Fatalf("got %+v, want %+v", *qm, want)
	}
}

func TestBadHeadersAreErrors(t *testing.T) {
	for _, h := range []string{HeaderIndex, HeaderKnownLeader, HeaderLastContact} {
		t.Run(h, func(t *testing.T) {
			f := newFake(t, reply{Header: map[string]string{h: "bogus"}, Body: `[]`})
			_, _, err := f.client(t, Config{}).Jobs().List(context.Background(), nil)
			if err == nil || !strings.Contains(err.Error(), h) {
				t.Fatalf("err = %v, want it to name %s", err, h)
			}
		})
	}
}

func TestQueryOptionsOnTheWire(t *testing.T) {
	cases := []struct {
		name      string
		cfg       Config
		q         *QueryOptions
		wantQuery url.Values
		wantToken string
	}{
		{name: "nil options, empty config", q: nil, wantQuery: url.Values{}},
		{
			name:      "config defaults",
			cfg:       Config{Token: "cfg-token", Namespace: "cfg-ns"},
			wantQuery: url.Values{"namespace": {"cfg-ns"}},
			wantToken: "cfg-token",
		},
		{
			name: "options override config",
			cfg:  Config{Token: "cfg-token", Namespace: "cfg-ns"},
			q: &QueryOptions{
				Namespace: "*", Token: "q-token", Prefix: "we", PerPage: 10, NextToken: "tok",
				Filter: `Status == "running"`, WaitIndex: 7, WaitTime: 90 * time.Second, AllowStale: true,
				Params: map[string]string{"meta": "true"},
			},
			wantQuery: url.Values{
				"namespace": {"*"}, "prefix": {"we"}, "per_page": {"10"}, "next_token": {"tok"},
				"filter": {`Status == "running"`}, "index": {"7"}, "wait": {"1m30s"}, "stale": {"true"},
				"meta": {"true"},
			},
			wantToken: "q-token",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, reply{Body: `[]`})
			if _, _, err := f.client(t, tc.cfg).Jobs().List(context.Background(), tc.q); err != nil {
				t.Fatal(err)
			}
			r := f.requests()[0]
			if r.Method != http.MethodGet || r.RawPath != "/v1/jobs" {
				t.Fatalf("request %s %s", r.Method, r.RawPath)
			}
			if !reflect.DeepEqual(r.Query, tc.wantQuery) {
				t.Fatalf("query = %v, want %v", r.Query, tc.wantQuery)
			}
			if got := r.Header.Get(HeaderToken); got != tc.wantToken {
				t.Fatalf("token = %q, want %q", got, tc.wantToken)
			}
			if r.Header.Get("Content-Type") != "" || len(r.Body) != 0 {
				t.Fatalf("GET carried a body: %q", r.Body)
			}
		})
	}
}

func TestWriteOptionsOverrideConfig(t *testing.T) {
	f := newFake(t, reply{Body: `{}`}, reply{Body: `{}`})
	c := f.client(t, Config{Token: "cfg-token", Namespace: "cfg-ns"})
	ctx := context.Background()
	if _, _, err := c.Jobs().Deregister(ctx, "web", false, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Deregister(ctx, "web", false, nil, &WriteOptions{Namespace: "w-ns", Token: "w-token"}); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	for i, want := range []struct{ ns, token string }{{"cfg-ns", "cfg-token"}, {"w-ns", "w-token"}} {
		if got := reqs[i].Query.Get("namespace"); got != want.ns {
			t.Errorf("request %d namespace = %q, want %q", i, got, want.ns)
		}
		if got := reqs[i].Header.Get(HeaderToken); got != want.token {
			t.Errorf("request %d token = %q, want %q", i, got, want.token)
		}
	}
}

func TestTransportAndDecodeErrors(t *testing.T) {
	ctx := context.Background()

	t.Run("server down", func(t *testing.T) {
		f := newFake(t)
		c := f.client(t, Config{})
		f.Close()
		_, _, err := c.Jobs().List(ctx, nil)
		if err == nil || !strings.Contains(err.Error(), "GET /v1/jobs") {
			t.Fatalf("err = %v, want a transport error naming the request", err)
		}
		var se *StatusError
		if errors.As(err, &se) {
			t.Fatalf("transport failure reported as %v", se)
		}
	})

	t.Run("malformed body", func(t *testing.T) {
		f := newFake(t, reply{Body: `{"ID": 5`})
		_, _, err := f.client(t, Config{}).Jobs().Info(ctx, "web", nil)
		if err == nil || !strings.Contains(err.Error(), "decode response of GET /v1/job/web") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("canceled context", func(t *testing.T) {
		f := newFake(t, reply{Body: `[]`})
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, _, err := f.client(t, Config{}).Jobs().List(cctx, nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if n := len(f.requests()); n != 0 {
			t.Fatalf("%d requests sent with a canceled context", n)
		}
	})

	t.Run("empty ID", func(t *testing.T) {
		f := newFake(t, reply{Body: `{}`})
		_, _, err := f.client(t, Config{}).Jobs().Info(ctx, "", nil)
		if err == nil || !strings.Contains(err.Error(), "empty path segment") {
			t.Fatalf("err = %v", err)
		}
		if n := len(f.requests()); n != 0 {
			t.Fatalf("%d requests sent for an empty ID", n)
		}
	})
}

func TestCustomHTTPClientIsUsed(t *testing.T) {
	f := newFake(t, reply{Body: `[]`})
	var seen bool
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen = true
		return http.DefaultTransport.RoundTrip(r)
	})}
	c, err := NewClient(Config{Address: f.URL, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().List(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if !seen {
		t.Fatal("the configured HTTPClient was not used")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
