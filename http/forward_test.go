package http

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// fakeForwarder is a Forwarder whose leader is whatever the test says.
type fakeForwarder struct {
	mu     sync.Mutex
	id     string
	leader bool
	// leaders are answered by LeaderHTTPAddr in turn (the last one for
	// ever after); "" means "no leader" and "self" this server.
	leaders []string
	asked   []string // the avoid argument of each LeaderHTTPAddr call
	changed chan struct{}

	readIndex   uint64
	conf        *state.RaftConfiguration
	removed     []string
	joined      []string
	joinErr     error
	snapshot    string
	snapErr     error
	restored    []byte
	restoreErr  error
	raftLeader  string
	membersResp *state.ServerMembers
}

var _ Forwarder = (*fakeForwarder)(nil)

func newFakeForwarder(leaders ...string) *fakeForwarder {
	return &fakeForwarder{id: "follower-1", leaders: leaders, changed: make(chan struct{})}
}

func (f *fakeForwarder) LocalID() string { return f.id }

func (f *fakeForwarder) IsLeader() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leader
}

func (f *fakeForwarder) LeaderHTTPAddr(ctx context.Context, avoid string) (string, bool, error) {
	f.mu.Lock()
	f.asked = append(f.asked, avoid)
	next := ""
	if len(f.leaders) > 0 {
		next = f.leaders[0]
		if len(f.leaders) > 1 {
			f.leaders = f.leaders[1:]
		}
	}
	f.mu.Unlock()
	switch next {
	case "":
		return "", false, errors.New("no leader (fake)")
	case "self":
		return "", true, nil
	}
	return next, false, nil
}

func (f *fakeForwarder) LeaderChanged() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// changeLeader makes to the leader ("" for none, "self") and fires
// LeaderChanged.
func (f *fakeForwarder) changeLeader(to string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leaders = []string{to}
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeForwarder) ReadIndex(context.Context) (uint64, error) { return f.readIndex, nil }
func (f *fakeForwarder) LeaderRaftAddr() string                    { return f.raftLeader }
func (f *fakeForwarder) RaftConfiguration() (*state.RaftConfiguration, error) {
	if f.conf == nil {
		return &state.RaftConfiguration{}, nil
	}
	return f.conf, nil
}
func (f *fakeForwarder) RemoveRaftPeer(id, addr string) error {
	f.removed = append(f.removed, id+"|"+addr)
	if id == "unknown" {
		return &CodedError{Code: http.StatusNotFound, Message: "no server with ID unknown"}
	}
	return nil
}
func (f *fakeForwarder) Members() *state.ServerMembers { return f.membersResp }
func (f *fakeForwarder) Join(addrs []string) (int, error) {
	f.joined = append(f.joined, addrs...)
	if f.joinErr != nil {
		return 0, f.joinErr
	}
	return len(addrs), nil
}
func (f *fakeForwarder) Self() *state.AgentSelf {
	return &state.AgentSelf{Config: map[string]any{"Name": "s1"}, Stats: map[string]map[string]string{"raft": {"state": "Leader"}}}
}
func (f *fakeForwarder) SaveSnapshot(w io.Writer) error {
	if f.snapshot != "" {
		io.WriteString(w, f.snapshot)
	}
	return f.snapErr
}
func (f *fakeForwarder) RestoreSnapshot(_ context.Context, r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	f.restored = b
	return f.restoreErr
}

// follower is a Server whose forwarder points at the given leaders, served
// over real HTTP so requests cross a real proxy.
func followerServer(t testing.TB, fwd *fakeForwarder) (*harness, *httptest.Server) {
	t.Helper()
	h := newHarnessWith(t, store.Config{}, func(c *testConfig) { c.Forwarder = fwd })
	ts := httptest.NewServer(h.srv.Handler())
	t.Cleanup(ts.Close)
	return h, ts
}

// recordingLeader is a stand-in leader that records what reached it and
// answers with handler.
func recordingLeader(t *testing.T, handler http.HandlerFunc) (*httptest.Server, *[]*http.Request, *[]string) {
	t.Helper()
	var mu sync.Mutex
	var reqs []*http.Request
	var bodies []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		reqs = append(reqs, r.Clone(context.Background()))
		bodies = append(bodies, string(b))
		mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, &reqs, &bodies
}

func hostOf(ts *httptest.Server) string { return strings.TrimPrefix(ts.URL, "http://") }

func TestNeedsLeader(t *testing.T) {
	cases := []struct {
		method, target string
		want           bool
	}{
		{"POST", "/v1/jobs", true},
		{"PUT", "/v1/job/web", true},
		{"DELETE", "/v1/job/web", true},
		{"PATCH", "/api/v2/workspaces/ws-1", true},
		{"GET", "/v1/jobs", false},
		{"GET", "/v1/job/web?index=5", false},
		{"POST", "/v1/jobs/parse", false},
		{"PUT", "/v1/validate/job", false},
		{"PUT", "/v1/agent/join?address=x", false},
		{"GET", "/v1/status/leader", false},
		{"GET", ReadIndexPath, false},
		{"GET", "/v1/operator/snapshot", true},
		{"GET", "/v1/operator/snapshot?stale", false},
		{"GET", "/v1/operator/raft/configuration", true},
		{"GET", "/v1/operator/raft/configuration?stale=true", false},
		{"PUT", "/v1/operator/snapshot", true},
		{"DELETE", "/v1/operator/raft/peer?id=x", true},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		if got := needsLeader(r); got != tc.want {
			t.Errorf("%s %s: needsLeader = %v, want %v", tc.method, tc.target, got, tc.want)
		}
	}
}

