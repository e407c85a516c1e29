package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/schedhq/sched/internal/testutil"
)

// metricName finds the metric names in a PromQL expression: ours, and the
// Go and process collectors'.
var metricName = regexp.MustCompile(`\b(?:sched|go|process)_[A-Za-z0-9_]+\b`)

// dashboardExprs returns every PromQL expression (a target's "expr") of
// the Grafana dashboard at path, nested panels included.
func dashboardExprs(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(src, &doc); err != nil {
		t.Fatalf("%s is not JSON: %v", path, err)
	}
	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if e, ok := x["expr"].(string); ok {
				exprs = append(exprs, e)
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(doc)
	return exprs
}

// Every metric the Grafana dashboards in deploy/grafana query is one a
// working agent exports: a dev agent runs a job (so the scheduler, the
// plan applier, the client and the HTTP routes have all reported), then
// its registry is compared with the dashboards' expressions.
func TestGrafanaDashboardsQueryExportedMetrics(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "deploy", "grafana", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in deploy/grafana (%v)", err)
	}
	queried := map[string][]string{} // metric -> dashboards
	for _, f := range files {
		exprs := dashboardExprs(t, f)
		if len(exprs) < 10 {
			t.Errorf("%s: %d queries; a dashboard of the cluster has more", f, len(exprs))
		}
		for _, e := range exprs {
			names := metricName.FindAllString(e, -1)
			if len(names) == 0 {
				t.Errorf("%s: query %q names no metric", f, e)
			}
			for _, n := range names {
				queried[n] = append(queried[n], filepath.Base(f))
			}
		}
	}

	a := startDevAgent(t)
	c := apiClient(t, a.HTTPAddr())
	if _, _, err := c.Jobs().Register(context.Background(), mockJob("web", 2), nil, nil); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, c, "web", 2)

	exported := map[string]bool{}
	testutil.WaitFor(t, 30*time.Second, "the client's running allocations in the metrics", func() bool {
		fams, err := a.metrics.Gather()
		if err != nil {
			t.Fatal(err)
		}
		clear(exported)
		for _, f := range fams {
			name := f.GetName()
			exported[name] = true
			if f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY {
				exported[name+"_sum"], exported[name+"_count"] = true, true
			}
			if f.GetType() == dto.MetricType_HISTOGRAM {
				exported[name+"_bucket"] = true
			}
		}
		return exported["sched_client_allocs_running"]
	})
	var missing []string
	for n, dashboards := range queried {
		if !exported[n] {
			missing = append(missing, n+" ("+strings.Join(slices.Compact(dashboards), ", ")+")")
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("dashboards query metrics the agent does not export:\n%s", strings.Join(missing, "\n"))
	}
	for _, want := range []string{"sched_raft_is_leader", "sched_http_request_duration_seconds_bucket", "sched_broker_ready", "sched_client_allocs_running"} {
		if _, ok := queried[want]; !ok {
			t.Errorf("no dashboard queries %s", want)
		}
	}
}
