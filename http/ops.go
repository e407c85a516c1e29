package http

import (
	"bufio"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/schedhq/sched/state"
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
	// blockingEarly counts blocking queries answered at once because
	// limits.max_blocking_queries were already waiting (answers.go).
	blockingEarly prometheus.CounterFunc
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
	return []prometheus.Collector{s.metrics.requests, s.metrics.blocking, s.metrics.blockingEarly, s.metrics.eventSubscribers}
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
	return writeMetrics(w, r, s.cfg.Metrics, s.cfg.Now(), s.log)
}

// writeMetrics answers GET /v1/metrics from g (nil: a 501): JSON, or the
// Prometheus text exposition with format=prometheus.
func writeMetrics(w http.ResponseWriter, r *http.Request, g MetricsSource, now time.Time, log *slog.Logger) (any, error) {
	if g == nil {
		return nil, &CodedError{Code: http.StatusNotImplemented, Message: "metrics are not collected by this agent"}
	}
	format := r.URL.Query().Get("format")
	if format != "" && format != "prometheus" && format != "json" {
		return nil, badRequest("format: %q is not one of json, prometheus", format)
	}
	families, err := g.Gather()
	if err != nil && len(families) == 0 {
		return nil, err
	}
	if format == "prometheus" {
		f := expfmt.NewFormat(expfmt.TypeTextPlain)
		w.Header().Set("Content-Type", string(f))
		enc := expfmt.NewEncoder(w, f)
		for _, mf := range families {
			if err := enc.Encode(mf); err != nil {
				log.Debug("encode metrics", "error", err)
				break
			}
		}
		return alreadyWritten{}, nil
	}
	return metricsJSON(families, now), nil
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

// maxMonitorIDLen bounds node_id and server_id of /v1/agent/monitor.
const maxMonitorIDLen = 128

// monitorRequest is what GET /v1/agent/monitor asks for.
type monitorRequest struct {
	level            slog.Level
	asJSON           bool
	nodeID, serverID string // the agent to follow; both empty: this one
}

// parseMonitorRequest reads log_level (default info), log_json, node_id
// and server_id (at most one of the two).
func parseMonitorRequest(r *http.Request) (monitorRequest, error) {
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
		return monitorRequest{}, badRequest("log_level: %q is not one of %s", name, strings.Join(names, ", "))
	}
	asJSON, err := boolParam(r, "log_json")
	if err != nil {
		return monitorRequest{}, err
	}
	mr := monitorRequest{level: level, asJSON: asJSON, nodeID: q.Get("node_id"), serverID: q.Get("server_id")}
	switch {
	case mr.nodeID != "" && mr.serverID != "":
		return monitorRequest{}, badRequest("node_id and server_id: give one agent to follow, not both")
	case len(mr.nodeID) > maxMonitorIDLen:
		return monitorRequest{}, badRequest("node_id: over %d bytes", maxMonitorIDLen)
	case len(mr.serverID) > maxMonitorIDLen:
		return monitorRequest{}, badRequest("server_id: over %d bytes", maxMonitorIDLen)
	}
	return mr, nil
}

// agentMonitor serves GET /v1/agent/monitor: this agent's log lines from
// now on, at log_level (default info) or above, as text or (log_json=true)
// JSON objects, one per line, until the caller goes away. node_id names a
// client node whose agent's lines to follow instead: the request goes to
// that agent signed (client_sign.go), the caller's token having been
// checked here.
func (s *Server) agentMonitor(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	mr, err := parseMonitorRequest(r)
	if err != nil {
		return nil, err
	}
	if mr.serverID != "" {
		if proxied, err := s.monitorServer(w, r, mr.serverID); proxied || err != nil {
			return alreadyWrittenOr(err)
		}
	}
	if mr.nodeID != "" && (s.cfg.Client == nil || s.cfg.Client.NodeID() != mr.nodeID) {
		nt, err := s.monitorNode(r, mr.nodeID)
		if err != nil {
			return nil, err
		}
		proxyToNode(w, r, nt, s.log.Warn)
		return alreadyWritten{}, nil
	}
	return streamMonitor(w, r, s.cfg.Monitor, mr)
}

// monitorNode finds the agent of the node a monitor follows.
func (s *Server) monitorNode(r *http.Request, nodeID string) (nodeTarget, error) {
	if r.Header.Get(HeaderClientProxied) != "" {
		// Already proxied once: never again (a node whose address points
		// back at a server must not loop).
		return nodeTarget{}, state.NotFoundf("node %q is not this agent's client", nodeID)
	}
	node, err := s.store.NodeByID(nil, nodeID)
	if err != nil {
		return nodeTarget{}, err
	}
	if node == nil {
		return nodeTarget{}, state.NotFoundf("node %q", nodeID)
	}
	return s.nodeTargetOf(node)
}

// streamMonitor streams m's lines at mr's level, in mr's format, until the
// caller goes away.
func streamMonitor(w http.ResponseWriter, r *http.Request, m LogMonitor, mr monitorRequest) (any, error) {
	if m == nil {
		return nil, &CodedError{Code: http.StatusNotImplemented, Message: "this agent does not stream its logs"}
	}
	lines, cancel := m.Subscribe(mr.level, mr.asJSON)
	defer cancel()
	if mr.asJSON {
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

// monitorServer proxies a monitor to the server named serverID (its
// member name, with or without the region, or its Raft ID) and reports
// true, or reports false when that server is this one. The target checks
// the caller's token again: the token header travels with the request.
func (s *Server) monitorServer(w http.ResponseWriter, r *http.Request, serverID string) (bool, error) {
	fwd := s.cfg.Forwarder
	if fwd == nil {
		return false, nil // a single server without a cluster: this one
	}
	var target *state.AgentMember
	for _, m := range fwd.Members().Members {
		name, _, _ := strings.Cut(m.Name, ".")
		if m.Name == serverID || name == serverID || m.Tags["id"] == serverID {
			target = m
			break
		}
	}
	switch {
	case target == nil:
		return false, state.NotFoundf("server %q (not a member this server knows)", serverID)
	case target.Tags["id"] == fwd.LocalID():
		return false, nil
	case r.Header.Get(HeaderForwardedBy) != "":
		return false, state.NotFoundf("server %q is not this server", serverID)
	case target.Tags["http_addr"] == "":
		return false, &CodedError{Code: http.StatusBadGateway, Message: fmt.Sprintf("server %s has no HTTP address", target.Name)}
	}
	scheme := "http"
	if s.cfg.ForwardTLS != nil {
		scheme = "https"
	}
	u := &url.URL{Scheme: scheme, Host: target.Tags["http_addr"]}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
			pr.Out.Header.Set(HeaderForwardedBy, fwd.LocalID())
		},
		Transport: &http.Transport{
			Proxy:             nil,
			DialContext:       (&net.Dialer{Timeout: forwardDialTimeout}).DialContext,
			TLSClientConfig:   s.cfg.ForwardTLS,
			DisableKeepAlives: true,
		},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			if r.Context().Err() != nil {
				return
			}
			writeError(w, &CodedError{Code: http.StatusBadGateway,
				Message: fmt.Sprintf("cannot reach server %s at %s: %v", target.Name, u.Host, err), Err: err})
		},
	}
	rp.ServeHTTP(w, r)
	return true, nil
}
