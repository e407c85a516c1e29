package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// newDevAgent writes the config of a `sched agent -dev` with its own
// ports and a data dir of its own (so that it survives a restart).
func newDevAgent(t *testing.T) *agent {
	t.Helper()
	dir := t.TempDir()
	a := &agent{t: t, dataDir: filepath.Join(dir, "data"), httpPort: freePort(t)}
	a.config = filepath.Join(dir, "dev.hcl")
	cfg := fmt.Sprintf(`
name      = "e2e-dev"
data_dir  = %q
log_level = "warn"
ports {
  http   = %d
  raft   = %d
  gossip = %d
}
`, a.dataDir, a.httpPort, freePort(t), freePort(t))
	if err := os.WriteFile(a.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return a
}

// startDev runs the agent with -dev and waits until its client's node is
// ready.
func (a *agent) startDev() {
	a.t.Helper()
	a.run("the dev agent's node to be ready", func(c *api.Client) error {
		nodes, _, err := c.Nodes().List(context.Background(), nil)
		if err != nil {
			return err
		}
		if len(nodes) != 1 || nodes[0].Status != state.NodeStatusReady {
			return fmt.Errorf("nodes: %d", len(nodes))
		}
		return nil
	}, "agent", "-dev", "-config", a.config)
}

// httpServerJob is a service job of count allocations, each a raw_exec
// python3 HTTP server on its dynamic port, registered as a service.
func httpServerJob(id string, count int) *state.Job {
	return &state.Job{
		ID: id, Type: state.JobTypeService, Datacenters: []string{"*"},
		TaskGroups: []*state.TaskGroup{{
			Name: "web", Count: count,
			Networks:      []*state.NetworkResource{{DynamicPorts: []state.Port{{Label: "http"}}}},
			RestartPolicy: &state.RestartPolicy{Attempts: 3, Interval: time.Minute, Delay: 200 * time.Millisecond, Mode: state.RestartPolicyModeFail},
			Services:      []*state.Service{{Name: id + "-http", PortLabel: "http"}},
			Tasks: []*state.Task{{
				Name: "server", Driver: "raw_exec",
				Config: map[string]any{
					"command": "python3",
					"args":    []any{"-m", "http.server", "${SCHED_PORT_http}", "--bind", "127.0.0.1"},
				},
				KillTimeout: 2 * time.Second,
				Resources:   &state.Resources{CPU: 50, MemoryMB: 32},
			}},
		}},
	}
}

// allocPort is the host port an allocation got for label.
func allocPort(a *state.Allocation, label string) int {
	if a.AllocatedResources == nil {
		return 0
	}
	for _, p := range a.AllocatedResources.Shared.Ports {
		if p.Label == label {
			return p.Value
		}
	}
	return 0
}

// serverPIDs finds the live processes serving `http.server <port>`, by
// their command lines in /proc.
func serverPIDs(port int) []int {
	entries, _ := os.ReadDir("/proc")
	want := []byte("http.server\x00" + strconv.Itoa(port) + "\x00")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmd, want) {
			continue
		}
		if stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); isZombie(stat) {
			continue
		}
		out = append(out, pid)
	}
	return out
}

func isZombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// killServers kills whatever still serves the ports: a safety net so a
// failed test leaves no process behind.
func killServers(ports []int) {
	for _, p := range ports {
		for _, pid := range serverPIDs(p) {
			syscall.Kill(-pid, syscall.SIGKILL)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// serves reports whether something answers HTTP on the port.
func serves(port int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// runningAllocs waits until count allocations of job run and returns them.
func runningAllocs(t *testing.T, c *api.Client, job string, count int) []*state.Allocation {
	t.Helper()
	var out []*state.AllocListStub
	testutil.WaitForErr(t, 60*time.Second, fmt.Sprintf("%d running allocations of %s", count, job), func() error {
		allocs, _, err := c.Jobs().Allocations(context.Background(), job, false, nil)
		if err != nil {
			return err
		}
		out = out[:0]
		var states []string
		for _, a := range allocs {
			states = append(states, a.ClientStatus)
			if a.ClientStatus == state.AllocClientStatusRunning && a.DesiredStatus == state.AllocDesiredStatusRun {
				out = append(out, a)
			}
		}
		if len(out) != count {
			return fmt.Errorf("statuses %s", strings.Join(states, ","))
		}
		return nil
	})
	return fullAllocs(t, c, out)
}

// fullAllocs reads the whole allocation (job and resources) of each list
// entry.
func fullAllocs(t *testing.T, c *api.Client, stubs []*state.AllocListStub) []*state.Allocation {
	t.Helper()
	out := make([]*state.Allocation, len(stubs))
	for i, s := range stubs {
		a, _, err := c.Allocations().Info(context.Background(), s.ID, &api.QueryOptions{Namespace: s.Namespace})
		if err != nil {
			t.Fatalf("allocation %s: %v", s.ID, err)
		}
		out[i] = a
	}
	return out
}

func readProcStat(pid int) ([]byte, error) {
	return os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
}
