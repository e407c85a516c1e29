package agent

import (
	"strconv"
	"sync"
	"time"

	gometrics "github.com/armon/go-metrics"
	gmprom "github.com/armon/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/schedhq/sched/scheduler/leader"
	"github.com/schedhq/sched/state"
)

// hashicorp/raft and raft-boltdb report their metrics (apply and commit
// times, FSM apply time, leader changes, ...) only to go-metrics' global
// sink, which is process-wide: it is set once, to a Prometheus sink on
// its own registry, and every agent of the process gathers that registry
// beside its own. Several agents in one process (tests) share it.
var (
	raftMetricsOnce sync.Once
	raftMetrics     = prometheus.NewRegistry()
)

func bridgeRaftMetrics() {
	raftMetricsOnce.Do(func() {
		sink, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{Registerer: raftMetrics, Expiration: 10 * time.Minute})
		if err != nil {
			return
		}
		cfg := gometrics.DefaultConfig("sched")
		cfg.EnableHostname = false
		cfg.EnableHostnameLabel = false
		cfg.EnableRuntimeMetrics = false // the Go collector reports the runtime
		cfg.EnableServiceLabel = false
		_, _ = gometrics.NewGlobal(cfg, sink)
	})
}

// agentMetrics is an agent's registry and the metrics the agent measures
// itself; it implements leader.Observer for the scheduler's timings.
type agentMetrics struct {
	reg *prometheus.Registry

	invoke        *prometheus.HistogramVec
	planEvaluate  prometheus.Histogram
	planApply     prometheus.Histogram
	heartbeatMiss prometheus.Counter
}

var _ leader.Observer = (*agentMetrics)(nil)

func latencyHistogram(subsystem, name, help string) prometheus.HistogramOpts {
	return prometheus.HistogramOpts{Namespace: "sched", Subsystem: subsystem, Name: name, Help: help,
		Buckets: []float64{.0001, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}}
}

func newAgentMetrics() *agentMetrics {
	bridgeRaftMetrics()
	m := &agentMetrics{
		reg:           prometheus.NewRegistry(),
		invoke:        prometheus.NewHistogramVec(latencyHistogram("worker", "invoke_seconds", "Time a worker's scheduler took on one evaluation, by scheduler type."), []string{"scheduler"}),
		planEvaluate:  prometheus.NewHistogram(latencyHistogram("plan", "evaluate_seconds", "Time the plan applier took to check one plan.")),
		planApply:     prometheus.NewHistogram(latencyHistogram("plan", "apply_seconds", "Time one plan's commit took through Raft.")),
		heartbeatMiss: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "sched", Subsystem: "client", Name: "heartbeats_missed_total", Help: "Node heartbeat TTLs that ran out (nodes marked down)."}),
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.invoke, m.planEvaluate, m.planApply, m.heartbeatMiss)
	return m
}

// Gather implements prometheus.Gatherer: the agent's metrics and raft's.
func (m *agentMetrics) Gather() ([]*dto.MetricFamily, error) {
	return prometheus.Gatherers{m.reg, raftMetrics}.Gather()
}

func (m *agentMetrics) SchedulerInvoked(t string, d time.Duration) {
	m.invoke.WithLabelValues(t).Observe(d.Seconds())
}
func (m *agentMetrics) PlanEvaluated(d time.Duration) { m.planEvaluate.Observe(d.Seconds()) }
func (m *agentMetrics) PlanApplied(d time.Duration)   { m.planApply.Observe(d.Seconds()) }
func (m *agentMetrics) HeartbeatMissed()              { m.heartbeatMiss.Inc() }

// collectFunc is a collector whose metrics are read at scrape time by
// fn. It declares no descriptions (an unchecked collector): what it
// reports depends on the state (scheduler types, nodes, tables).
type collectFunc func(ch chan<- prometheus.Metric)

