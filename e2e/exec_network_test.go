package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// Exec tasks in a group network of mode bridge or none, on the real
// binary: each allocation gets a network namespace of the client's (with
// a veth pair to a bridge of the test's own in bridge mode) and its ports
// are forwarded from the host; when the allocation stops, nothing of it
// is left on the host.

// bridgeAgent is an exec agent whose bridge is the test's own.
func bridgeAgent(t *testing.T) (*agent, string) {
	t.Helper()
	a, _ := execAgent(t)
	bridge := fmt.Sprintf("se2e%d", os.Getpid()%100000)
	b, err := os.ReadFile(a.config)
	if err != nil {
		t.Fatal(err)
	}
	keys := fmt.Sprintf("  bridge_network_name = %q\n  bridge_network_subnet = \"10.231.%d.0/24\"\n  exec {", bridge, os.Getpid()%250)
	cfg := strings.Replace(string(b), "  exec {", keys, 1)
	if cfg == string(b) {
		t.Fatal("no client block with an exec block in the agent's config")
	}
	if err := os.WriteFile(a.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if left := networkLeftovers(bridge, ""); len(left) > 0 {
			t.Errorf("left on the host after the agent stopped: %v", left)
		}
	})
	return a, bridge
}

// networkLeftovers lists what of the bridge (and of the allocation, when
// allocID is set) is still on the host: the bridge, a veth, a namespace,
// an iptables rule.
func networkLeftovers(bridge, allocID string) []string {
	var out []string
	if _, err := os.Stat("/sys/class/net/" + bridge); err == nil {
		out = append(out, "bridge "+bridge)
	}
	if allocID != "" {
		veth := "sv" + strings.ReplaceAll(allocID, "-", "")[:12]
		if _, err := os.Stat("/sys/class/net/" + veth); err == nil {
			out = append(out, "veth "+veth)
		}
		if _, err := os.Stat("/var/run/netns/sched-" + allocID); err == nil {
			out = append(out, "netns sched-"+allocID)
		}
	}
	if b, err := exec.Command("iptables-save").Output(); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "sched bridge "+bridge) {
				out = append(out, "iptables "+l)
			}
		}
	}
	return out
}

// networkJob is one exec task running script, in a group network of the
// given mode with the port "http" mapped to 8080 in bridge mode.
func networkJob(id, mode, script string) *state.Job {
	j := execJob(id, state.JobTypeService, "shared", script, 64)
	nw := &state.NetworkResource{Mode: mode}
	if mode == "bridge" {
		nw.DynamicPorts = []state.Port{{Label: "http", To: 8080}}
	}
	j.TaskGroups[0].Networks = []*state.NetworkResource{nw}
	return j
}

