package leader

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// Heartbeat defaults.
const (
	DefaultMinHeartbeatTTL         = 10 * time.Second
	DefaultMaxHeartbeatsPerSecond  = 50.0
	DefaultHeartbeatGrace          = 10 * time.Second
	DefaultFailoverHeartbeatTTL    = 5 * time.Minute
	heartbeatInvalidateRetryPeriod = 5 * time.Second
)

// HeartbeatConfig tunes the Heartbeater. Every zero field means its
// default.
type HeartbeatConfig struct {
	// MinTTL is the least TTL handed to a node (DefaultMinHeartbeatTTL).
	MinTTL time.Duration
	// MaxHeartbeatsPerSecond scales the TTL up with the number of nodes so
	// that all of them together heartbeat at most this often
	// (DefaultMaxHeartbeatsPerSecond): 5,000 nodes at 50/s get 100 s.
	MaxHeartbeatsPerSecond float64
	// Grace is added to the TTL before the leader gives up on a node, for
	// network and client delays (DefaultHeartbeatGrace).
	Grace time.Duration
	// FailoverTTL is the time every node gets when a server becomes
	// leader, to find the new leader and heartbeat it: a failover never
	// marks nodes down by itself (DefaultFailoverHeartbeatTTL, as Nomad).
	FailoverTTL time.Duration
	// ChurnWindow is how long a job's first evaluation for a node marked
	// down is held, so that nodes going down together make one
	// (NodeChurnWindow; node_churn.go).
	ChurnWindow time.Duration
	// MaxChurnPeriod bounds the churn period (MaxNodeChurnPeriod;
	// node_churn.go).
	MaxChurnPeriod time.Duration
}

func (c HeartbeatConfig) withDefaults() HeartbeatConfig {
	c.MinTTL = cmp.Or(c.MinTTL, DefaultMinHeartbeatTTL)
	c.MaxHeartbeatsPerSecond = cmp.Or(c.MaxHeartbeatsPerSecond, DefaultMaxHeartbeatsPerSecond)
	c.Grace = cmp.Or(c.Grace, DefaultHeartbeatGrace)
	c.FailoverTTL = cmp.Or(c.FailoverTTL, DefaultFailoverHeartbeatTTL)
	c.ChurnWindow = cmp.Or(c.ChurnWindow, NodeChurnWindow)
	c.MaxChurnPeriod = cmp.Or(c.MaxChurnPeriod, MaxNodeChurnPeriod)
	return c
}

// Heartbeater keeps a timer per live node on the leader. A node's
// heartbeat (through HTTP) resets its timer and learns its TTL: the
// scaled TTL (at least MinTTL, more with many nodes) plus a random share
// of up to the same again, so nodes that registered together spread out.
// A node that misses TTL + Grace is marked down, in one command with an
// evaluation (TriggeredBy "node-update") for every job with an allocation
// on it that is not terminal; the schedulers then mark those allocations
// lost and replace them.
//
// When leadership starts, every node that is not down gets FailoverTTL,
// and the heartbeater follows the nodes table (watch, not polling) so a
// node registered or brought back up by any path gets a timer, and a node
// deleted or marked down loses it.
type Heartbeater struct {
	// observe counts missed heartbeats (nopObserver unless the runtime
	// sets one).
	observe Observer
	cfg     HeartbeatConfig
	store   *store.Store
	raft    Raft
	log     *slog.Logger
	now     func() time.Time
	newID   func() string
	run     runner

	mu      sync.Mutex
	enabled bool
	// ctx is the leadership's, for the writes of expired timers; cancel
	// ends it at Stop.
	ctx    context.Context
	cancel context.CancelFunc
	timers map[string]*nodeTimer
	// longest is the longest TTL plus grace handed to a node by this
	// leader: a node that stops heartbeating is marked down within it.
	longest time.Duration
	// expiring tracks invalidations in progress, so Stop waits for them.
	expiring sync.WaitGroup
}

// nodeTimer is one node's timer; gen tells a stale firing from the
// current one.
type nodeTimer struct {
	timer *time.Timer
	gen   uint64
}

