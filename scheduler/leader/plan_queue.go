package leader

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
)

// PlanQueue holds submitted plans for the plan applier, by priority
// (highest first) and then in submission order. It is enabled while the
// plan applier runs; disabling it fails every queued plan with
// ErrNotLeader, so a worker waiting on one gives up rather than hangs.
type PlanQueue struct {
	mu      sync.Mutex
	enabled bool
	queue   planHeap
	seq     uint64
	readyCh chan struct{}
	// inflight holds, as of the applier's last change, what each commit
	// in flight adds to its nodes (commitOp.adds), for the workers to
	// rank with (Inflight). Never changed once published.
	inflight atomic.Pointer[[]*InflightCommit]
}

// InflightCommit is what a plan commit in flight adds to the nodes it
// places on, as the workers see it (PlanQueue.Inflight).
type InflightCommit struct {
	// Probe is the ID of one allocation the commit creates. Raft applies
	// a commit's entry whole, so a state that holds Probe holds every
	// allocation of the commit, and one that does not holds none.
	Probe string
	// Usage is, by node, what the allocations the commit creates were
	// granted, and how many they are (Allocs). Allocations it updates in
	// place are not in it: the state counts them already.
	Usage map[string]state.NodeUsage
}

// inflightCommit sums the live allocations result creates (those not
// stored yet: no CreateIndex) by node. It returns nil when result
// creates none.
func inflightCommit(result *scheduler.PlanResult) *InflightCommit {
	var c *InflightCommit
	for node, allocs := range result.NodeAllocation {
		for _, a := range allocs {
			if a.CreateIndex != 0 || a.Terminal() {
				continue
			}
			if c == nil {
				c = &InflightCommit{Probe: a.ID, Usage: map[string]state.NodeUsage{}}
			}
			u := c.Usage[node]
			cpu, mem, disk := a.AllocatedResources.Totals()
			u.NodeID = node
			u.CPU += cpu
			u.MemoryMB += mem
			u.DiskMB += disk
			u.Allocs++
			c.Usage[node] = u
		}
	}
	return c
}

// setInflight publishes what the commits in flight add to their nodes.
func (q *PlanQueue) setInflight(ops []*commitOp) {
	var m []*InflightCommit
	for _, op := range ops {
		if op.adds != nil {
			m = append(m, op.adds)
		}
	}
	if len(m) == 0 {
		q.inflight.Store(nil)
		return
	}
	q.inflight.Store(&m)
}

// Inflight returns what the plan commits in flight add to their nodes,
// oldest first; read only. Some may have landed already.
func (q *PlanQueue) Inflight() []*InflightCommit {
	if m := q.inflight.Load(); m != nil {
		return *m
	}
	return nil
}

// NewPlanQueue returns a disabled queue.
func NewPlanQueue() *PlanQueue {
	return &PlanQueue{readyCh: make(chan struct{})}
}

// PendingPlan is a plan waiting for, or being handled by, the applier.
type PendingPlan struct {
	Plan       *scheduler.Plan
	EnqueuedAt time.Time
	seq        uint64
	done       chan struct{}
	result     *scheduler.PlanResult
	err        error
	once       sync.Once
}

// respond delivers the applier's answer; later answers are ignored.
func (p *PendingPlan) respond(result *scheduler.PlanResult, err error) {
	p.once.Do(func() {
		p.result, p.err = result, err
		close(p.done)
	})
}

// Wait returns the applier's answer, or ctx's error when ctx ends first.
func (p *PendingPlan) Wait(ctx context.Context) (*scheduler.PlanResult, error) {
	select {
	case <-p.done:
		return p.result, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// SetEnabled turns the queue on or off. Turning it off fails every queued
// plan with ErrNotLeader.
func (q *PlanQueue) SetEnabled(on bool) {
	q.mu.Lock()
	q.enabled = on
	var dropped []*PendingPlan
	if !on {
		dropped = q.queue
		q.queue = nil
	}
	close(q.readyCh)
	q.readyCh = make(chan struct{})
	q.mu.Unlock()
	for _, p := range dropped {
		p.respond(nil, ErrNotLeader)
	}
}

// Enqueue queues a plan for the applier.
func (q *PlanQueue) Enqueue(plan *scheduler.Plan) (*PendingPlan, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.enabled {
		return nil, ErrNotLeader
	}
	q.seq++
	p := &PendingPlan{Plan: plan, EnqueuedAt: time.Now(), seq: q.seq, done: make(chan struct{})}
	heap.Push(&q.queue, p)
	close(q.readyCh)
	q.readyCh = make(chan struct{})
	return p, nil
}

// Dequeue waits for the next plan. It returns ErrNotLeader when the queue
// is disabled and ctx's error when ctx ends.
func (q *PlanQueue) Dequeue(ctx context.Context) (*PendingPlan, error) {
	for {
		q.mu.Lock()
		if !q.enabled {
			q.mu.Unlock()
			return nil, ErrNotLeader
		}
		if q.queue.Len() > 0 {
			p := heap.Pop(&q.queue).(*PendingPlan)
			q.mu.Unlock()
			return p, nil
		}
		ch := q.readyCh
		q.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Len returns the number of queued plans.
func (q *PlanQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.queue.Len()
}

// ErrPlanTokenMismatch: the plan's eval was redelivered since the
// scheduler started on it, so another worker owns the eval now.
var ErrPlanTokenMismatch = errors.New("plan refused: its evaluation token is no longer outstanding")

// planHeap orders pending plans by priority, then submission.
type planHeap []*PendingPlan

var _ heap.Interface = (*planHeap)(nil)

func (h planHeap) Len() int { return len(h) }
func (h planHeap) Less(i, j int) bool {
	if h[i].Plan.Priority != h[j].Plan.Priority {
		return h[i].Plan.Priority > h[j].Plan.Priority
	}
	return h[i].seq < h[j].seq
}
func (h planHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *planHeap) Push(x any)   { *h = append(*h, x.(*PendingPlan)) }
func (h *planHeap) Pop() any {
	old := *h
	n := len(old)
	p := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return p
}
