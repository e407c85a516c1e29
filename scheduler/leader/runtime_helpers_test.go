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

	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// memRaft is the runtime's Raft in tests: the shared harness's Log
// (scheduler/schedtest) encodes each command as the real log would and
// applies it to a store at the next index, in order; memRaft adds fault
// injection around it. after, when set, runs after every successful apply
// with the lock held, so it sees the store exactly at that index; fail,
// when set, can refuse a command before it is applied.
type memRaft struct {
	log   *schedtest.Log
	store *store.Store

	mu sync.Mutex
	// index is the index of the last command applied.
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
	log := schedtest.NewLog(t)
	return &memRaft{log: log, store: log.Store, index: log.Index()}
}

func (r *memRaft) Apply(ctx context.Context, t store.MessageType, req any) (any, uint64, error) {
	if err := ctx.Err(); err != nil {
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
	resp, index, err := r.log.Apply(t, req)
	if index == 0 {
		return nil, 0, err // not encoded: nothing applied
	}
	r.index = index
	if err != nil {
		return nil, index, err
	}
	if r.after != nil {
		r.after(t, index)
	}
	return resp, index, nil
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
