package jobs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	schedhttp "github.com/schedhq/sched/http"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// streamReader reads NDJSON lines of an event stream in a goroutine.
type streamReader struct {
	lines  chan string
	cancel context.CancelFunc
	status int
}

// openStream opens GET target on ts with token (may be empty).
func openStream(t *testing.T, ts *httptest.Server, token, target string) *streamReader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+target, nil)
	if token != "" {
		req.Header.Set(schedhttp.HeaderToken, token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	sr := &streamReader{lines: make(chan string, 100), cancel: cancel, status: resp.StatusCode}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	go func() {
		defer close(sr.lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			sr.lines <- sc.Text()
		}
	}()
	return sr
}

// next returns the next event line (skipping heartbeats unless want them).
func (sr *streamReader) next(t *testing.T, heartbeats bool) eventLine {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-sr.lines:
			if !ok {
				t.Fatal("stream ended")
			}
			if l == "{}" && !heartbeats {
				continue
			}
			var line eventLine
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			return line
		case <-timeout:
			t.Fatal("no event line within 10s")
		}
	}
}

func eventKeys(line eventLine) []string {
	var out []string
	for _, e := range line.Events {
		out = append(out, e.Topic+":"+e.Key+":"+e.Type)
	}
	return out
}

func TestEventStreamOrderTopicsAndResume(t *testing.T) {
	h := newHarness(t)
	h.api.eventHeartbeat = 20 * time.Millisecond
	ts := httptest.NewServer(h.srv.Handler())
	t.Cleanup(ts.Close) // after the streams' cleanups: they close first

	all := openStream(t, ts, "", "/v1/event/stream")
	web := openStream(t, ts, "", "/v1/event/stream?topic=Job:web")
	if hb := web.next(t, true); hb.Index != 0 || len(hb.Events) != 0 {
		t.Fatalf("first line of an idle stream = %+v, want the heartbeat {}", hb)
	}

	h.register(apitest.TestJob("api"))
	first := h.register(apitest.TestJob("web")).Index
	h.Apply(store.NodeRegisterRequestType, &store.NodeRegisterRequest{Node: apitest.TestNode(1)})

	// The Job:web subscription sees only the web job's registration.
	got := web.next(t, false)
	if got.Index != first || len(got.Events) != 1 || got.Events[0].Key != "web" || got.Events[0].Type != "JobRegistered" {
		t.Fatalf("Job:web stream = %+v, want only web's registration at %d", eventKeys(got), first)
	}
	if p, ok := got.Events[0].Payload["Job"].(map[string]any); !ok || p["ID"] != "web" {
		t.Errorf("payload = %v, want the job under Job", got.Events[0].Payload)
	}

	// The unfiltered stream sees every entry in index order: api (job and
	// eval), web, then the node.
	var indexes []uint64
	var keys []string
	for len(indexes) < 3 {
		l := all.next(t, false)
		indexes = append(indexes, l.Index)
		keys = append(keys, eventKeys(l)...)
	}
	if !(indexes[0] < indexes[1] && indexes[1] < indexes[2]) || indexes[1] != first {
		t.Errorf("indexes %v, want increasing with web at %d", indexes, first)
	}
	joined := strings.Join(keys, " ")
	for _, want := range []string{"Job:api:JobRegistered", "Evaluation:", "Node:" + apitest.NodeID(1) + ":NodeRegistration"} {
		if !strings.Contains(joined, want) {
			t.Errorf("events %q lack %q", joined, want)
		}
	}

	// Resuming from the web registration's index replays it and what
	// followed, not what came before.
	resumed := openStream(t, ts, "", "/v1/event/stream?index="+strconv.FormatUint(first, 10))
	r1, r2 := resumed.next(t, false), resumed.next(t, false)
	if r1.Index != first || r2.Index <= first || eventKeys(r2)[0] != "Node:"+apitest.NodeID(1)+":NodeRegistration" {
		t.Errorf("resumed at %d: %v then %v", first, eventKeys(r1), eventKeys(r2))
	}

	// Allocation:* sees allocation events only.
	allocs := openStream(t, ts, "", "/v1/event/stream?topic=Allocation:*")
	h.PlaceAlloc(0, h.Job(state.DefaultNamespace, "web"), apitest.NodeID(1), state.AllocClientStatusPending)
	a := allocs.next(t, false)
	if len(a.Events) == 0 || a.Events[0].Topic != state.TopicAllocation || a.Events[0].FilterKeys[0] != "web" {
		t.Errorf("Allocation:* = %+v", a)
	}
}

