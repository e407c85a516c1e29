package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

func TestServicesEndpoints(t *testing.T) {
	reg := &state.ServiceRegistration{ID: "s1", ServiceName: "web", AllocID: "a1", Port: 8080, Tags: []string{"v1"}}
	regJSON := testutil.MustJSON(t, reg)
	cases := []endpointCase{
		{
			name: "list, every namespace",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Services().List(ctx, &QueryOptions{Namespace: "*"}))
			},
			reply:  reply{Header: indexHeader, Body: `[{"Namespace":"default","Services":[{"ServiceName":"web","Tags":["v1"]}]}]`},
			method: "GET", path: "/v1/services", query: url.Values{"namespace": {"*"}},
			want: withMeta{[]*state.ServiceListStub{{Namespace: "default", Services: []*state.ServiceListEntry{{ServiceName: "web", Tags: []string{"v1"}}}}}, 17},
		},
		{
			name: "get, blocking",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Services().Get(ctx, "web api", &QueryOptions{WaitIndex: 4}))
			},
			reply:  reply{Header: indexHeader, Body: "[" + regJSON + "]"},
			method: "GET", path: "/v1/service/web%20api", query: url.Values{"index": {"4"}},
			want: withMeta{[]*state.ServiceRegistration{reg}, 17},
		},
		{
			name: "job services",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Jobs().Services(ctx, "web", nil))
			},
			reply:  reply{Header: indexHeader, Body: "[" + regJSON + "]"},
			method: "GET", path: "/v1/job/web/services",
			want: withMeta{[]*state.ServiceRegistration{reg}, 17},
		},
		{
			name: "operator delete",
			call: func(ctx context.Context, c *Client) (any, error) {
				wm, err := c.Services().Delete(ctx, "web", "s1", &WriteOptions{Namespace: "prod"})
				return wm, err
			},
			reply:  reply{Header: indexHeader, Body: `{"Index":17}`},
			method: "DELETE", path: "/v1/service/web/s1", query: url.Values{"namespace": {"prod"}},
			want: &WriteMeta{LastIndex: 17},
		},
		{
			name: "node registers",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Nodes().RegisterServices(ctx, "n1", []*state.ServiceRegistration{reg}, nil))
			},
			reply:  reply{Header: indexHeader, Body: `{"Index":17}`},
			method: "PUT", path: "/v1/node/n1/services", body: `{"Services":[` + regJSON + `]}`,
			want: withMeta{&state.ServiceRegistrationsResponse{Index: 17}, 17},
		},
		{
			name: "node deregisters",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Nodes().DeregisterServices(ctx, "n1", []string{"s1", "s2"}, []string{"a1"}, nil))
			},
			reply:  reply{Header: indexHeader, Body: `{"Index":17}`},
			method: "DELETE", path: "/v1/node/n1/services", query: url.Values{"id": {"s1", "s2"}, "alloc_id": {"a1"}},
			want: withMeta{&state.ServiceRegistrationsResponse{Index: 17}, 17},
		},
		{
			name: "allocation stats",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Allocations().Stats(ctx, "a1", &QueryOptions{Namespace: "prod"})
			},
			reply:  reply{Body: `{"ResourceUsage":{"MemoryStats":{"RSS":10}},"Tasks":{"web":{"Timestamp":3}},"Timestamp":3}`},
			method: "GET", path: "/v1/client/allocation/a1/stats", query: url.Values{"namespace": {"prod"}},
			want: &state.AllocResourceUsage{ResourceUsage: &state.ResourceUsage{MemoryStats: &state.MemoryStats{RSS: 10}}, Tasks: map[string]*state.TaskResourceUsage{"web": {Timestamp: 3}}, Timestamp: 3},
		},
	}
	runEndpointCases(t, cases)

	c := newFake(t).client(t, Config{})
	if _, _, err := c.Nodes().RegisterServices(context.Background(), "n1", nil, nil); err == nil {
		t.Error("registering nothing was sent")
	}
	if _, _, err := c.Nodes().DeregisterServices(context.Background(), "n1", nil, nil, nil); err == nil {
		t.Error("deregistering nothing was sent")
	}
}

func TestClientLogs(t *testing.T) {
	f := newFake(t,
		reply{Header: map[string]string{HeaderLogInitialBytes: "5"}, Body: "hello, and more"},
		reply{Status: http.StatusNotFound, Body: "task \"x\" in allocation \"a1\" not found\n"},
	)
	c := f.client(t, Config{Token: "tok"})
	ls, err := c.AllocFS().Logs(context.Background(), "a1", &LogsOptions{Task: "web", Type: "stderr", Follow: true, Offset: 7, FromEnd: true}, &QueryOptions{Namespace: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(ls)
	ls.Close()
	if string(body) != "hello, and more" || ls.InitialBytes != 5 {
		t.Errorf("stream %q, initial %d", body, ls.InitialBytes)
	}
	r := f.requests()[0]
	want := url.Values{"task": {"web"}, "type": {"stderr"}, "follow": {"true"}, "offset": {"7"}, "origin": {"end"}, "plain": {"true"}, "namespace": {"prod"}}
	if r.RawPath != "/v1/client/fs/logs/a1" || r.Query.Encode() != want.Encode() || r.Header.Get(HeaderToken) != "tok" {
		t.Errorf("request %s %v token %q", r.RawPath, r.Query, r.Header.Get(HeaderToken))
	}
	_, err = c.AllocFS().Logs(context.Background(), "a1", &LogsOptions{Task: "x"}, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 404 || !strings.Contains(se.Body, `task "x"`) || !IsNotFound(err) {
		t.Errorf("404: %v", err)
	}
	if _, err := c.AllocFS().Logs(context.Background(), "a1", &LogsOptions{}, nil); err == nil {
		t.Error("no task: no error")
	}
}
