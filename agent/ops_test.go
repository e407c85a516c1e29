package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/schedhq/sched/internal/testutil"
)

// The Prometheus exposition of /v1/metrics parses with the upstream
// parser and carries each area's metrics, raft's through the go-metrics
// bridge; the JSON form lists the same names.
func TestMetricsPrometheusAndJSON(t *testing.T) {
	a := startSchedulerAgent(t)
	c := apiClient(t, a.HTTPAddr())
	if _, _, err := c.Jobs().Register(context.Background(), mockJob("web", 1), nil, nil); err != nil {
		t.Fatal(err)
	}
	// A blocking query in flight shows up while it waits.
	go http.Get(a.HTTPURL() + "/v1/jobs?index=1000000&wait=5s")

	var families map[string]*dto.MetricFamily
	testutil.WaitFor(t, 10*time.Second, "the scheduler's and raft's metrics", func() bool {
		resp, err := http.Get(a.HTTPURL() + "/v1/metrics?format=prometheus")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
			t.Fatalf("Content-Type %q", ct)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		families, err = p.TextToMetricFamilies(resp.Body)
		if err != nil {
			t.Fatalf("upstream parser: %v", err)
		}
		_, invoked := families["sched_worker_invoke_seconds"]
		_, inflight := families["sched_http_blocking_queries_in_flight"]
		return invoked && inflight && families["sched_http_blocking_queries_in_flight"].GetMetric()[0].GetGauge().GetValue() >= 1
	})
	for _, name := range []string{
		"sched_raft_commitTime", "sched_raft_fsm_applyBatch", "sched_raft_apply", "sched_raft_index", "sched_raft_is_leader",
		"sched_broker_ready", "sched_plan_evaluate_seconds", "sched_plan_apply_seconds", "sched_plan_queue_depth",
		"sched_plan_nodes_rejected_total", "sched_plan_placements_refused_total", "sched_worker_nacks_total", "sched_worker_acks_total", "sched_worker_gave_way_total", "sched_http_request_duration_seconds",
		"sched_state_table_objects", "sched_client_heartbeats_missed_total", "go_goroutines",
	} {
		if _, ok := families[name]; !ok {
			t.Errorf("metric %s missing", name)
		}
	}
	// Acks by kind of worker: a series for each.
	kinds := map[string]bool{}
	for _, m := range families["sched_worker_acks_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "workers" {
				kinds[l.GetValue()] = true
			}
		}
	}
	if !kinds["general"] || !kinds["small"] || len(kinds) != 2 {
		t.Errorf("sched_worker_acks_total by workers = %v, want general and small", kinds)
	}
	// The register's latency is recorded under its route pattern and 2xx.
	found := false
	for _, m := range families["sched_http_request_duration_seconds"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["route"] == "/v1/jobs" && labels["method"] == "PUT" && labels["status"] == "2xx" && m.GetHistogram().GetSampleCount() > 0 {
			found = true
		}
	}
	if !found {
		t.Error("no 2xx sample for PUT /v1/jobs")
	}

	resp, err := http.Get(a.HTTPURL() + "/v1/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var summary struct {
		Gauges   []struct{ Name string }
		Counters []struct{ Name string }
		Samples  []struct {
			Name  string
			Count uint64
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&summary); err != nil {
		t.Fatal(err)
	}
	if len(summary.Gauges) == 0 || len(summary.Counters) == 0 || len(summary.Samples) == 0 {
		t.Errorf("JSON metrics: %d gauges, %d counters, %d samples", len(summary.Gauges), len(summary.Counters), len(summary.Samples))
	}
	bad, err := http.Get(a.HTTPURL() + "/v1/metrics?format=xml")
	if err != nil {
		t.Fatal(err)
	}
	bad.Body.Close()
	if bad.StatusCode != http.StatusBadRequest {
		t.Errorf("format=xml: %d, want 400", bad.StatusCode)
	}
}