func TestForwardRelaysTheLeadersAnswer(t *testing.T) {
	leader, reqs, bodies := recordingLeader(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderIndex, "42")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, "job \"web\" was modified at index 41\n")
	})
	fwd := newFakeForwarder(hostOf(leader))
	h, follower := followerServer(t, fwd)

	req, _ := http.NewRequest(http.MethodPost, follower.URL+"/v1/jobs?namespace=prod", strings.NewReader(`{"Job":{"ID":"web"}}`))
	req.Header.Set("X-Sched-Token", "secret-1")
	req.Header.Set("Authorization", "Bearer secret-2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || resp.Header.Get(HeaderIndex) != "42" || string(body) != "job \"web\" was modified at index 41\n" {
		t.Fatalf("client saw %d %v %q; want the leader's 409, index 42 and body", resp.StatusCode, resp.Header, body)
	}
	if len(*reqs) != 1 {
		t.Fatalf("leader got %d requests, want 1", len(*reqs))
	}
	got := (*reqs)[0]
	checks := map[string][2]string{
		"path":            {got.URL.Path, "/v1/jobs"},
		"query":           {got.URL.RawQuery, "namespace=prod"},
		"method":          {got.Method, "POST"},
		"token":           {got.Header.Get("X-Sched-Token"), "secret-1"},
		"authorization":   {got.Header.Get("Authorization"), "Bearer secret-2"},
		"hop guard":       {got.Header.Get(HeaderForwardedBy), "follower-1"},
		"body":            {(*bodies)[0], `{"Job":{"ID":"web"}}`},
		"x-forwarded-for": {got.Header.Get("X-Forwarded-For"), "127.0.0.1"},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s at the leader = %q, want %q", name, c[0], c[1])
		}
	}
	if h.writer.Applied != 0 {
		t.Errorf("the follower applied %d commands itself", h.writer.Applied)
	}
}

func TestForwardHopGuardAndNoLeader(t *testing.T) {
	fwd := newFakeForwarder("") // no leader
	_, follower := followerServer(t, fwd)

	// A request that was already forwarded is not forwarded again.
	req, _ := http.NewRequest(http.MethodPut, follower.URL+"/v1/namespace/x", strings.NewReader(`{}`))
	req.Header.Set(HeaderForwardedBy, "server-9")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "forwarded by server server-9") {
		t.Fatalf("hop guard: %d %q", resp.StatusCode, body)
	}
	if len(fwd.asked) != 0 {
		t.Errorf("the guarded request looked for a leader %d times", len(fwd.asked))
	}

	resp, err = http.Post(follower.URL+"/v1/namespace/x", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || strings.TrimSpace(string(body)) != "no cluster leader" {
		t.Fatalf("no leader: %d %q", resp.StatusCode, body)
	}
}

