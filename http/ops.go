package http

import (
	"bufio"
	"log/slog"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// MetricsSource is what GET /v1/metrics reports: the agent's registry of
// every metric (raft, scheduler, HTTP, clients, state store, Go runtime).
type MetricsSource = prometheus.Gatherer

// httpMetrics are the metrics this package measures itself.
type httpMetrics struct {
	// requests is request latency by route pattern, method and status
	// class (2xx, 4xx, 5xx).
	requests *prometheus.HistogramVec
	// blocking counts blocking queries waiting right now.
	blocking prometheus.Gauge
	// eventSubscribers counts open event streams.
	eventSubscribers prometheus.Gauge
}

func newHTTPMetrics() *httpMetrics {
	return &httpMetrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "sched", Subsystem: "http", Name: "request_duration_seconds",
			Help:    "HTTP request latency by route pattern, method and status class.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"route", "method", "status"}),
		blocking: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "sched", Subsystem: "http", Name: "blocking_queries_in_flight",
			Help: "Blocking queries (?index=) waiting for a change.",
		}),
		eventSubscribers: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "sched", Subsystem: "http", Name: "event_stream_subscribers",
			Help: "Open /v1/event/stream connections.",
		}),
	}
}

// Collectors returns the metrics the HTTP layer measures, for the agent
// to register with its registry.
func (s *Server) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.metrics.requests, s.metrics.blocking, s.metrics.eventSubscribers}
}

// statusClass is "2xx", "4xx", ... for a status code.
func statusClass(code int) string {
	switch {
	case code < 200:
		return "1xx"
	case code < 300:
		return "2xx"
	case code < 400:
		return "3xx"
	case code < 500:
		return "4xx"
	}
	return "5xx"
}

// opsRoutes registers the operator endpoints of the agent.
func (s *Server) opsRoutes() {
	s.handle(http.MethodGet, "/v1/metrics", s.metricsRead)
	s.handle(http.MethodGet, "/v1/agent/monitor", s.agentMonitor)
}

// metricsRead serves GET /v1/metrics: JSON by default, the Prometheus
// text exposition with format=prometheus.
func (s *Server) metricsRead(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	if s.cfg.Metrics == nil {
		return nil, &CodedError{Code: http.StatusNotImplemented, Message: "metrics are not collected by this agent"}
	}
	format := r.URL.Query().Get("format")
	if format != "" && format != "prometheus" && format != "json" {
		return nil, badRequest("format: %q is not one of json, prometheus", format)
	}
	families, err := s.cfg.Metrics.Gather()
	if err != nil && len(families) == 0 {
		return nil, err
	}
	if format == "prometheus" {
		f := expfmt.NewFormat(expfmt.TypeTextPlain)
		w.Header().Set("Content-Type", string(f))
		enc := expfmt.NewEncoder(w, f)
		for _, mf := range families {
			if err := enc.Encode(mf); err != nil {
				s.log.Debug("encode metrics", "error", err)
				break
			}
		}
		return alreadyWritten{}, nil
	}
	return metricsJSON(families, s.cfg.Now()), nil
}

// MetricsSummary is the JSON form of GET /v1/metrics: every gauge,
// counter and distribution (histograms and summaries) of the agent, each
// with its labels.
type MetricsSummary struct {
	Timestamp string
	Gauges    []MetricValue
	Counters  []MetricValue
	Samples   []MetricSample
}

// MetricValue is one gauge or counter.
type MetricValue struct {
	Name   string
	Value  float64
	Labels map[string]string
}

// MetricSample is one distribution: how many observations, their sum,
// and the mean (0 without observations).
type MetricSample struct {
	Name   string
	Count  uint64
	Sum    float64
	Mean   float64
	Labels map[string]string
}

func metricsJSON(families []*dto.MetricFamily, now time.Time) *MetricsSummary {
	out := &MetricsSummary{Timestamp: now.UTC().Format(time.RFC3339), Gauges: []MetricValue{}, Counters: []MetricValue{}, Samples: []MetricSample{}}
	finite := func(v float64) float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0
		}
		return v
	}
	for _, mf := range families {
		name := mf.GetName()
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out.Counters = append(out.Counters, MetricValue{Name: name, Value: finite(m.GetCounter().GetValue()), Labels: labels})
			case dto.MetricType_GAUGE:
				out.Gauges = append(out.Gauges, MetricValue{Name: name, Value: finite(m.GetGauge().GetValue()), Labels: labels})
			case dto.MetricType_UNTYPED:
				out.Gauges = append(out.Gauges, MetricValue{Name: name, Value: finite(m.GetUntyped().GetValue()), Labels: labels})
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out.Samples = append(out.Samples, sample(name, h.GetSampleCount(), finite(h.GetSampleSum()), labels))
			case dto.MetricType_SUMMARY:
				sm := m.GetSummary()
				out.Samples = append(out.Samples, sample(name, sm.GetSampleCount(), finite(sm.GetSampleSum()), labels))
			}
		}
	}
	return out
}

func sample(name string, count uint64, sum float64, labels map[string]string) MetricSample {
	s := MetricSample{Name: name, Count: count, Sum: sum, Labels: labels}
	if count > 0 {
		s.Mean = sum / float64(count)
	}
	return s
}

// monitorLevels are the log_level values of /v1/agent/monitor.
var monitorLevels = map[string]slog.Level{
	"trace": slog.LevelDebug - 4, "debug": slog.LevelDebug, "info": slog.LevelInfo,
	"warn": slog.LevelWarn, "error": slog.LevelError,
}

// agentMonitor serves GET /v1/agent/monitor: this agent's log lines from
// now on, at log_level (default info) or above, as text or (log_json=true)
// JSON objects, one per line, until the caller goes away.
func (s *Server) agentMonitor(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	if s.cfg.Monitor == nil {
		return nil, &CodedError{Code: http.StatusNotImplemented, Message: "this agent does not stream its logs"}
	}
	q := r.URL.Query()
	name := strings.ToLower(q.Get("log_level"))
	if name == "" {
		name = "info"
	}
	level, ok := monitorLevels[name]
	if !ok {
		names := make([]string, 0, len(monitorLevels))
		for n := range monitorLevels {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, badRequest("log_level: %q is not one of %s", name, strings.Join(names, ", "))
	}
	asJSON, err := boolParam(r, "log_json")
	if err != nil {
		return nil, err
	}
	lines, cancel := s.cfg.Monitor.Subscribe(level, asJSON)
	defer cancel()
	if asJSON {
		w.Header().Set("Content-Type", "application/x-ndjson")
	} else {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	bw := bufio.NewWriter(w)
	if rc.Flush() != nil {
		return alreadyWritten{}, nil
	}
	for {
		select {
		case <-r.Context().Done():
			return alreadyWritten{}, nil
		case line := <-lines:
			bw.Write(line)
			// Write what else is waiting before flushing once.
			for more := true; more; {
				select {
				case l := <-lines:
					bw.Write(l)
				default:
					more = false
				}
			}
			if bw.Flush() != nil || rc.Flush() != nil {
				return alreadyWritten{}, nil
			}
		}
	}
}