func TestEventStreamBadInput(t *testing.T) {
	h := newHarness(t)
	h.Fail(http.MethodGet, "/v1/event/stream?topic=Jobs:web", nil, 400, "topic", `"Jobs"`)
	h.Fail(http.MethodGet, "/v1/event/stream?index=x", nil, 400, "index")
	h.Fail(http.MethodGet, "/v1/event/stream?topic=Job:"+strings.Repeat("k", maxEventKeyLen+1), nil, 400, "over")
	h.Fail(http.MethodGet, "/v1/event/stream?"+strings.Repeat("topic=Job&", maxEventTopics+1), nil, 400, "at most")
}

func TestEventStreamACLFiltering(t *testing.T) {
	a := newACLHarness(t, true, "")
	a.api.eventHeartbeat = 20 * time.Millisecond
	mgmt := a.ManagementToken()
	a.OKAs(mgmt, http.MethodPut, "/v1/namespace/prod", map[string]string{}, nil)
	devOnly := a.ClientToken(`namespace "default" { policy = "read" }`)
	nodeOnly := a.ClientToken(`node { policy = "read" }`)
	ts := httptest.NewServer(a.srv.Handler())
	t.Cleanup(ts.Close)

	// Anonymous callers and tokens without the capability are refused.
	a.DeniedAs("", http.MethodGet, "/v1/event/stream", nil)
	a.DeniedAs(devOnly, http.MethodGet, "/v1/event/stream?topic=Node", nil)
	a.DeniedAs(nodeOnly, http.MethodGet, "/v1/event/stream?topic=Job", nil)
	a.DeniedAs(devOnly, http.MethodGet, "/v1/event/stream?namespace=prod&topic=Job", nil)
	a.FailAs("not-a-token", http.MethodGet, "/v1/event/stream", nil, http.StatusForbidden, "ACL token not found")

	// A token reading default but not prod sees default's jobs only, even
	// with namespace=*; the node reader sees nodes only.
	dev := openStream(t, ts, devOnly, "/v1/event/stream?namespace=*")
	nodes := openStream(t, ts, nodeOnly, "/v1/event/stream?topic=Node")
	if dev.status != 200 || nodes.status != 200 {
		t.Fatalf("statuses %d %d", dev.status, nodes.status)
	}
	prodJob := apitest.TestJob("secret")
	prodJob.Namespace = "prod"
	a.OKAs(mgmt, http.MethodPost, "/v1/jobs", map[string]any{"Job": prodJob}, nil)
	a.OKAs(mgmt, http.MethodPost, "/v1/jobs", map[string]any{"Job": apitest.TestJob("open")}, nil)
	n := apitest.TestNode(1)
	a.OKAs(mgmt, http.MethodPut, "/v1/node/register", map[string]any{"Node": n}, nil)

	got := dev.next(t, false)
	for _, e := range got.Events {
		if e.Namespace != state.DefaultNamespace || e.Topic == state.TopicNode {
			t.Errorf("default reader saw %s %s in %q", e.Topic, e.Key, e.Namespace)
		}
	}
	if !strings.Contains(strings.Join(eventKeys(got), " "), "Job:open:JobRegistered") {
		t.Errorf("default reader's first line = %v, want the open job", eventKeys(got))
	}
	nl := nodes.next(t, false)
	if len(nl.Events) != 1 || nl.Events[0].Topic != state.TopicNode {
		t.Errorf("node reader = %v, want the node only", eventKeys(nl))
	}
	if p := nl.Events[0].Payload["Node"].(map[string]any); p["SecretID"] != nil || p["SecretHash"] != nil {
		t.Errorf("node payload carries a secret: %v", p)
	}
}