func TestForwardLocalWhenLeaderOrLocalRoute(t *testing.T) {
	fwd := newFakeForwarder("self")
	h, follower := followerServer(t, fwd)
	// The wait for a leader ends with this server elected: it answers.
	resp, err := http.Post(follower.URL+"/v1/namespace/team-a", "application/json", strings.NewReader(`{"Description":"A"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || h.writer.Applied != 1 {
		t.Fatalf("self-leader write: status %d, applied %d", resp.StatusCode, h.writer.Applied)
	}
	// Reads and agent-local writes never look for the leader.
	fwd.asked = nil
	for _, target := range []string{"/v1/namespaces", "/v1/agent/health"} {
		resp, err := http.Get(follower.URL + target)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err = http.Post(follower.URL+"/v1/agent/join?address=10.0.0.9:4648", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(fwd.asked) != 0 || len(fwd.joined) != 1 {
		t.Errorf("local routes asked for the leader %d times; joined %v", len(fwd.asked), fwd.joined)
	}
}

func TestForwardRetriesAnotherLeaderWhenTheFirstIsDown(t *testing.T) {
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	dead.Close() // connection refused from now on
	leader, reqs, bodies := recordingLeader(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"ok":true}`)
	})
	fwd := newFakeForwarder(deadAddr, hostOf(leader))
	_, follower := followerServer(t, fwd)

	resp, err := http.Post(follower.URL+"/v1/jobs", "application/json", strings.NewReader(`{"Job":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != `{"ok":true}` {
		t.Fatalf("after a dead leader: %d %q", resp.StatusCode, body)
	}
	if len(*reqs) != 1 || (*bodies)[0] != `{"Job":{}}` {
		t.Fatalf("the new leader got %d requests, bodies %q", len(*reqs), *bodies)
	}
	if len(fwd.asked) != 2 || fwd.asked[1] != deadAddr {
		t.Errorf("LeaderHTTPAddr calls avoided %q, want the dead leader on the second", fwd.asked)
	}
}

func TestForwardAbandonsALeaderThatLosesLeadership(t *testing.T) {
	arrived := make(chan struct{})
	leader, _, _ := recordingLeader(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done() // a partitioned leader never answers
	})
	fwd := newFakeForwarder(hostOf(leader))
	_, follower := followerServer(t, fwd)
	go func() {
		<-arrived
		fwd.changeLeader("")
	}()
	resp, err := http.Post(follower.URL+"/v1/jobs", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "lost leadership") {
		t.Fatalf("got %d %q, want 503 naming the lost leadership", resp.StatusCode, body)
	}
}

// A leader-change wake-up that names the same leader (one queued before
// the request went out) does not abandon the request.
func TestForwardKeepsARequestWhenTheLeaderIsUnchanged(t *testing.T) {
	arrived, answer := make(chan struct{}), make(chan struct{})
	leader, _, _ := recordingLeader(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-answer
		io.WriteString(w, `{"ok":true}`)
	})
	fwd := newFakeForwarder(hostOf(leader))
	_, follower := followerServer(t, fwd)
	go func() {
		<-arrived
		fwd.changeLeader(hostOf(leader))
		// Answer once the forwarder has looked again and found the same
		// leader: its second LeaderHTTPAddr call.
		defer close(answer)
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			fwd.mu.Lock()
			n := len(fwd.asked)
			fwd.mu.Unlock()
			if n >= 2 {
				return
			}
		}
	}()
	resp, err := http.Post(follower.URL+"/v1/jobs", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != `{"ok":true}` {
		t.Fatalf("got %d %q, want the leader's answer", resp.StatusCode, body)
	}
}

func TestForwardStreamsAndUpgrades(t *testing.T) {
	firstChunk := make(chan struct{})
	leader, _, _ := recordingLeader(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "echo" {
			conn, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
			rw.Flush()
			line, _ := rw.ReadString('\n')
			rw.WriteString("echo: " + line)
			rw.Flush()
			return
		}
		io.WriteString(w, "first\n")
		http.NewResponseController(w).Flush()
		<-firstChunk // the rest only once the client saw the first part
		io.WriteString(w, "second\n")
	})
	_, follower := followerServer(t, newFakeForwarder(hostOf(leader)))

	resp, err := http.Post(follower.URL+"/v1/stream", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first chunk %q, %v: not streamed through", line, err)
	}
	close(firstChunk)
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if string(rest) != "second\n" {
		t.Fatalf("rest %q", rest)
	}

	// A protocol upgrade crosses the proxy both ways.
	conn, err := net.Dial("tcp", hostOf(follower))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "PUT /v1/job/web/action HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\nContent-Length: 0\r\n\r\n")
	cr := bufio.NewReader(conn)
	up, err := http.ReadResponse(cr, nil)
	if err != nil || up.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answer %v, %v", up, err)
	}
	fmt.Fprintf(conn, "hello\n")
	echo, err := cr.ReadString('\n')
	if err != nil || echo != "echo: hello\n" {
		t.Fatalf("echo %q, %v", echo, err)
	}
}

func TestForwardUnderConcurrencyKeepsRequestsApart(t *testing.T) {
	var served atomic.Int64
	leader, _, _ := recordingLeader(t, func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		b := r.URL.Query().Get("n")
		io.WriteString(w, b)
	})
	_, follower := followerServer(t, newFakeForwarder(hostOf(leader)))
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(fmt.Sprintf("%s/v1/jobs?n=%d", follower.URL, i), "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != fmt.Sprint(i) {
				t.Errorf("request %d got the answer %q", i, b)
			}
		}()
	}
	wg.Wait()
	if served.Load() != 32 {
		t.Errorf("leader served %d, want 32", served.Load())
	}
}

// TestForwardReusesTheConnectionToTheLeader: a write through a follower
// costs one extra round trip, the follower's request to the leader, and
// not a connection set up for each: serial writes through the follower
// reach the leader over one kept-alive connection, once each.
func TestForwardReusesTheConnectionToTheLeader(t *testing.T) {
	var served atomic.Int64
	leader := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		io.WriteString(w, `{"Index":7}`)
	}))
	var conns atomic.Int64
	leader.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	leader.Start()
	t.Cleanup(leader.Close)
	_, follower := followerServer(t, newFakeForwarder(hostOf(leader)))
	const writes = 20
	for i := range writes {
		resp, err := http.Post(fmt.Sprintf("%s/v1/jobs?n=%d", follower.URL, i), "application/json", strings.NewReader(`{"Job":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != `{"Index":7}` {
			t.Fatalf("write %d: %d %q, want the leader's answer", i, resp.StatusCode, b)
		}
	}
	if served.Load() != writes {
		t.Errorf("the leader served %d requests for %d writes, want one each", served.Load(), writes)
	}
	if conns.Load() != 1 {
		t.Errorf("the follower opened %d connections to the leader for %d serial writes, want 1 (kept alive)", conns.Load(), writes)
	}
}
