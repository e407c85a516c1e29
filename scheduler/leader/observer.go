package leader

import "time"

// Observer receives the timings and events the leader's services measure,
// for metrics. Its methods are called on the services' goroutines and must
// not block. The zero RuntimeConfig observes nothing.
type Observer interface {
	// SchedulerInvoked: a worker ran the scheduler of type schedType on
	// one evaluation for d.
	SchedulerInvoked(schedType string, d time.Duration)
	// PlanEvaluated: the plan applier checked one plan against the state
	// for d.
	PlanEvaluated(d time.Duration)
	// PlanApplied: one plan's commit took d through Raft.
	PlanApplied(d time.Duration)
	// HeartbeatMissed: a node's heartbeat TTL ran out.
	HeartbeatMissed()
}

// nopObserver observes nothing.
type nopObserver struct{}

func (nopObserver) SchedulerInvoked(string, time.Duration) {}
func (nopObserver) PlanEvaluated(time.Duration)            {}
func (nopObserver) PlanApplied(time.Duration)              {}
func (nopObserver) HeartbeatMissed()                       {}
