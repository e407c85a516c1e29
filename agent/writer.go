package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	schedhttp "github.com/schedhq/sched/http"
	"github.com/schedhq/sched/raft"
	"github.com/schedhq/sched/scheduler/leader"
	"github.com/schedhq/sched/state/store"
)

// leaderWait bounds how long a write or consistent read waits for a leader
// (or for the leader's read index) before answering 503.
const leaderWait = 5 * time.Second

// raftWriter commits HTTP writes through raft and makes reads consistent.
// It is the http.Writer and http.Cluster of a server agent.
//
// Writes reach it on the leader only: a follower's HTTP layer proxies them
// to the leader first (http/forward.go). A write that finds this server is
// not the leader after all (leadership moved under it) is answered 503.
type raftWriter struct {
	node *raft.Node
	// cluster reaches the leader for the read index of a consistent read
	// on a follower. Nil (a writer built for leader-only duties) means
	// consistent reads work only while this server leads.
	cluster *clusterState
	// fg counts the API's writes in flight for the scheduling workers
	// to give way to (leader.Foreground); nil for the scheduler's own
	// writer.
	fg *leader.Foreground
}

var (
	_ schedhttp.Writer  = (*raftWriter)(nil)
	_ schedhttp.Cluster = (*raftWriter)(nil)
)

// newWriter is the writer of the HTTP API.
func (a *Agent) newWriter() *raftWriter {
	a.cluster.a = a
	return &raftWriter{node: a.node, cluster: &a.cluster, fg: a.foreground}
}

// Apply encodes the command, waits a bounded time for leadership, and
// proposes it. The state machine's error answers come back unchanged.
// The command as prepared rides with the entry to this server's state
// machine (raft.Node.ApplyLocal, fsm's storeEntry), which applies it
// without decoding the entry again.
func (w *raftWriter) Apply(ctx context.Context, t store.MessageType, req any) (any, uint64, error) {
	p, err := store.PrepareCommand(t, req) // judged here as Apply will judge it
	if err != nil {
		return nil, 0, err
	}
	if w.fg != nil && !clientTraffic(t) {
		defer w.fg.Begin()()
	}
	if err := w.awaitLeadership(ctx); err != nil {
		return nil, 0, err
	}
	index, resp, err := w.node.ApplyLocal(ctx, p.Data, p)
	if err != nil {
		return nil, 0, mapRaftErr(err)
	}
	return resp, index, nil
}

// clientTraffic reports whether writes of type t come from client agents
// (node registration and status, allocation reports) rather than from the
// API's users: the scheduling workers give way only to the latter.
func clientTraffic(t store.MessageType) bool {
	switch t {
	case store.AllocClientUpdateRequestType, store.NodeUpsertRequestType, store.NodeUpdateStatusRequestType:
		return true
	}
	return false
}

// awaitLeadership returns nil once this server leads, waiting up to
// leaderWait while no leader is known.
func (w *raftWriter) awaitLeadership(ctx context.Context) error {
	if w.node.IsLeader() {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, leaderWait)
	defer cancel()
	if err := w.node.WaitForLeader(wctx); err != nil {
		return &schedhttp.CodedError{Code: http.StatusServiceUnavailable, Message: "no cluster leader", Err: err}
	}
	if !w.node.IsLeader() {
		addr, _ := w.node.Leader()
		return &schedhttp.CodedError{Code: http.StatusServiceUnavailable,
			Message: fmt.Sprintf("this server is not the leader (the leader is at %s); leadership changed while the request was handled, retry", addr)}
	}
	return nil
}

// KnownLeader reports whether raft knows a leader.
func (w *raftWriter) KnownLeader() bool {
	addr, _ := w.node.Leader()
	return addr != ""
}

// LastContact is zero on the leader and the time since the leader was last
// heard from elsewhere (zero on a server that never heard from one).
func (w *raftWriter) LastContact() time.Duration {
	if w.node.IsLeader() {
		return 0
	}
	last := w.node.LastContact()
	if last.IsZero() {
		return 0
	}
	return time.Since(last)
}