// TestExecBridgeNetwork: an exec task in bridge mode answers HTTP on its
// mapped host port; the task sees only lo and eth0, with an address of
// the bridge's subnet; once the job is stopped no veth, namespace,
// bridge or iptables rule is left.
func TestExecBridgeNetwork(t *testing.T) {
	a, bridge := bridgeAgent(t)
	a.startDev()
	c := a.client()
	script := `mkdir -p /local/www && echo hello-from-the-bridge > /local/www/index.html
cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' '; echo
echo "port:$SCHED_PORT_http host:$SCHED_HOST_PORT_http"
exec busybox httpd -f -p $SCHED_PORT_http -h /local/www`
	if _, _, err := c.Jobs().Register(context.Background(), networkJob("bridged", "bridge", script), nil, nil); err != nil {
		t.Fatal(err)
	}
	allocs := runningAllocs(t, c, "bridged", 1)
	al := allocs[0]
	nets := al.AllocatedResources.Shared.Networks
	if len(nets) == 0 || len(nets[0].DynamicPorts) == 0 {
		t.Fatalf("allocation's networks %+v", nets)
	}
	hostPort := nets[0].DynamicPorts[0].Value
	url := fmt.Sprintf("http://127.0.0.1:%d/index.html", hostPort)
	get := func(what string) {
		t.Helper()
		var body string
		testutil.WaitForErr(t, 30*time.Second, what, func() error {
			resp, err := http.Get(url)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
			if resp.StatusCode != 200 {
				return fmt.Errorf("%s: %d %s", url, resp.StatusCode, body)
			}
			return nil
		})
		if !strings.Contains(body, "hello-from-the-bridge") {
			t.Fatalf("body %q", body)
		}
	}
	get("the task to answer on its mapped port")
	// A client killed and restarted finds the namespace again and
	// forwards the port again, to the same task.
	a.kill()
	a.startDev()
	get("the task to answer again after a client restart")
	if al2, _, err := c.Allocations().Info(context.Background(), al.ID, nil); err != nil || al2.TaskStates["t"].Restarts != 0 {
		t.Fatalf("after the client restart: %v, task %+v", err, al2.TaskStates["t"])
	}
	out := taskLog(a, al.ID)
	if !strings.Contains(out, "eth0 lo") || !strings.Contains(out, fmt.Sprintf("port:8080 host:%d", hostPort)) {
		t.Errorf("the task's interfaces and ports:\n%s", out)
	}
	ns := "/var/run/netns/sched-" + al.ID
	if _, err := exec.LookPath("ip"); err != nil {
		t.Logf("no ip (iproute2) on the PATH: the namespace's address is not checked")
	} else if b, err := exec.Command("nsenter", "--net="+ns, "ip", "-4", "-o", "addr", "show", "eth0").Output(); err != nil || !strings.Contains(string(b), fmt.Sprintf("10.231.%d.", os.Getpid()%250)) {
		t.Errorf("eth0 of %s: %s (%v)", ns, b, err)
	}
	// A command run in the task (alloc exec) is in its network namespace
	// too: it reaches the task's server on the namespace's own port.
	var execOut bytes.Buffer
	code, err := c.Allocations().Exec(context.Background(), al.ID, &api.ExecOptions{Task: "t",
		Command:     []string{"/bin/sh", "-c", "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ' '; busybox wget -q -O - http://127.0.0.1:8080/index.html"},
		ExecStreams: api.ExecStreams{Stdout: &execOut, Stderr: &execOut}}, nil)
	if err != nil || code != 0 || !strings.Contains(execOut.String(), "eth0 lo") || !strings.Contains(execOut.String(), "hello-from-the-bridge") {
		t.Errorf("alloc exec in the bridge task: code %d, %v:\n%s", code, err, execOut.String())
	}
	if left := networkLeftovers(bridge, al.ID); len(left) < 3 {
		t.Errorf("while running, the host has %v; want the bridge, the veth and the namespace", left)
	}
	if _, _, err := c.Jobs().Deregister(context.Background(), "bridged", true, nil, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitForErr(t, time.Minute, "the allocation's network to go", func() error {
		if left := networkLeftovers(bridge, al.ID); len(left) > 0 {
			return fmt.Errorf("left: %v", left)
		}
		return nil
	})
	if _, err := http.Get(url); err == nil {
		t.Errorf("%s still answers after the allocation stopped", url)
	}
}

// TestExecNoneNetwork: in mode none the task has a namespace with only
// its loopback, up.
func TestExecNoneNetwork(t *testing.T) {
	a, _ := execAgent(t)
	a.startDev()
	c := a.client()
	script := `cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' '; echo
(busybox nc -l -p 7070 -e echo pong &) ; sleep 0.2; echo ping | busybox nc 127.0.0.1 7070 && echo LOOPBACK-UP
echo ready; exec sleep 3600`
	if _, _, err := c.Jobs().Register(context.Background(), networkJob("isolatednet", "none", script), nil, nil); err != nil {
		t.Fatal(err)
	}
	allocs := runningAllocs(t, c, "isolatednet", 1)
	var out string
	testutil.WaitForErr(t, 30*time.Second, "the task's output", func() error {
		if out = taskLog(a, allocs[0].ID); !strings.Contains(out, "ready") {
			return fmt.Errorf("stdout %q", out)
		}
		return nil
	})
	if !strings.HasPrefix(out, "lo \n") {
		t.Errorf("interfaces of a task in mode none: %q, want only lo", strings.SplitN(out, "\n", 2)[0])
	}
	if !strings.Contains(out, "LOOPBACK-UP") {
		t.Errorf("the task's loopback does not carry a connection:\n%s", out)
	}
	ns := "/var/run/netns/sched-" + allocs[0].ID
	if _, err := os.Stat(ns); err != nil {
		t.Errorf("the allocation's namespace: %v", err)
	}
	if _, _, err := c.Jobs().Deregister(context.Background(), "isolatednet", true, nil, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, time.Minute, "the namespace to go", func() bool {
		_, err := os.Stat(ns)
		return os.IsNotExist(err)
	})
	if m, _ := filepath.Glob("/var/run/netns/sched-" + allocs[0].ID + "*"); len(m) > 0 {
		t.Errorf("left: %v", m)
	}
}
