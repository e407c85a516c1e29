package driver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The helper "client" is this test binary run again: it starts one task
// and exits without stopping it, as a client process that dies does.
const helperEnv = "SCHED_RAWEXEC_HELPER_CONFIG"

// TestHelperClientStartsTask is not a test: it is the helper client, and
// does nothing unless run by TestRawExecRecoverAcrossProcesses.
func TestHelperClientStartsTask(t *testing.T) {
	raw := os.Getenv(helperEnv)
	if raw == "" {
		t.Skip("helper process only")
	}
	var cfg TaskConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	h, err := NewRawExec(nil).StartTask(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	json.NewEncoder(os.Stdout).Encode(h)
	// Exit at once: the task keeps running, now nobody's child here.
	os.Exit(0)
}

// TestRawExecRecoverAcrossProcesses restarts the "client" for real: the
// task was started by another process that has exited, so it is not this
// process's child; its output pipe outlived its first reader.
func TestRawExecRecoverAcrossProcesses(t *testing.T) {
	cfg := shTask(t, `trap 'echo got-usr1' USR1; trap 'exit 9' TERM; echo ready; while :; do sleep 0.05; done`)
	raw, _ := json.Marshal(cfg)
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperClientStartsTask$")
	helper.Env = append(os.Environ(), helperEnv+"="+string(raw))
	out, err := helper.Output()
	if err != nil {
		t.Fatalf("helper client: %v\n%s", err, out)
	}
	var h TaskHandle
	line := out[:strings.IndexByte(string(out), '\n')+1]
	if err := json.Unmarshal(line, &h); err != nil || h.PID == 0 {
		t.Fatalf("handle %q: %v", out, err)
	}
	t.Cleanup(func() { syscall.Kill(-h.PID, syscall.SIGKILL) })

	d := &RawExec{RecoverPollInterval: 10 * time.Millisecond}
	if err := d.RecoverTask(&h); err != nil {
		t.Fatalf("RecoverTask: %v", err)
	}
	ch, err := d.WaitTask(context.Background(), cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Output written before and after the first client died arrives.
	waitLog(t, cfg, "stdout", "ready")
	if err := d.SignalTask(cfg.ID, "USR1"); err != nil {
		t.Fatal(err)
	}
	waitLog(t, cfg, "stdout", "got-usr1")
	if err := d.StopTask(cfg.ID, 5*time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	r := result(t, ch)
	// Exit 9 is known only if the poll saw the zombie before its new
	// parent reaped it.
	if r.Err != nil && !errors.Is(r.Err, ErrExitUnknown) || r.Err == nil && r.ExitCode != 9 {
		t.Fatalf("exit %+v", r)
	}
	t.Logf("recovered task's exit: %+v", r)
	if !gone(h.PID) {
		t.Fatal("task still running")
	}
}
