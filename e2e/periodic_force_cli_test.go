package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// TestPeriodicForceCLIFollowsTheChild: `sched job periodic force` against
// the real agent follows the launched child's evaluation to its end and
// exits 0 (it used to wait for ever among the parent's evaluations).
func TestPeriodicForceCLIFollowsTheChild(t *testing.T) {
	a := newDevAgent(t)
	a.startDev()
	c := a.client()

	job := batchShJob("nightly", `echo ran`)
	// Once a year: only the forced launch runs during the test.
	job.Periodic = &state.PeriodicConfig{Enabled: true, SpecType: state.PeriodicSpecCron, Spec: "0 0 1 1 *"}
	if _, _, err := c.Jobs().Register(context.Background(), job, nil, nil); err != nil {
		t.Fatal(err)
	}
	// The deadline only bounds a regression; the command returns as soon
	// as the evaluation is done.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, schedBin, "job", "periodic", "force", "nightly")
	cmd.Env = append(os.Environ(), "SCHED_ADDR="+a.addr())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("job periodic force did not return:\n%s", out.String())
	}
	if err != nil || !strings.Contains(out.String(), `finished with status "complete"`) {
		t.Fatalf("job periodic force: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `Allocation "`) {
		t.Errorf("the child's placement is not shown:\n%s", out.String())
	}
}
