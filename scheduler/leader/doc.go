// Package leader is the scheduler's runtime on the leader: the eval
// broker, blocked evals, workers that run the pure schedulers of package
// scheduler, the plan queue and the single plan applier, node heartbeat
// timers, the drainer, the deployment watcher and GC.
//
// Each service owns goroutines that the agent starts on gaining
// leadership (after the barrier) and stops on losing it; what they hold
// in memory is rebuilt from state on the next leader. They read the store
// directly and reach Raft only through the small interfaces in
// runtime.go that the agent satisfies.
package leader
