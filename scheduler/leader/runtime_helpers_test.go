package leader

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// memRaft is the runtime's Raft in tests: it encodes each command as the
// real log would and applies it to a store at the next index, in order.
// after, when set, runs after every successful apply with the lock held,
// so it sees the store exactly at that index; fail, when set, can refuse a
// command before it is applied (fault injection).
type memRaft struct {
	mu    sync.Mutex
	store *store.Store
	index uint64
	after func(t store.MessageType, index uint64)
	fail  func(t store.MessageType) error
	// before, when set, runs before a command takes the lock: a slow
	// disk, letting commits overlap and land in any order.
	before func(t store.MessageType)
}

var _ Raft = (*memRaft)(nil)

func rtNewMemRaft(t testing.TB) *memRaft {
	t.Helper()
	store, err := store.NewStore(store.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return &memRaft{store: store, index: store.LatestIndex()}
}

func (r *memRaft) Apply(ctx context.Context, t store.MessageType, req any) (any, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	data, err := store.Encode(t, req)
	if err != nil {
		return nil, 0, err
	}
	if r.before != nil {
		r.before(t)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		if err := r.fail(t); err != nil {
			return nil, 0, err
		}
	}
	r.index++
	resp := r.store.Apply(r.index, data)
	if err, ok := resp.(error); ok {
		return nil, r.index, err
	}
	if r.after != nil {
		r.after(t, r.index)
	}
	return resp, r.index, nil
}

// must applies a command and fails the test on error.
func (r *memRaft) must(t testing.TB, typ store.MessageType, req any) uint64 {
	t.Helper()
	_, index, err := r.Apply(context.Background(), typ, req)
	if err != nil {
		t.Fatalf("apply %d: %v", typ, err)
	}
	return index
}

// registerNode writes a node.
func (r *memRaft) registerNode(t testing.TB, n *state.Node) uint64 {
	t.Helper()
	return r.must(t, store.NodeRegisterRequestType, &store.NodeRegisterRequest{Node: n})
}

// registerJob writes a job with its register evaluation, as the HTTP layer
// does, and returns the evaluation's ID.
func (r *memRaft) registerJob(t testing.TB, job *state.Job) string {
	t.Helper()
	evalID := fmt.Sprintf("eval-%s-%d", job.ID, time.Now().UnixNano())
	now := time.Now().UnixNano()
	r.must(t, store.JobRegisterRequestType, &store.JobRegisterRequest{
		Job: job.Copy(),
		Eval: &state.Evaluation{ID: evalID, Namespace: job.Namespace, Priority: job.Priority, Type: job.Type,
			TriggeredBy: state.EvalTriggerJobRegister, JobID: job.ID, Status: state.EvalStatusPending,
			CreateTime: now, ModifyTime: now},
		Now: now,
	})
	return evalID
}

// putEvals writes evaluations as they are.
func (r *memRaft) putEvals(t testing.TB, evals ...*state.Evaluation) uint64 {
	t.Helper()
	return r.must(t, store.EvalUpdateRequestType, &store.EvalUpdateRequest{Evals: evals})
}

// rtLog discards the runtime's logs.
func rtLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// rtEval returns a pending evaluation of a service job.
func rtEval(id, job string, prio int) *state.Evaluation {
	return &state.Evaluation{ID: id, Namespace: state.DefaultNamespace, JobID: job, Priority: prio,
		Type: state.JobTypeService, TriggeredBy: state.EvalTriggerJobRegister, Status: state.EvalStatusPending}
}

// rtWaitState waits until cond holds on the store, waking on its writes,
// and fails the test after timeout.
func rtWaitState(t testing.TB, store *store.Store, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		ws := memdb.NewWatchSet()
		store.WatchLatestIndex(ws)
		if cond() {
			return
		}
		if err := ws.WatchCtx(ctx); err != nil {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}

// idCounter makes sequential IDs for tests.
type idCounter struct {
	mu sync.Mutex
	n  int
}

func (c *idCounter) id() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", c.n)
}