// NewHeartbeater returns a stopped heartbeater.
func NewHeartbeater(cfg HeartbeatConfig, store *store.Store, raft Raft, log *slog.Logger, now func() time.Time, newID func() string) *Heartbeater {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	if newID == nil {
		newID = state.NewID
	}
	return &Heartbeater{observe: nopObserver{}, cfg: cfg.withDefaults(), store: store, raft: raft, log: log, now: now, newID: newID, timers: map[string]*nodeTimer{}}
}

// Name implements Service.
func (h *Heartbeater) Name() string { return "heartbeats" }

// Start gives every node that is not down FailoverTTL and follows the
// nodes table.
func (h *Heartbeater) Start(ctx context.Context) error {
	nodes, err := h.store.Nodes(nil, "")
	if err != nil {
		return fmt.Errorf("heartbeats: list nodes: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	h.mu.Lock()
	h.enabled, h.ctx, h.cancel = true, ctx, cancel
	for _, n := range nodes {
		if n.Status != state.NodeStatusDown {
			h.resetLocked(n.ID, h.cfg.FailoverTTL)
		}
	}
	h.mu.Unlock()
	table := h.store.WatchIndex(nil, store.TableNodes)
	return h.run.start(ctx, func(ctx context.Context) { h.follow(ctx, table) })
}

// Stop drops every timer and waits for invalidations in progress.
func (h *Heartbeater) Stop() {
	h.mu.Lock()
	h.enabled = false
	if h.cancel != nil {
		h.cancel()
		h.cancel = nil
	}
	for id, t := range h.timers {
		t.timer.Stop()
		delete(h.timers, id)
	}
	h.mu.Unlock()
	h.run.stop()
	h.expiring.Wait()
}

// Heartbeat resets a node's timer and returns the TTL within which it must
// heartbeat again. It fails with ErrNotLeader while the heartbeater is
// stopped and with an error wrapping state.ErrNotFound for an unknown node.
func (h *Heartbeater) Heartbeat(nodeID string) (time.Duration, error) {
	h.mu.Lock()
	enabled := h.enabled
	h.mu.Unlock()
	if !enabled {
		return 0, ErrNotLeader
	}
	node, err := h.store.NodeByID(nil, nodeID)
	if err != nil {
		return 0, err
	}
	if node == nil {
		return 0, state.NotFoundf("node %q not found", nodeID)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.enabled {
		return 0, ErrNotLeader
	}
	ttl := h.ttlLocked()
	h.resetLocked(nodeID, ttl+h.cfg.Grace)
	h.longest = max(h.longest, ttl+h.cfg.Grace)
	return ttl, nil
}

// ttlLocked is the TTL for the next heartbeat: scaled with the number of
// nodes, plus jitter.
func (h *Heartbeater) ttlLocked() time.Duration {
	base := time.Duration(float64(len(h.timers)) / h.cfg.MaxHeartbeatsPerSecond * float64(time.Second))
	base = max(base, h.cfg.MinTTL)
	return base + rand.N(base)
}

// resetLocked (re)arms a node's timer to fire after d.
func (h *Heartbeater) resetLocked(nodeID string, d time.Duration) {
	t := h.timers[nodeID]
	if t == nil {
		t = &nodeTimer{}
		h.timers[nodeID] = t
	} else {
		t.timer.Stop()
	}
	t.gen++
	gen := t.gen
	t.timer = time.AfterFunc(d, func() { h.expired(nodeID, gen) })
}

// expired handles a node whose timer fired: unless a heartbeat came in
// since, the node is marked down with evaluations for its jobs.
func (h *Heartbeater) expired(nodeID string, gen uint64) {
	h.mu.Lock()
	t := h.timers[nodeID]
	if !h.enabled || t == nil || t.gen != gen {
		h.mu.Unlock()
		return
	}
	delete(h.timers, nodeID)
	ctx := h.ctx
	h.observe.HeartbeatMissed()
	h.expiring.Add(1)
	h.mu.Unlock()
	defer h.expiring.Done()
	if err := h.markDown(ctx, nodeID); err != nil && ctx.Err() == nil {
		h.log.Error("could not mark node down after missed heartbeat; retrying", "node_id", nodeID, "error", err)
		h.mu.Lock()
		if h.enabled && h.timers[nodeID] == nil {
			h.resetLocked(nodeID, heartbeatInvalidateRetryPeriod)
		}
		h.mu.Unlock()
	}
}

// markDown writes the node down with an evaluation per affected job.
func (h *Heartbeater) markDown(ctx context.Context, nodeID string) error {
	node, err := h.store.NodeByID(nil, nodeID)
	if err != nil {
		return err
	}
	if node == nil || node.Status == state.NodeStatusDown {
		return nil
	}
	now := h.now()
	evals, err := NodeEvals(h.store, node, now, h.newID)
	if err != nil {
		return err
	}
	if err := h.holdChurnEvals(evals, now); err != nil { // node_churn.go
		return err
	}
	req := &store.NodeUpdateStatusRequest{
		NodeID:            nodeID,
		Status:            state.NodeStatusDown,
		StatusDescription: "node missed its heartbeat",
		UpdatedAt:         now.Unix(),
		Evals:             evals,
		CoalesceAfter:     now.Add(min(nodeChurnMargin, h.cfg.ChurnWindow/4)).UnixNano(),
	}
	if _, _, err := h.raft.Apply(ctx, store.NodeUpdateStatusRequestType, req); err != nil {
		return err
	}
	h.log.Warn("node missed its heartbeat; marked down", "node_id", nodeID, "evals", len(evals))
	return nil
}

// NodeEvals returns an evaluation (TriggeredBy "node-update", about node)
// for every job with an allocation on node that is not terminal, ordered
// by namespace and job. Jobs that no longer exist take their type and
// priority from the allocation's copy of the job.
func NodeEvals(st scheduler.State, node *state.Node, now time.Time, newID func() string) ([]*state.Evaluation, error) {
	allocs, err := st.AllocsByNode(nil, node.ID)
	if err != nil {
		return nil, err
	}
	seen := map[jobKey]bool{}
	var evals []*state.Evaluation
	for _, a := range allocs {
		key := jobKey{a.Namespace, a.JobID}
		if a.Terminal() || seen[key] {
			continue
		}
		seen[key] = true
		job, err := st.JobByID(nil, a.Namespace, a.JobID)
		if err != nil {
			return nil, err
		}
		if job == nil {
			job = a.Job
		}
		if job == nil {
			continue
		}
		evals = append(evals, &state.Evaluation{
			ID:              newID(),
			Namespace:       a.Namespace,
			Priority:        job.Priority,
			Type:            job.Type,
			TriggeredBy:     state.EvalTriggerNodeUpdate,
			JobID:           a.JobID,
			NodeID:          node.ID,
			NodeModifyIndex: node.ModifyIndex,
			Status:          state.EvalStatusPending,
			CreateTime:      now.UnixNano(),
			ModifyTime:      now.UnixNano(),
		})
	}
	slices.SortFunc(evals, func(a, b *state.Evaluation) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.JobID, b.JobID))
	})
	return evals, nil
}

