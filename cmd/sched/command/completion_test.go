package command

import (
	"strconv"
	"testing"
)

// The shell's completion request lists the matching command names.
func TestCompletion(t *testing.T) {
	comp := func(line string) result {
		return runCLI(t, nil, runOpts{env: map[string]string{"COMP_LINE": line, "COMP_POINT": strconv.Itoa(len(line))}}, "sched")
	}
	if r := comp("sched jo"); r.code != 0 || r.stdout != "job\n" {
		t.Errorf("sched jo -> %d %q", r.code, r.stdout)
	}
	if r := comp("sched job h"); r.stdout != "history\n" {
		t.Errorf("sched job h -> %q", r.stdout)
	}
	if r := comp("sched s"); r.stdout != lines("server", "service", "status", "system") {
		t.Errorf("sched s -> %q", r.stdout)
	}
	// Groups inside groups complete too: the tree is walked to its leaves.
	if r := comp("sched job periodic f"); r.stdout != "force\n" {
		t.Errorf("sched job periodic f -> %q", r.stdout)
	}
	if r := comp("sched operator gossip keyring u"); r.stdout != "use\n" {
		t.Errorf("sched operator gossip keyring u -> %q", r.stdout)
	}
	if r := comp("sched job status we"); r.stdout != "" {
		t.Errorf("past the command names -> %q", r.stdout)
	}
}
