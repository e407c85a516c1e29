package client

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// The order file: every task appends a line to alloc/order, so the test
// reads the real order in which processes ran.
const orderFile = `"$SCHED_ALLOC_DIR/order"`

func hook(t *state.Task, h string, sidecar bool) *state.Task {
	t.Lifecycle = &state.TaskLifecycleConfig{Hook: h, Sidecar: sidecar}
	return t
}

func TestLifecycleOrder(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	j := job(state.JobTypeBatch,
		sh("main", `echo main-start >> `+orderFile+`; sleep 0.4; echo main-end >> `+orderFile),
		hook(sh("init", `sleep 0.2; echo init >> `+orderFile), state.TaskLifecycleHookPrestart, false),
		hook(sh("side", `echo side-start >> `+orderFile+`; trap 'echo side-killed >> `+orderFile+`; exit 0' INT TERM; while :; do sleep 0.05; done`), state.TaskLifecycleHookPrestart, true),
		// The client starts poststart once main's process has started,
		// which can be before main's shell reaches its first echo: the hook
		// lets main's first line land before it writes its own.
		hook(sh("after", `sleep 0.1; echo poststart >> `+orderFile), state.TaskLifecycleHookPoststart, false),
		hook(sh("cleanup", `echo poststop >> `+orderFile), state.TaskLifecycleHookPoststop, false),
	)
	a := allocFor(c, j)
	fs.addAlloc(a)
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusComplete)
	lines := strings.Fields(readFile(t, allocPathOf(c, a.ID, "alloc", "order")))
	pos := map[string]int{}
	for i, l := range lines {
		pos[l] = i
	}
	for _, want := range []string{"init", "side-start", "main-start", "poststart", "main-end", "side-killed", "poststop"} {
		if _, ok := pos[want]; !ok {
			t.Fatalf("%s never ran; order %v; %s", want, lines, statusOf(got))
		}
	}
	before := func(x, y string) {
		if pos[x] >= pos[y] {
			t.Errorf("%s ran after %s: %v", x, y, lines)
		}
	}
	before("init", "main-start")      // prestart runs to completion first
	before("side-start", "main-end")  // the sidecar runs alongside
	before("main-start", "poststart") // poststart after the main task started
	before("main-end", "side-killed") // sidecars are stopped once main tasks end
	before("side-killed", "poststop") // poststop runs last
	for name, ts := range got.TaskStates {
		if ts.State != state.TaskStateDead || ts.Failed {
			t.Errorf("task %s: %s failed=%v", name, ts.State, ts.Failed)
		}
	}
}

func TestPrestartFailureFailsAlloc(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	j := job(state.JobTypeBatch,
		sh("main", `echo ran > "$SCHED_ALLOC_DIR/main-ran"`),
		hook(sh("init", `exit 3`), state.TaskLifecycleHookPrestart, false),
	)
	restartPolicy(j, 0, 0, time.Minute, state.RestartPolicyModeFail)
	a := allocFor(c, j)
	fs.addAlloc(a)
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusFailed)
	if readFile(t, allocPathOf(c, a.ID, "alloc", "main-ran")) != "" {
		t.Fatal("the main task ran although its prestart task failed")
	}
	if ts := got.TaskStates["init"]; !ts.Failed || ts.Events[len(ts.Events)-1].Type != state.TaskNotRestarting {
		t.Fatalf("init: %s", statusOf(got))
	}
	if ts := got.TaskStates["main"]; ts.State != state.TaskStateDead || !ts.StartedAt.IsZero() {
		t.Fatalf("main: %s", statusOf(got))
	}
}

func TestLeaderDeathStopsSiblings(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	leader := sh("leader", `sleep 0.2; exit 0`)
	leader.Leader = true
	j := job(state.JobTypeBatch, leader, sh("follower", `exec sleep 30`))
	a := allocFor(c, j)
	fs.addAlloc(a)
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusComplete)
	f := got.TaskStates["follower"]
	types := eventTypes(f)
	if !containsInOrder(types, state.TaskLeaderDead, state.TaskKilling, state.TaskKilled) || f.Failed {
		t.Fatalf("follower events %v (failed %v)", types, f.Failed)
	}
	if d := f.FinishedAt.Sub(f.StartedAt); d > 10*time.Second {
		t.Fatalf("follower ran %v: it was not stopped with its leader", d)
	}
}

func TestSiblingFailureStopsOthersAndFailsAlloc(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	j := job(state.JobTypeService, mock("bad", map[string]any{"run_for": "50ms", "exit_code": 2}), mock("good", nil))
	restartPolicy(j, 0, 0, time.Minute, state.RestartPolicyModeFail)
	a := allocFor(c, j)
	fs.addAlloc(a)
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusFailed)
	good := got.TaskStates["good"]
	if good.State != state.TaskStateDead || good.Failed || !containsInOrder(eventTypes(good), state.TaskSiblingFailed, state.TaskKilling, state.TaskKilled) {
		t.Fatalf("good: %s", statusOf(got))
	}
	var sib *state.TaskEvent
	for _, e := range good.Events {
		if e.Type == state.TaskSiblingFailed {
			sib = e
		}
	}
	if sib.FailedSibling != "bad" {
		t.Fatalf("FailedSibling = %q", sib.FailedSibling)
	}
	bad := got.TaskStates["bad"]
	if !bad.Failed {
		t.Fatalf("bad: %s", statusOf(got))
	}
	for _, e := range bad.Events {
		if e.Type == state.TaskTerminated && e.ExitCode != 2 {
			t.Fatalf("Terminated ExitCode = %d, want 2", e.ExitCode)
		}
	}
}

func TestSidecarFailureDoesNotFailAlloc(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	j := job(state.JobTypeBatch,
		mock("main", map[string]any{"run_for": "300ms"}),
		hook(mock("side", map[string]any{"run_for": "10ms", "exit_code": 1}), state.TaskLifecycleHookPrestart, true),
	)
	restartPolicy(j, 0, 0, time.Minute, state.RestartPolicyModeFail)
	a := allocFor(c, j)
	fs.addAlloc(a)
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusComplete)
	if !got.TaskStates["side"].Failed || got.TaskStates["main"].Failed {
		t.Fatalf("%s", statusOf(got))
	}
}

func containsInOrder(have []string, want ...string) bool {
	i := 0
	for _, h := range have {
		if i < len(want) && h == want[i] {
			i++
		}
	}
	return i == len(want)
}

func eventOf(ts *state.TaskState, typ string) *state.TaskEvent {
	for i := len(ts.Events) - 1; i >= 0; i-- {
		if ts.Events[i].Type == typ {
			return ts.Events[i]
		}
	}
	return nil
}

var _ = fmt.Sprintf