// One format end to end: with log_format = "json" every line the agent
// writes, raft's and gossip's included, is one JSON object, and
// /v1/agent/monitor streams the agent's lines in the format asked for.
func TestJSONLogFormatEndToEnd(t *testing.T) {
	var out testutil.SyncBuffer
	ports := freePorts(t, 3)
	cfg := &Config{Name: "logs", DataDir: t.TempDir(), BindAddr: "127.0.0.1", LogLevel: "debug", LogFormat: "json",
		Ports: Ports{HTTP: ports[0], Raft: ports[1], Gossip: ports[2]}, Server: ServerConfig{Enabled: true, BootstrapExpect: 1}}
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, NewLogger(&out, cfg.LogFormat, cfg.LogLevel))
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	t.Cleanup(func() { a.Shutdown() })
	if err := a.WaitForLeader(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.HTTPURL()+"/v1/agent/monitor?log_level=info&log_json=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// Nothing else logs on cue: log until the monitor has seen the probe.
	// Other lines may come first (the leader's own, just after its
	// election); every line must be JSON.
	testutil.WaitFor(t, 10*time.Second, "the probe, monitored", func() bool {
		a.log.Info("monitor probe", "n", 1)
		for {
			select {
			case got := <-lines:
				var obj map[string]any
				if err := json.Unmarshal([]byte(got), &obj); err != nil {
					t.Fatalf("monitor line %q is not JSON: %v", got, err)
				}
				if obj["msg"] == "monitor probe" {
					return true
				}
			default:
				return false
			}
		}
	})
	// The caller hanging up is no error.
	cancel()
	resp.Body.Close()

	// hashicorp/raft's own lines (module=raft.hraft) pass the warn floor
	// only on trouble; ours under module=raft come at start-up.
	var sawRaft bool
	testutil.WaitFor(t, 5*time.Second, "the agent's log to settle", func() bool {
		return bytes.Contains([]byte(out.String()), []byte(`"module":"raft"`))
	})
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		line := sc.Text()
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("log line is not JSON: %q", line)
			continue
		}
		if m["level"] == "ERROR" && strings.Contains(line, "context canceled") {
			t.Errorf("ERROR for a client that went away: %q", line)
		}
		if strings.HasPrefix(stringOf(m["module"]), "raft") {
			sawRaft = true
		}
	}
	if !sawRaft {
		t.Errorf("no raft line in %q", out.String())
	}
}

func stringOf(v any) string { s, _ := v.(string); return s }

// A New that fails (here: its HTTP port is taken) cleans up and returns
// the error; it used to panic in the deferred Shutdown.
func TestNewFailsCleanlyWhenPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ports := freePorts(t, 2)
	cfg := &Config{Name: "taken", DataDir: t.TempDir(), BindAddr: "127.0.0.1", LogLevel: "warn",
		Ports: Ports{HTTP: l.Addr().(*net.TCPAddr).Port, Raft: ports[0], Gossip: ports[1]}, Server: ServerConfig{Enabled: true, BootstrapExpect: 1}}
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, NewLogger(io.Discard, "text", "warn"))
	if err == nil || a != nil {
		t.Fatalf("New on a taken port = %v, %v; want an error", a, err)
	}
}

// Every server produces the events of the entries it applies: a
// subscriber on each follower and on the leader sees the same job
// registration, at the same index, whichever server took the write.
func TestClusterEveryServerStreamsEvents(t *testing.T) {
	servers := newTestCluster(t, 3)
	leader := leaderOf(t, servers, 10*time.Second)
	type line struct {
		Index  uint64
		Events []struct{ Topic, Type, Key string }
	}
	got := make([]chan line, len(servers))
	for i, s := range servers {
		got[i] = make(chan line, 16)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url("/v1/event/stream?topic=Job:web"), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		go func(ch chan line) {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				var l line
				if json.Unmarshal(sc.Bytes(), &l) == nil && l.Index > 0 {
					ch <- l
				}
			}
		}(got[i])
	}
	follower := followerOf(leader, servers)
	follower.mustJSON("PUT", "/v1/jobs", map[string]any{"Job": mockJob("web", 1)}, nil)
	var want uint64
	for i, ch := range got {
		select {
		case l := <-ch:
			if len(l.Events) != 1 || l.Events[0].Key != "web" || l.Events[0].Type != "JobRegistered" {
				t.Errorf("%s: %+v", servers[i].cfg.Name, l)
			}
			if want == 0 {
				want = l.Index
			} else if l.Index != want {
				t.Errorf("%s saw index %d, another server %d", servers[i].cfg.Name, l.Index, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s streamed nothing", servers[i].cfg.Name)
		}
	}
}
