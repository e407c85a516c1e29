package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
)

// A normal start and stop of `sched agent -dev` logs nothing at WARN or
// above: the client waits for the leader before it registers (no
// "not the cluster leader" error, no failed registration), and raft's
// first election at start is not a warning. Every line at info and above
// is read, so a new false alarm fails here.
func TestDevAgentStartsAndStopsQuietly(t *testing.T) {
	dir := t.TempDir()
	a := &agent{t: t, dataDir: filepath.Join(dir, "data"), httpPort: freePort(t)}
	a.config = filepath.Join(dir, "dev.hcl")
	cfg := fmt.Sprintf(`
name      = "e2e-quiet"
data_dir  = %q
log_level = "info"
ports {
  http   = %d
  raft   = %d
  gossip = %d
}
`, a.dataDir, a.httpPort, freePort(t), freePort(t))
	if err := os.WriteFile(a.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a.startDev()
	// The node is ready in the servers' state a moment before its client
	// logs the registration's answer: stop only once it has.
	testutil.WaitForErr(t, 30*time.Second, "the client to log its registration", func() error {
		if !strings.Contains(a.out.String(), `msg="node registered"`) {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	out := a.out.String()
	var logLines int
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, " level=") {
			continue // the banner
		}
		logLines++
		if strings.Contains(line, " level=WARN ") || strings.Contains(line, " level=ERROR ") {
			t.Errorf("a normal start and stop logged: %s", line)
		}
	}
	// The log was read: the lines every start and stop writes are there.
	for _, want := range []string{`msg="leadership established"`, `msg="node registered"`, `msg="raft node stopped"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the agent's output lacks %s (%d log lines):\n%s", want, logLines, out)
		}
	}
}
