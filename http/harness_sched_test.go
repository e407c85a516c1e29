package http

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/schedhq/sched/http/jobs"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// fakeLeader is the LeaderServices double: it records heartbeats and GC
// requests and answers with ttl, or with err when set.
type fakeLeader struct {
	mu         sync.Mutex
	ttl        time.Duration
	err        error
	heartbeats []string
	gcs        int
}

var _ jobs.LeaderServices = (*fakeLeader)(nil)

func (f *fakeLeader) Heartbeat(nodeID string) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	f.heartbeats = append(f.heartbeats, nodeID)
	return f.ttl, nil
}

func (f *fakeLeader) ForceGC(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.gcs++
	return ctx.Err()
}

func (f *fakeLeader) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// testTTL is the heartbeat TTL the fake leader hands out.
const testTTL = 17 * time.Second

// newSchedHarness is a harness whose server has leader services.
func newSchedHarness(t testing.TB) (*harness, *fakeLeader) {
	t.Helper()
	fl := &fakeLeader{ttl: testTTL}
	h := newHarnessWith(t, store.StoreConfig{}, func(c *testConfig) { c.Jobs.Leader = fl })
	return h, fl
}

// nodeID is a deterministic node UUID.
func nodeID(i int) string { return fmt.Sprintf("10000000-0000-4000-8000-%012d", i) }

// allocID is a deterministic allocation UUID.
func allocID(i int) string { return fmt.Sprintf("a0000000-0000-4000-8000-%012d", i) }

// testNode is a ready-to-register node in dc1 with one healthy driver.
func testNode(i int) *state.Node {
	return &state.Node{
		ID:         nodeID(i),
		Name:       fmt.Sprintf("node-%d", i),
		Datacenter: "dc1",
		HTTPAddr:   fmt.Sprintf("10.0.0.%d:4646", i),
		Attributes: map[string]string{"kernel.name": "linux", "unique.hostname": fmt.Sprintf("host-%d", i)},
		NodeResources: &state.NodeResources{
			CPU: 4000, MemoryMB: 8192, DiskMB: 100 << 10,
		},
		Drivers: map[string]*state.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
	}
}

// registerNode registers n through the API and returns the answer.
func (h *harness) registerNode(n *state.Node) *state.NodeUpdateResponse {
	h.t.Helper()
	var out state.NodeUpdateResponse
	h.ok(http.MethodPut, "/v1/node/register", map[string]any{"Node": n}, &out)
	return &out
}

// node reads a node from the store, failing the test when it is missing.
func (h *harness) node(id string) *state.Node {
	h.t.Helper()
	n, err := h.store.NodeByID(nil, id)
	if err != nil || n == nil {
		h.t.Fatalf("node %s: %v, %v", id, n, err)
	}
	return n
}

// eval reads an evaluation from the store, failing when it is missing.
func (h *harness) eval(id string) *state.Evaluation {
	h.t.Helper()
	e, err := h.store.EvalByID(nil, id)
	if err != nil || e == nil {
		h.t.Fatalf("eval %s: %v, %v", id, e, err)
	}
	return e
}

// alloc reads an allocation from the store, failing when it is missing.
func (h *harness) alloc(id string) *state.Allocation {
	h.t.Helper()
	a, err := h.store.AllocByID(nil, id)
	if err != nil || a == nil {
		h.t.Fatalf("alloc %s: %v, %v", id, a, err)
	}
	return a
}

// placeAlloc writes allocation i of job's first group on node, as a plan
// would, and returns its ID.
func (h *harness) placeAlloc(i int, job *state.Job, node, clientStatus string) string {
	h.t.Helper()
	id := allocID(i)
	a := &state.Allocation{
		ID: id, Namespace: job.Namespace, JobID: job.ID, EvalID: "e-" + id, NodeID: node,
		Name: fmt.Sprintf("%s.%s[%d]", job.ID, job.TaskGroups[0].Name, i), TaskGroup: job.TaskGroups[0].Name,
		DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: clientStatus,
	}
	h.apply(store.AllocUpdateRequestType, &store.AllocUpdateRequest{Allocs: []*state.Allocation{a}, Now: testNow.UnixNano()})
	return id
}

// registered returns the stored version of a job registered through h.
func (h *harness) registered(job *state.Job) *state.Job {
	h.t.Helper()
	ns := job.Namespace
	if ns == "" {
		ns = state.DefaultNamespace
	}
	j := h.job(ns, job.ID)
	if j == nil {
		h.t.Fatalf("job %s/%s not registered", ns, job.ID)
	}
	return j
}

// writes returns how many commands reached the store so far.
func (h *harness) writes() int {
	return h.writer.Writes()
}

// systemJob is a system job with one group of one task.
func systemJob(id string) *state.Job {
	j := testJob(id)
	j.Type = state.JobTypeSystem
	j.TaskGroups[0].Count = 1
	return j
}
