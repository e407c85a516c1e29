package agent

import (
	"fmt"

	"github.com/schedhq/sched/http/jobs"
	"github.com/schedhq/sched/scheduler/leader"
)

// schedulerHooks holds the scheduler runtime of a server agent: its leader
// services and what the HTTP layer reaches of them.
type schedulerHooks struct {
	rt *leader.Runtime
}

// The runtime is what HTTP handlers use as the leader's services: node
// heartbeats and forced garbage collection. Off the leader its services
// are stopped and answer scheduler.ErrNotLeader, which HTTP maps to 503.
var _ jobs.LeaderServices = (*leader.Runtime)(nil)

// schedulerRuntime builds the scheduler runtime once; both hooks share it.
func (a *Agent) schedulerRuntime() (*leader.Runtime, error) {
	if a.sched != nil {
		return a.sched.rt, nil
	}
	cfg := a.cfg.Server.runtimeConfig()
	cfg.Store = a.store
	cfg.Raft = &raftWriter{node: a.node}
	cfg.Logger = a.log.With("component", "scheduler")
	cfg.Observe = a.metrics
	cfg.Foreground = a.foreground
	rt, err := leader.NewRuntime(cfg)
	if err != nil {
		return nil, fmt.Errorf("scheduler runtime: %w", err)
	}
	a.sched = &schedulerHooks{rt: rt}
	return rt, nil
}

// runtimeConfig is the scheduler's tuning from the server block; the
// caller adds the store, raft and logger. Zero fields (NumSchedulers
// unset) take the scheduler's defaults, and NumSmallSchedulers unset
// leader.DefaultSmallWorkers.
func (s *ServerConfig) runtimeConfig() leader.RuntimeConfig {
	small := leader.DefaultSmallWorkers()
	if s.NumSmallSchedulers != nil {
		small = *s.NumSmallSchedulers
	}
	return leader.RuntimeConfig{
		Workers:      s.NumSchedulers,
		SmallWorkers: small,
		JobLimits:    s.JobLimits(),
		Broker: leader.BrokerConfig{
			UnackedTimeout: s.EvalNackTimeout,
			DeliveryLimit:  s.EvalDeliveryLimit,
		},
		Heartbeat: leader.HeartbeatConfig{
			MinTTL:                 s.MinHeartbeatTTL,
			MaxHeartbeatsPerSecond: s.MaxHeartbeatsPerSecond,
			Grace:                  s.HeartbeatGrace,
			FailoverTTL:            s.FailoverHeartbeatTTL,
		},
		GC: leader.GCConfig{
			Interval:            s.JobGCInterval,
			EvalThreshold:       s.EvalGCThreshold,
			BatchEvalThreshold:  s.BatchEvalGCThreshold,
			JobThreshold:        s.JobGCThreshold,
			NodeThreshold:       s.NodeGCThreshold,
			DeploymentThreshold: s.DeploymentGCThreshold,
			ACLTokenThreshold:   s.ACLTokenGCThreshold,
		},
	}
}

// schedulerServices are the scheduler's leader duties, in start order:
// eval broker, blocked evals, the eval feed that restores both from state,
// plan applier, workers, node heartbeats, drainer and GC.
func (a *Agent) schedulerServices() []leaderService {
	rt, err := a.schedulerRuntime()
	if err != nil {
		a.log.Error("scheduler disabled", "error", err)
		return nil
	}
	var out []leaderService
	for _, s := range rt.Services() {
		out = append(out, s)
	}
	return out
}

// configureHTTPScheduler gives the jobs API the scheduler's services.
func (a *Agent) configureHTTPScheduler(cfg *jobs.Config) {
	rt, err := a.schedulerRuntime()
	if err != nil {
		a.log.Error("scheduler disabled", "error", err)
		return
	}
	cfg.Leader = rt
}
