package api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestClusterEndpoints(t *testing.T) {
	runEndpointCases(t, []endpointCase{
		{
			name:   "status leader",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Status().Leader(ctx) },
			reply:  reply{Body: `"10.0.0.1:4647"`},
			method: "GET", path: "/v1/status/leader",
			want: "10.0.0.1:4647",
		},
		{
			name:   "status peers",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Status().Peers(ctx) },
			reply:  reply{Body: `["10.0.0.1:4647","10.0.0.2:4647"]`},
			method: "GET", path: "/v1/status/peers",
			want: []string{"10.0.0.1:4647", "10.0.0.2:4647"},
		},
		{
			name:   "members",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Agent().Members(ctx) },
			reply:  reply{Body: `{"ServerName":"s1","ServerRegion":"global","ServerDC":"dc1","Members":[{"Name":"s1.global","Addr":"10.0.0.1","Port":4648,"Tags":{"id":"a"},"Status":"alive","ProtocolCur":5}]}`},
			method: "GET", path: "/v1/agent/members",
			want: &state.ServerMembers{ServerName: "s1", ServerRegion: "global", ServerDC: "dc1", Members: []*state.AgentMember{
				{Name: "s1.global", Addr: "10.0.0.1", Port: 4648, Tags: map[string]string{"id": "a"}, Status: "alive", ProtocolCur: 5}}},
		},
		{
			name:   "health",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Agent().Health(ctx) },
			reply:  reply{Body: `{"server":{"ok":true,"message":"ok"}}`},
			method: "GET", path: "/v1/agent/health",
			want: &state.AgentHealthResponse{Server: &state.AgentHealth{OK: true, Message: "ok"}},
		},
		{
			name: "join",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Agent().Join(ctx, "10.0.0.2", "10.0.0.3:4648")
			},
			reply:  reply{Body: `{"num_joined":2,"error":""}`},
			method: "PUT", path: "/v1/agent/join", query: url.Values{"address": {"10.0.0.2", "10.0.0.3:4648"}},
			want: 2,
		},
		{
			name: "raft configuration",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Operator().RaftGetConfiguration(ctx, &QueryOptions{AllowStale: true})
			},
			reply:  reply{Body: `{"Index":7,"Servers":[{"ID":"a","Node":"s1","Address":"10.0.0.1:4647","Leader":true,"Voter":true,"RaftProtocol":"3"}]}`},
			method: "GET", path: "/v1/operator/raft/configuration", query: url.Values{"stale": {"true"}},
			want: &state.RaftConfiguration{Index: 7, Servers: []*state.RaftServer{{ID: "a", Node: "s1", Address: "10.0.0.1:4647", Leader: true, Voter: true, RaftProtocol: "3"}}},
		},
		{
			name: "remove peer by id",
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.Operator().RaftRemovePeerByID(ctx, "abc", nil)
			},
			method: "DELETE", path: "/v1/operator/raft/peer", query: url.Values{"id": {"abc"}},
		},
		{
			name: "remove peer by address",
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.Operator().RaftRemovePeerByAddress(ctx, "10.0.0.3:4647", nil)
			},
			method: "DELETE", path: "/v1/operator/raft/peer", query: url.Values{"address": {"10.0.0.3:4647"}},
		},
	})
}

func TestJoinReportsTheAgentsError(t *testing.T) {
	f := newFake(t, reply{Body: `{"num_joined":0,"error":"dial tcp 10.9.9.9:4648: i/o timeout"}`})
	n, err := f.client(t, Config{}).Agent().Join(context.Background(), "10.9.9.9")
	if n != 0 || err == nil || !strings.Contains(err.Error(), "i/o timeout") {
		t.Fatalf("Join = %d, %v", n, err)
	}
}

func TestSnapshotStreamsBothWays(t *testing.T) {
	archive := []byte("\x1f\x8b\x08 not really gzip but bytes")
	f := newFake(t,
		reply{Body: string(archive)},
		reply{},
		reply{Status: http.StatusBadRequest, Body: "invalid snapshot archive: checksum mismatch\n"},
	)
	c := f.client(t, Config{Token: "tok"})
	rc, err := c.Operator().Snapshot(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, archive) {
		t.Fatalf("snapshot bytes %q", got)
	}
	if err := c.Operator().SnapshotRestore(context.Background(), bytes.NewReader(archive), nil); err != nil {
		t.Fatal(err)
	}
	err = c.Operator().SnapshotRestore(context.Background(), strings.NewReader("x"), nil)
	var se *StatusError
	if err == nil || !strings.Contains(err.Error(), "checksum mismatch") || !errors.As(err, &se) || se.Code != 400 {
		t.Fatalf("refused restore: %v", err)
	}
	reqs := f.requests()
	if reqs[0].Method != "GET" || reqs[0].RawPath != "/v1/operator/snapshot" || reqs[0].Header.Get(HeaderToken) != "tok" {
		t.Errorf("save request %+v", reqs[0])
	}
	if reqs[1].Method != "PUT" || !bytes.Equal(reqs[1].Body, archive) || reqs[1].Header.Get(HeaderToken) != "tok" {
		t.Errorf("restore request %s %s, %d bytes", reqs[1].Method, reqs[1].RawPath, len(reqs[1].Body))
	}
}