// A caller that hangs up is no server fault: a read whose consistency
// barrier ends with the caller's context is logged at DEBUG, never at
// ERROR (it used to be "request failed ... context canceled"), and a
// barrier that fails for a live caller still is an ERROR.
func TestCallerGoneIsNotAnError(t *testing.T) {
	var logs testutil.SyncBuffer
	h := newHarnessWith(t, store.Config{}, func(c *testConfig) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	h.cluster.FailBarrier(context.Canceled)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest(http.MethodGet, "/v1/jobs", nil).WithContext(ctx)
	h.srv.Handler().ServeHTTP(httptest.NewRecorder(), req)
	if out := logs.String(); strings.Contains(out, "level=ERROR") || !strings.Contains(out, "client went away") {
		t.Errorf("caller gone, logs:\n%s", out)
	}

	h.cluster.FailBarrier(errors.New("raft is broken"))
	h.srv.Handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/v1/jobs", nil))
	if !strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a real fault was not logged at ERROR:\n%s", logs.String())
	}
}

// TestEventEncodingMatchesWireStruct checks the hand-built envelope of an
// event against encoding/json's encoding of the wire struct, byte for
// byte, with keys that need escaping, and that an event is encoded only
// when asked for, then served from the cache.
func TestEventEncodingMatchesWireStruct(t *testing.T) {
	h := newHarness(t)
	h.register(apitest.TestJob("web"))
	job := h.Job("default", "web")
	odd := "a\"b\\c\n\r\t\x01<>&\u2028\u2029\xffé"
	events := []state.Event{
		{Topic: state.TopicJob, Type: "JobRegistered", Key: "web", Namespace: "default", Index: 7, Object: job},
		{Topic: state.TopicEvaluation, Type: "EvaluationUpdated", Key: odd, Namespace: odd, FilterKeys: []string{odd, "j"}, Index: 1 << 40,
			Object: &state.Evaluation{ID: odd, JobID: "web"}},
		{Topic: state.TopicNode, Type: "NodeRegistration", Key: "n1", Object: &state.Node{ID: "n1", Name: odd}},
	}
	var c eventCache
	b := state.EventBatch{Index: 7, Events: events}
	for i := range events {
		want, err := json.Marshal(wireEvent(&events[i]))
		if err != nil {
			t.Fatal(err)
		}
		got := c.encode(b, i)
		if string(got) != string(want) {
			t.Fatalf("event %d:\n got %s\nwant %s", i, got, want)
		}
		if i == 0 && c.byIndex[7][1] != nil {
			t.Fatal("event 1 encoded before anyone asked for it")
		}
		if again := c.encode(b, i); &again[0] != &got[0] {
			t.Fatalf("event %d encoded twice", i)
		}
	}
}

// TestEventCacheBounded checks that the cache keeps the encodings of at
// most eventCacheSize entries, evicting the oldest.
func TestEventCacheBounded(t *testing.T) {
	var c eventCache
	ev := []state.Event{{Topic: state.TopicNode, Type: "NodeUpdated", Key: "n", Object: &state.Node{ID: "n"}}}
	for i := 1; i <= eventCacheSize+10; i++ {
		c.encode(state.EventBatch{Index: uint64(i), Events: ev}, 0)
	}
	if len(c.byIndex) != eventCacheSize || len(c.order) != eventCacheSize {
		t.Fatalf("cache holds %d entries (%d in order), want %d", len(c.byIndex), len(c.order), eventCacheSize)
	}
	if _, ok := c.byIndex[10]; ok {
		t.Fatal("entry 10 kept: the oldest are not evicted")
	}
	if _, ok := c.byIndex[eventCacheSize+10]; !ok {
		t.Fatal("newest entry not kept")
	}
}