func (f collectFunc) Describe(chan<- *prometheus.Desc)    {}
func (f collectFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }
func gaugeDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// registerServerMetrics adds the metrics read from a server's state, raft
// node and scheduler runtime at scrape time.
func (a *Agent) registerServerMetrics(m *agentMetrics, rt *leader.Runtime) {
	var (
		tableSize   = gaugeDesc("sched_state_table_objects", "Objects in each state store table.", "table")
		running     = gaugeDesc("sched_client_allocs_running", "Allocations a node reports running.", "node_id")
		raftIndex   = gaugeDesc("sched_raft_index", "This server's Raft indexes: last log, commit, applied.", "kind")
		raftLeader  = gaugeDesc("sched_raft_is_leader", "1 on the Raft leader, 0 elsewhere.")
		ready       = gaugeDesc("sched_broker_ready", "Evaluations ready for a worker, by scheduler type.", "scheduler")
		unacked     = gaugeDesc("sched_broker_unacked", "Evaluations delivered and not yet acked, by scheduler type.", "scheduler")
		blocked     = gaugeDesc("sched_broker_blocked", "Blocked evaluations.")
		pending     = gaugeDesc("sched_broker_pending", "Evaluations waiting for an earlier one of their job.")
		planQueue   = gaugeDesc("sched_plan_queue_depth", "Plans waiting for the plan applier.")
		rejected    = gaugeDesc("sched_plan_nodes_rejected_total", "Node plans the applier left out (over-committed or ineligible).")
		refused     = gaugeDesc("sched_plan_placements_refused_total", "Allocations of the node plans the applier left out, which the scheduler places again.")
		nacks       = gaugeDesc("sched_worker_nacks_total", "Evaluations workers gave back (nacked).")
		acks        = gaugeDesc("sched_worker_acks_total", "Evaluations workers completed (acked), by kind of worker: general, or small (small jobs' only).", "workers")
		gaveWay     = gaugeDesc("sched_worker_gave_way_total", "Times a worker waited for a burst of API writes before taking an evaluation.")
		eventsIndex = gaugeDesc("sched_event_last_index", "Index of the last log entry the event buffer saw.")
	)
	m.reg.MustRegister(collectFunc(func(ch chan<- prometheus.Metric) {
		for t, n := range a.store.TableSizes() {
			ch <- prometheus.MustNewConstMetric(tableSize, prometheus.GaugeValue, float64(n), t)
		}
		for node, n := range a.store.RunningAllocsByNode() {
			ch <- prometheus.MustNewConstMetric(running, prometheus.GaugeValue, float64(n), node)
		}
		ch <- prometheus.MustNewConstMetric(eventsIndex, prometheus.GaugeValue, float64(a.store.Events().LastIndex()))
		if a.node != nil {
			st := a.node.Stats()
			for _, k := range []string{"last_log_index", "commit_index", "applied_index"} {
				if v, err := strconv.ParseFloat(st[k], 64); err == nil {
					ch <- prometheus.MustNewConstMetric(raftIndex, prometheus.GaugeValue, v, k)
				}
			}
			isLeader := 0.0
			if st["state"] == "Leader" {
				isLeader = 1
			}
			ch <- prometheus.MustNewConstMetric(raftLeader, prometheus.GaugeValue, isLeader)
		}
		if rt == nil {
			return
		}
		ps := rt.Applier.Stats()
		ch <- prometheus.MustNewConstMetric(rejected, prometheus.CounterValue, float64(ps.NodesRejected))
		ch <- prometheus.MustNewConstMetric(refused, prometheus.CounterValue, float64(ps.PlacementsRefused))
		ws := rt.Workers.Stats()
		ch <- prometheus.MustNewConstMetric(nacks, prometheus.CounterValue, float64(ws.Nacked))
		ch <- prometheus.MustNewConstMetric(acks, prometheus.CounterValue, float64(ws.Acked-ws.SmallAcked), "general")
		ch <- prometheus.MustNewConstMetric(acks, prometheus.CounterValue, float64(ws.SmallAcked), "small")
		ch <- prometheus.MustNewConstMetric(gaveWay, prometheus.CounterValue, float64(ws.GaveWay))
		ch <- prometheus.MustNewConstMetric(planQueue, prometheus.GaugeValue, float64(rt.Plans.Len()))
		bs, err := rt.BrokerStats()
		if err != nil {
			return // not the leader: the broker is stopped
		}
		ch <- prometheus.MustNewConstMetric(blocked, prometheus.GaugeValue, float64(bs.TotalBlocked))
		ch <- prometheus.MustNewConstMetric(pending, prometheus.GaugeValue, float64(bs.TotalPending))
		// Every job type is reported, idle ones at 0, so dashboards see
		// a series before the first evaluation.
		by := map[string]*leader.SchedulerStats{}
		for _, t := range []string{state.JobTypeService, state.JobTypeBatch, state.JobTypeSystem, state.JobTypeSysBatch} {
			by[t] = &leader.SchedulerStats{}
		}
		for t, s := range bs.ByScheduler {
			by[t] = s
		}
		for t, s := range by {
			ch <- prometheus.MustNewConstMetric(ready, prometheus.GaugeValue, float64(s.Ready), t)
			ch <- prometheus.MustNewConstMetric(unacked, prometheus.GaugeValue, float64(s.Unacked), t)
		}
	}))
}

// newClientMetrics is the registry of a client-only agent's GET
// /v1/metrics: its Go runtime and process, its allocations by client
// status, and its heartbeats and registrations, read at scrape time.
func (a *Agent) newClientMetrics() prometheus.Gatherer {
	var (
		allocs       = gaugeDesc("sched_client_allocs", "Allocations this client holds, by client status.", "node_id", "client_status")
		running      = gaugeDesc("sched_client_allocs_running", "Allocations a node reports running.", "node_id")
		heartbeats   = gaugeDesc("sched_client_heartbeats_total", "Heartbeats this client sent, by result (ok: the servers answered).", "node_id", "result")
		registration = gaugeDesc("sched_client_registrations_total", "Times this client registered its node with the servers.", "node_id")
		hbDelay      = gaugeDesc("sched_client_heartbeat_delay_max_seconds", "The longest a heartbeat of this client was answered after it was due (its timer's lateness plus the request), since the start.", "node_id")
	)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectFunc(func(ch chan<- prometheus.Metric) {
			c := a.client
			if c == nil {
				return
			}
			node := c.NodeID()
			by := map[string]int{state.AllocClientStatusPending: 0, state.AllocClientStatusRunning: 0}
			for _, al := range c.Allocs() {
				by[al.ClientStatus]++
			}
			for status, n := range by {
				ch <- prometheus.MustNewConstMetric(allocs, prometheus.GaugeValue, float64(n), node, status)
			}
			ch <- prometheus.MustNewConstMetric(running, prometheus.GaugeValue, float64(by[state.AllocClientStatusRunning]), node)
			ok, failed := c.HeartbeatStats()
			ch <- prometheus.MustNewConstMetric(heartbeats, prometheus.CounterValue, float64(ok), node, "ok")
			ch <- prometheus.MustNewConstMetric(heartbeats, prometheus.CounterValue, float64(failed), node, "failed")
			ch <- prometheus.MustNewConstMetric(registration, prometheus.CounterValue, float64(c.Registrations()), node)
			ch <- prometheus.MustNewConstMetric(hbDelay, prometheus.GaugeValue, c.HeartbeatMaxDelay().Seconds(), node)
		}))
	return reg
}
