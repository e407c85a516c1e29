// Package agentops serves what every agent, server or client, answers
// about itself to an operator: GET /v1/metrics (its metrics registry, as
// JSON or the Prometheus text exposition) and GET /v1/agent/monitor (its
// own log lines as they are written). The server core and the client
// agent's surface (http/clientapi) both mount them.
package agentops

import (
	"log/slog"
	"math"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/schedhq/sched/http/codec"
)

// MetricsSource is what GET /v1/metrics reports: the agent's registry of
// every metric (raft, scheduler, HTTP, clients, state store, Go runtime).
type MetricsSource = prometheus.Gatherer

// WriteMetrics answers GET /v1/metrics from g (nil: a 501): JSON, or the
// Prometheus text exposition with format=prometheus.
func WriteMetrics(w http.ResponseWriter, r *http.Request, g MetricsSource, now time.Time, log *slog.Logger) (any, error) {
	if g == nil {
		return nil, &codec.CodedError{Code: http.StatusNotImplemented, Message: "metrics are not collected by this agent"}
	}
	format := r.URL.Query().Get("format")
	if format != "" && format != "prometheus" && format != "json" {
		return nil, codec.BadRequest("format: %q is not one of json, prometheus", format)
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
		return codec.AlreadyWritten{}, nil
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
