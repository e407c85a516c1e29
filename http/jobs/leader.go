package jobs

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// LeaderServices is what handlers need of the leader-only scheduler
// services (package scheduler's runtime, wired by the agent).
//
// Errors: an error wrapping state.ErrNotFound (unknown node) is a 404, one
// wrapping state.ErrInvalid a 400; any other error (this server is not the
// leader, the services are stopping) is answered 503, so a client retries
// rather than treating it as a fault of its request.
type LeaderServices interface {
	// Heartbeat resets the node's heartbeat timer and returns the TTL
	// within which the node must heartbeat again before the leader marks
	// it down. It only touches the timer: the HTTP layer records status
	// changes (a down node that heartbeats becomes ready) through Raft
	// before calling it.
	Heartbeat(nodeID string) (time.Duration, error)
	// ForceGC collects every terminal evaluation, allocation, dead job and
	// down node that garbage collection may collect, ignoring age
	// thresholds, and returns when that is committed.
	ForceGC(ctx context.Context) error
}

// schedulerRoutes registers nodes, node pools, evaluations, allocations,
// deployments, the plan dry run, evaluate and GC (the scheduler issue).
func (h *api) schedulerRoutes() {
	nodeAPI{h}.nodeRoutes()                                    // nodes.go
	nodeAPI{h}.nodePoolRoutes()                                // node_pools.go
	h.write("/v1/job/:job_id/plan", jobAPI{h}.jobPlan)         // job_plan.go
	h.write("/v1/job/:job_id/evaluate", jobAPI{h}.jobEvaluate) // job_evaluate.go
	h.write("/v1/system/gc", systemAPI{h}.systemGC)            // system.go
}

// leader returns the leader services, or a 503 when this server has none
// wired (a server that is not the leader answers through them too).
func (h *api) leader() (LeaderServices, error) {
	if h.cfg.Leader == nil {
		return nil, &codec.CodedError{Code: http.StatusServiceUnavailable, Message: "scheduler services are not running on this server"}
	}
	return h.cfg.Leader, nil
}

// leaderError maps an error of LeaderServices to its status: state's
// sentinels keep theirs, anything else means the services cannot answer
// now (503).
func leaderError(err error) error {
	if err == nil {
		return nil
	}
	var ce *codec.CodedError
	if errors.As(err, &ce) || errors.Is(err, state.ErrNotFound) || errors.Is(err, state.ErrInvalid) || errors.Is(err, state.ErrConflict) {
		return err
	}
	return &codec.CodedError{Code: http.StatusServiceUnavailable, Message: err.Error(), Err: err}
}
