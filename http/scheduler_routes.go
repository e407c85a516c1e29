package http

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/hashicorp/go-bexpr"

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
func (s *Server) schedulerRoutes() {
	s.nodeRoutes()                                     // nodes.go
	s.nodePoolRoutes()                                 // node_pools.go
	s.evalRoutes()                                     // evals.go
	s.allocRoutes()                                    // allocs.go
	s.deploymentRoutes()                               // deployments.go
	s.write("/v1/job/:job_id/plan", s.jobPlan)         // plan.go
	s.write("/v1/job/:job_id/evaluate", s.jobEvaluate) // evaluate.go
	s.write("/v1/system/gc", s.systemGC)               // system.go
}

// leader returns the leader services, or a 503 when this server has none
// wired (a server that is not the leader answers through them too).
func (s *Server) leader() (LeaderServices, error) {
	if s.cfg.Leader == nil {
		return nil, &CodedError{Code: http.StatusServiceUnavailable, Message: "scheduler services are not running on this server"}
	}
	return s.cfg.Leader, nil
}

// leaderError maps an error of LeaderServices to its status: state's
// sentinels keep theirs, anything else means the services cannot answer
// now (503).
func leaderError(err error) error {
	if err == nil {
		return nil
	}
	var ce *CodedError
	if errors.As(err, &ce) || errors.Is(err, state.ErrNotFound) || errors.Is(err, state.ErrInvalid) || errors.Is(err, state.ErrConflict) {
		return err
	}
	return &CodedError{Code: http.StatusServiceUnavailable, Message: err.Error(), Err: err}
}

// listOptions are the parameters of the scheduler's list endpoints:
// prefix, filter (a go-bexpr expression over the list entry, applied
// before pagination, as on GET /v1/jobs), per_page and next_token.
type listOptions struct {
	Prefix    string
	NextToken string
	PerPage   int64
	filter    *bexpr.Evaluator
}

// parseListOptions reads the list parameters; a malformed one is a 400
// naming it.
func parseListOptions(r *http.Request) (listOptions, error) {
	q := r.URL.Query()
	o := listOptions{Prefix: q.Get("prefix"), NextToken: q.Get("next_token")}
	n, err := intParam(r, "per_page", 0)
	if err != nil {
		return o, err
	}
	if n < 0 {
		return o, codec.BadRequest("per_page: must not be negative, got %d", n)
	}
	o.PerPage = n
	if f := q.Get("filter"); f != "" {
		o.filter, err = bexpr.CreateEvaluator(f)
		if err != nil {
			return o, codec.BadRequest("filter: %v", err)
		}
	}
	return o, nil
}

// page collects one page of a list ordered by key. Entries before
// NextToken are skipped, entries the filter rejects are dropped, and once
// the page is full the key of the next matching entry becomes the
// next-page token.
type page[T any] struct {
	opts  listOptions
	items []T
	next  string
}

func newPage[T any](opts listOptions) *page[T] {
	return &page[T]{opts: opts, items: make([]T, 0)}
}

// add offers entry v with pagination key key; it returns false once the
// page is full and the caller may stop.
func (p *page[T]) add(key string, v T) bool {
	if p.opts.NextToken != "" && key < p.opts.NextToken {
		return true
	}
	if p.opts.filter != nil {
		ok, err := p.opts.filter.Evaluate(v)
		if err != nil || !ok {
			// A selector missing from this entry does not match.
			return true
		}
	}
	if p.opts.PerPage > 0 && int64(len(p.items)) == p.opts.PerPage {
		p.next = key
		return false
	}
	p.items = append(p.items, v)
	return true
}

// finish sets the next-page header and returns the page's entries.
func (p *page[T]) finish(w http.ResponseWriter) []T {
	if p.next != "" {
		w.Header().Set(HeaderNextToken, p.next)
	}
	return p.items
}

// inNamespace reports whether an object of namespace objNS is visible to a
// request for namespace ns ("*" sees every namespace). Reads of single
// evaluations, allocations and deployments answer 404 for an object of
// another namespace, so that a capability granted in one namespace never
// reveals another's objects by ID.
func inNamespace(ns, objNS string) bool {
	return ns == "*" || ns == objNS
}
