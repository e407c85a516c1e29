package http

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedhq/sched/http/agentops"
	"github.com/schedhq/sched/http/clientapi"
	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

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
	s.handle(http.MethodGet, "/v1/agent/monitor", relay{s}.agentMonitor)
}

// metricsRead serves GET /v1/metrics: JSON by default, the Prometheus
// text exposition with format=prometheus.
func (s *Server) metricsRead(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	return agentops.WriteMetrics(w, r, s.cfg.Metrics, s.cfg.Now(), s.log)
}

// agentMonitor serves GET /v1/agent/monitor: this agent's log lines from
// now on, at log_level (default info) or above, as text or (log_json=true)
// JSON objects, one per line, until the caller goes away. node_id names a
// client node whose agent's lines to follow instead: the request goes to
// that agent signed (clientapi.Sign), the caller's token having been
// checked here.
func (s relay) agentMonitor(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	mr, err := agentops.ParseMonitorRequest(r)
	if err != nil {
		return nil, err
	}
	if mr.ServerID != "" {
		if proxied, err := s.monitorServer(w, r, mr.ServerID); proxied || err != nil {
			return alreadyWrittenOr(err)
		}
	}
	if mr.NodeID != "" && (s.cfg.Client == nil || s.cfg.Client.NodeID() != mr.NodeID) {
		nt, err := s.monitorNode(r, mr.NodeID)
		if err != nil {
			return nil, err
		}
		proxyToNode(w, r, nt, s.log.Warn)
		return codec.AlreadyWritten{}, nil
	}
	return agentops.StreamMonitor(w, r, s.cfg.Monitor, mr)
}

// monitorNode finds the agent of the node a monitor follows.
func (s relay) monitorNode(r *http.Request, nodeID string) (nodeTarget, error) {
	if r.Header.Get(clientapi.HeaderProxied) != "" {
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

// monitorServer proxies a monitor to the server named serverID (its
// member name, with or without the region, or its Raft ID) and reports
// true, or reports false when that server is this one. The target checks
// the caller's token again: the token header travels with the request.
func (s relay) monitorServer(w http.ResponseWriter, r *http.Request, serverID string) (bool, error) {
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
			codec.WriteError(w, &CodedError{Code: http.StatusBadGateway,
				Message: fmt.Sprintf("cannot reach server %s at %s: %v", target.Name, u.Host, err), Err: err})
		},
	}
	rp.ServeHTTP(w, r)
	return true, nil
}
