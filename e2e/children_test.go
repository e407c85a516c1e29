package e2e

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// batchShJob is a batch job of one raw_exec task running script in sh.
func batchShJob(id, script string) *state.Job {
	return &state.Job{
		ID: id, Type: state.JobTypeBatch, Datacenters: []string{"*"},
		TaskGroups: []*state.TaskGroup{{
			Name: "run", Count: 1,
			RestartPolicy: &state.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: time.Second, Mode: state.RestartPolicyModeFail},
			Tasks: []*state.Task{{
				Name: "sh", Driver: "raw_exec",
				Config:      map[string]any{"command": "sh", "args": []any{"-c", script}},
				KillTimeout: time.Second,
				Resources:   &state.Resources{CPU: 20, MemoryMB: 16},
			}},
		}},
	}
}

// completeChild waits until child's allocation completed and returns it.
func completeChild(t *testing.T, c *api.Client, child string) *state.Allocation {
	t.Helper()
	var done *state.AllocListStub
	testutil.WaitForErr(t, 60*time.Second, "the child "+child+" to complete", func() error {
		allocs, _, err := c.Jobs().Allocations(context.Background(), child, true, nil)
		if err != nil {
			return err
		}
		for _, a := range allocs {
			if a.ClientStatus == state.AllocClientStatusComplete {
				done = a
				return nil
			}
		}
		return fmt.Errorf("%d allocations, none complete", len(allocs))
	})
	return fullAllocs(t, c, []*state.AllocListStub{done})[0]
}

// TestDispatchedTaskReadsItsPayload: `sched agent -dev` runs a dispatched
// instance of a parameterized raw_exec job, whose task reads the payload
// from its local dir; the child is read back by its escaped ID.
func TestDispatchedTaskReadsItsPayload(t *testing.T) {
	a := newDevAgent(t)
	a.startDev()
	c := a.client()
	ctx := context.Background()

	job := batchShJob("report", `cat "$SCHED_TASK_DIR/input.txt"; echo " for $SCHED_META_user"`)
	job.ParameterizedJob = &state.ParameterizedJobConfig{Payload: state.DispatchPayloadRequired, MetaRequired: []string{"user"}}
	job.TaskGroups[0].Tasks[0].DispatchPayload = &state.DispatchPayloadConfig{File: "input.txt"}
	if _, _, err := c.Jobs().Register(ctx, job, nil, nil); err != nil {
		t.Fatal(err)
	}
	resp, _, err := c.Jobs().Dispatch(ctx, "report", &state.DispatchRequest{Payload: []byte("the payload"), Meta: map[string]string{"user": "ann"}}, "once", nil)
	if err != nil {
		t.Fatal(err)
	}
	child, _, err := c.Jobs().Info(ctx, resp.DispatchedJobID, nil)
	if err != nil || child.ParentID != "report" || !child.Dispatched {
		t.Fatalf("child %s: %+v, %v", resp.DispatchedJobID, child, err)
	}
	done := completeChild(t, c, resp.DispatchedJobID)
	logs, err := c.AllocFS().Logs(ctx, done.ID, &api.LogsOptions{Task: "sh"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(logs)
	logs.Close()
	if got := strings.TrimSpace(string(out)); got != "the payload for ann" {
		t.Errorf("task printed %q, want the payload and the meta", got)
	}
	// The same idempotency token answers the same instance.
	again, _, err := c.Jobs().Dispatch(ctx, "report", &state.DispatchRequest{Payload: []byte("x"), Meta: map[string]string{"user": "bob"}}, "once", nil)
	if err != nil || again.DispatchedJobID != resp.DispatchedJobID {
		t.Errorf("second dispatch with the token: %+v, %v; want %s", again, err, resp.DispatchedJobID)
	}
}

// TestPeriodicJobLaunchesOnSchedule: a raw_exec job with a cron spec that
// fires every two seconds launches children that run and complete, one
// per launch time.
func TestPeriodicJobLaunchesOnSchedule(t *testing.T) {
	a := newDevAgent(t)
	a.startDev()
	c := a.client()
	ctx := context.Background()

	job := batchShJob("tick", `echo tick`)
	job.Periodic = &state.PeriodicConfig{Enabled: true, SpecType: state.PeriodicSpecCron, Spec: "*/2 * * * * * *"}
	if _, _, err := c.Jobs().Register(ctx, job, nil, nil); err != nil {
		t.Fatal(err)
	}
	var children []*state.JobListStub
	testutil.WaitForErr(t, 30*time.Second, "two launches", func() error {
		jobs, _, err := c.Jobs().List(ctx, &api.QueryOptions{Prefix: "tick/"})
		if err != nil {
			return err
		}
		children = jobs
		if len(jobs) < 2 {
			return fmt.Errorf("%d children", len(jobs))
		}
		return nil
	})
	seen := map[string]bool{}
	for _, ch := range children {
		if seen[ch.ID] || ch.ParentID != "tick" || !strings.HasPrefix(ch.ID, "tick/periodic-") {
			t.Errorf("child %+v", ch)
		}
		seen[ch.ID] = true
	}
	completeChild(t, c, children[0].ID)
	force, _, err := c.Jobs().PeriodicForce(ctx, "tick", nil)
	if err != nil || force.EvalID == "" {
		t.Fatalf("force: %+v, %v", force, err)
	}
}