// ReadBarrier makes the local store at least as new as every write
// acknowledged before the call: the leader confirms with a quorum that it
// still leads and hands out its applied index (the read index), and this
// server waits until it has applied that far. On the leader the index is
// already applied; on a follower it comes over HTTP from the leader
// (http.ReadIndexPath). Concurrent reads share one read index (coalescer).
func (w *raftWriter) ReadBarrier(ctx context.Context) error {
	var index uint64
	var err error
	if w.cluster != nil {
		index, err = w.cluster.readIndex(ctx)
	} else if err = w.awaitLeadership(ctx); err == nil {
		index, err = w.node.VerifyLeader(ctx)
	}
	if err != nil {
		return mapRaftErr(err)
	}
	if err := w.node.WaitForApplied(ctx, index); err != nil {
		if errors.Is(err, raft.ErrShutdown) {
			return mapRaftErr(err)
		}
		return &schedhttp.CodedError{Code: http.StatusServiceUnavailable,
			Message: fmt.Sprintf("this server has not caught up with the leader (read index %d, applied %d); retry, or read with ?stale", index, w.node.AppliedIndex()), Err: err}
	}
	return nil
}

// readIndex returns the index a consistent read must wait for: the
// leader's quorum-confirmed applied index, asked of the leader through the
// coalescer.
func (c *clusterState) readIndex(ctx context.Context) (uint64, error) {
	if c.a.node.IsLeader() {
		return c.verifies.do(ctx, c.a.node.VerifyLeader)
	}
	return c.reads.do(ctx, c.fetchReadIndex)
}

// fetchReadIndex asks the leader for its read index. When the known leader
// cannot be reached, or answers that it no longer leads, it waits for
// another leader (within ctx, leaderWait at most). It becomes a local
// quorum check when this server turns out to lead.
func (c *clusterState) fetchReadIndex(ctx context.Context) (uint64, error) {
	avoid := ""
	for {
		addr, self, err := c.LeaderHTTPAddr(ctx, avoid)
		if err != nil {
			if avoid != "" {
				return 0, fmt.Errorf("%w (the leader at %s could not give a read index)", err, avoid)
			}
			return 0, err
		}
		if self {
			return c.verifies.do(ctx, c.a.node.VerifyLeader)
		}
		index, retry, err := c.remoteReadIndex(ctx, addr)
		if err == nil {
			return index, nil
		}
		if !retry {
			return 0, err
		}
		c.a.log.Debug("read index from the leader failed; waiting for another leader", "leader", addr, "error", err)
		avoid = addr
	}
}

// remoteReadIndex calls the leader's read-index endpoint. retry reports
// a failure another leader may not have: unreachable, or no longer leader.
func (c *clusterState) remoteReadIndex(ctx context.Context, addr string) (index uint64, retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.a.serversScheme()+"://"+addr+schedhttp.ReadIndexPath, nil)
	if err != nil {
		return 0, false, err
	}
	req.Header.Set(schedhttp.HeaderForwardedBy, c.a.node.ID())
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, ctx.Err() == nil, fmt.Errorf("read index from the leader at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, resp.StatusCode == http.StatusServiceUnavailable,
			fmt.Errorf("read index from the leader at %s: status %d: %s", addr, resp.StatusCode, msg)
	}
	var out schedhttp.ReadIndexResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, false, fmt.Errorf("read index from the leader at %s: %w", addr, err)
	}
	return out.Index, false, nil
}

// coalescer shares one in-flight call among concurrent callers, without
// giving any caller an answer older than its call: a caller that arrives
// while a call is in flight waits for the next one, which starts only once
// the current one ends. A read index obtained after a read arrived is as
// good for it as one of its own, so under load one quorum check (and one
// request to the leader) serves every read of a round.
//
// The shared call runs with a context of its own, bounded by leaderWait,
// so that one caller going away does not fail the others. Every caller of
// one coalescer passes the same function.
type coalescer struct {
	mu       sync.Mutex
	inflight bool
	next     *coalesced
}

// coalesced is one shared call and its result.
type coalesced struct {
	done  chan struct{}
	index uint64
	err   error
}

// do returns the result of a call of fn that started after do was called.
func (c *coalescer) do(ctx context.Context, fn func(context.Context) (uint64, error)) (uint64, error) {
	c.mu.Lock()
	if c.next == nil {
		c.next = &coalesced{done: make(chan struct{})}
	}
	b := c.next
	if !c.inflight {
		c.inflight = true
		c.next = nil
		go c.run(b, fn)
	}
	c.mu.Unlock()
	select {
	case <-b.done:
		return b.index, b.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// run makes the call for b, then for whoever queued meanwhile, until no
// one is waiting.
func (c *coalescer) run(b *coalesced, fn func(context.Context) (uint64, error)) {
	for b != nil {
		ctx, cancel := context.WithTimeout(context.Background(), leaderWait)
		b.index, b.err = fn(ctx)
		cancel()
		close(b.done)
		c.mu.Lock()
		b, c.next = c.next, nil
		if b == nil {
			c.inflight = false
		}
		c.mu.Unlock()
	}
}