// nodeFollowPace is the least time between two passes over the nodes
// table of the heartbeater and the drainer: neither needs to react within
// less, and registering thousands of nodes then costs a few passes.
const nodeFollowPace = 50 * time.Millisecond

// follow keeps the timers in step with the nodes table: a node without a
// timer that is not down gets one, a node down or deleted loses its timer.
func (h *Heartbeater) follow(ctx context.Context, table uint64) {
	pace := pacer{every: nodeFollowPace}
	for {
		ws := memdb.NewWatchSet()
		ws.Add(h.store.AbandonCh())
		if idx := h.store.WatchIndex(ws, store.TableNodes); idx != table {
			if !pace.wait(ctx) {
				return
			}
			table = h.store.WatchIndex(nil, store.TableNodes)
			h.sync()
			continue
		}
		if err := ws.WatchCtx(ctx); err != nil {
			return
		}
	}
}

// sync aligns the timers with the nodes in state.
func (h *Heartbeater) sync() {
	nodes, err := h.store.Nodes(nil, "")
	if err != nil {
		h.log.Error("heartbeats: list nodes", "error", err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.enabled {
		return
	}
	live := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		if n.Status == state.NodeStatusDown {
			continue
		}
		live[n.ID] = true
		if h.timers[n.ID] == nil {
			h.resetLocked(n.ID, h.ttlLocked()+h.cfg.Grace)
		}
	}
	for id, t := range h.timers {
		if !live[id] {
			t.timer.Stop()
			delete(h.timers, id)
		}
	}
}

// Tracked returns the number of nodes with a timer.
func (h *Heartbeater) Tracked() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.timers)
}
