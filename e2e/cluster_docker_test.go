//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
)

// The docker tests run the same three-server cluster as containers, so
// that partitions are real: `docker network disconnect` cuts a server off
// the cluster network. Each container is on two networks:
//
//   - "cl", the cluster network: the only addresses the servers advertise,
//     so Raft, gossip and forwarding all cross it;
//   - "ctl", an internal network (no route anywhere) through which only the
//     test reaches each server's HTTP API, partitioned or not.
//
// The image is FROM scratch with a static (CGO_ENABLED=0) sched binary;
// nothing is pulled. Without a Docker engine the tests skip.

// dockerCluster is three sched containers.
type dockerCluster struct {
	t       *testing.T
	id      string // random suffix of every name
	image   string
	clNet   string
	ctlNet  string
	clIPs   []string
	ctlIPs  []string
	names   []string
	cfgDirs []string

	mu      sync.Mutex
	clients map[int]*api.Client
}

// docker runs the docker CLI and returns its trimmed output.
func docker(args ...string) (string, error) {
	cmd := exec.Command("docker", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	s := strings.TrimSpace(out.String())
	if err != nil {
		return s, fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, s)
	}
	return s, nil
}

// needDocker skips the test without a usable Docker engine.
func needDocker(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("docker tests need Linux: the test reaches containers by their bridge IPs")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI in PATH: skipping the container partition tests")
	}
	if out, err := docker("info", "--format", "{{.ServerVersion}}"); err != nil {
		t.Skipf("no Docker engine (docker info failed): skipping the container partition tests: %s", out)
	}
}

// newDockerCluster builds the image and starts three servers.
func newDockerCluster(t *testing.T) *dockerCluster {
	t.Helper()
	needDocker(t)
	var b [4]byte
	rand.Read(b[:])
	c := &dockerCluster{t: t, id: hex.EncodeToString(b[:])}

	ctxDir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(ctxDir, "sched"), "github.com/schedhq/sched/cmd/sched")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("static build: %v\n%s", err, out)
	}
	dockerfile, err := os.ReadFile(filepath.Join("docker", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), dockerfile, 0o644); err != nil {
		t.Fatal(err)
	}
	c.image = "sched-e2e:" + c.id
	if out, err := docker("build", "-q", "-t", c.image, ctxDir); err != nil {
		t.Fatalf("image build: %v\n%s", err, out)
	}
	t.Cleanup(func() { docker("rmi", "-f", c.image) })

	c.clNet, c.ctlNet = "sched-e2e-cl-"+c.id, "sched-e2e-ctl-"+c.id
	clSubnet := c.createNetwork(c.clNet, false)
	ctlSubnet := c.createNetwork(c.ctlNet, true)
	for i := range 3 {
		c.clIPs = append(c.clIPs, fmt.Sprintf("%s.%d", clSubnet, 10+i))
		c.ctlIPs = append(c.ctlIPs, fmt.Sprintf("%s.%d", ctlSubnet, 10+i))
		c.names = append(c.names, fmt.Sprintf("sched-e2e-%s-s%d", c.id, i+1))
	}
	var join []string
	for _, ip := range c.clIPs {
		join = append(join, fmt.Sprintf("%q", ip))
	}
	for i, name := range c.names {
		dir := t.TempDir()
		cfg := fmt.Sprintf(`
name      = "s%d"
data_dir  = "/data"
bind_addr = "0.0.0.0"
log_level = "warn"
advertise {
  http   = %q
  raft   = %q
  gossip = %q
}
server {
  enabled          = true
  bootstrap_expect = 3
  retry_join       = [%s]
  retry_interval   = "1s"
}
`, i+1, c.clIPs[i], c.clIPs[i], c.clIPs[i], strings.Join(join, ", "))
		if err := os.WriteFile(filepath.Join(dir, "server.hcl"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		c.cfgDirs = append(c.cfgDirs, dir)
		if out, err := docker("create", "--name", name, "--network", c.clNet, "--ip", c.clIPs[i],
			"-v", dir+":/etc/sched:ro", c.image, "agent", "-config", "/etc/sched/server.hcl"); err != nil {
			t.Fatalf("create %s: %v\n%s", name, err, out)
		}
		t.Cleanup(func() {
			if t.Failed() {
				logs, _ := docker("logs", "--tail", "200", name)
				t.Logf("%s logs:\n%s", name, logs)
			}
			docker("rm", "-f", name)
		})
		if _, err := docker("network", "connect", "--ip", c.ctlIPs[i], c.ctlNet, name); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range c.names {
		if _, err := docker("start", name); err != nil {
			t.Fatal(err)
		}
	}
	for i := range c.names {
		c.waitReady(i, 60*time.Second)
	}
	return c
}

// createNetwork creates a bridge network on a random free /24 of
// 172.30.0.0/15 and returns the subnet's first three octets.
func (c *dockerCluster) createNetwork(name string, internal bool) string {
	c.t.Helper()
	for range 20 {
		n, _ := rand.Int(rand.Reader, big.NewInt(512))
		prefix := fmt.Sprintf("172.%d.%d", 30+n.Int64()/256, n.Int64()%256)
		args := []string{"network", "create", "--subnet", prefix + ".0/24"}
		if internal {
			args = append(args, "--internal")
		}
		out, err := docker(append(args, name)...)
		if err == nil {
			c.t.Cleanup(func() { docker("network", "rm", name) })
			return prefix
		}
		if !strings.Contains(out, "overlap") {
			c.t.Fatalf("network create: %v", err)
		}
	}
	c.t.Fatal("no free subnet for a docker network")
	return ""
}

// client reaches server i's HTTP API over the control network.
// client is server i's Go client, one per server for the whole test, so
// its connections are reused as a long-lived client's are: the servers
// cap open connections per client address (limits.http_max_conns_per_client),
// and the host is one address to them.
func (c *dockerCluster) client(i int) *api.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl := c.clients[i]; cl != nil {
		return cl
	}
	cl, err := api.NewClient(api.Config{Address: "http://" + c.ctlIPs[i] + ":4646"})
	if err != nil {
		c.t.Fatal(err)
	}
	if c.clients == nil {
		c.clients = map[int]*api.Client{}
	}
	c.clients[i] = cl
	return cl
}

func (c *dockerCluster) waitReady(i int, d time.Duration) {
	c.t.Helper()
	testutil.WaitForErr(c.t, d, c.names[i]+" to serve a consistent read", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _, err := c.client(i).Jobs().List(ctx, nil)
		return err
	})
}

// leader returns the index of the server that the servers in among agree
// leads, waiting for them to agree.
func (c *dockerCluster) leader(among []int, d time.Duration) int {
	c.t.Helper()
	leader := -1
	testutil.WaitForErr(c.t, d, "an agreed leader", func() error {
		var seen []string
		for _, i := range among {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			addr, err := c.client(i).Status().Leader(ctx)
			cancel()
			if err != nil {
				return err
			}
			seen = append(seen, addr)
		}
		leader = -1
		for _, i := range among {
			if seen[0] == c.clIPs[i]+":4647" {
				leader = i
			}
		}
		for _, a := range seen {
			if leader < 0 || a != seen[0] {
				return fmt.Errorf("leaders seen: %v", seen)
			}
		}
		return nil
	})
	return leader
}

// partition cuts server i off the cluster network; heal reconnects it with
// its address.
func (c *dockerCluster) partition(i int) {
	c.t.Helper()
	if _, err := docker("network", "disconnect", c.clNet, c.names[i]); err != nil {
		c.t.Fatal(err)
	}
}

func (c *dockerCluster) heal(i int) {
	c.t.Helper()
	if _, err := docker("network", "connect", "--ip", c.clIPs[i], c.clNet, c.names[i]); err != nil {
		c.t.Fatal(err)
	}
}

func statusCode(err error) int {
	var se *api.StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

func TestDockerPartitionMinorityRefusesWritesAndAllConverge(t *testing.T) {
	c := newDockerCluster(t)
	ctx := context.Background()
	all := []int{0, 1, 2}
	old := c.leader(all, 30*time.Second)
	before := map[string]uint64{}
	for i := range 10 {
		resp, _, err := c.client(i%3).Jobs().Register(ctx, smallJob(fmt.Sprintf("before-%d", i)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		before[fmt.Sprintf("before-%d", i)] = resp.JobModifyIndex
	}

	// Cut the leader off: it is the minority of one.
	c.partition(old)
	var majority []int
	for _, i := range all {
		if i != old {
			majority = append(majority, i)
		}
	}
	newLeader := c.leader(majority, 30*time.Second)
	t.Logf("partitioned %s; %s leads the majority", c.names[old], c.names[newLeader])

	// The majority keeps going, through either of its servers.
	during := map[string]uint64{}
	for n, i := range majority {
		for k := range 5 {
			id := fmt.Sprintf("during-%d-%d", n, k)
			resp, _, err := c.client(i).Jobs().Register(ctx, smallJob(id), nil, nil)
			if err != nil {
				t.Fatalf("write through %s in the majority: %v", c.names[i], err)
			}
			during[id] = resp.JobModifyIndex
		}
		if _, _, err := c.client(i).Jobs().Info(ctx, "during-0-0", nil); err != nil {
			t.Fatalf("consistent read on %s in the majority: %v", c.names[i], err)
		}
	}

	// The minority refuses writes and consistent reads with 503, and
	// serves stale reads of what it had.
	minority := c.client(old)
	testutil.WaitForErr(t, 30*time.Second, "the minority to refuse a write with 503", func() error {
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_, _, err := minority.Jobs().Register(rctx, smallJob("minority-write"), nil, nil)
		if statusCode(err) != 503 {
			return fmt.Errorf("write on the minority: %v", err)
		}
		return nil
	})
	for range 2 {
		if _, _, err := minority.Jobs().Register(ctx, smallJob("minority-write"), nil, nil); statusCode(err) != 503 {
			t.Fatalf("write on the minority: %v, want 503", err)
		}
	}
	if _, _, err := minority.Jobs().List(ctx, nil); statusCode(err) != 503 {
		t.Fatalf("consistent read on the minority: %v, want 503", err)
	}
	stale, _, err := minority.Jobs().List(ctx, &api.QueryOptions{AllowStale: true, Prefix: "before-"})
	if err != nil || len(stale) != len(before) {
		t.Fatalf("stale read on the minority: %d jobs, %v; want %d", len(stale), err, len(before))
	}

	// Heal: every server converges to the same state, with every
	// acknowledged write and nothing the minority refused.
	c.heal(old)
	want := map[string]uint64{}
	for k, v := range before {
		want[k] = v
	}
	for k, v := range during {
		want[k] = v
	}
	testutil.WaitForErr(t, 60*time.Second, "all servers to converge", func() error {
		for _, i := range all {
			list, _, err := c.client(i).Jobs().List(ctx, &api.QueryOptions{AllowStale: true})
			if err != nil {
				return err
			}
			got := map[string]uint64{}
			for _, j := range list {
				got[j.ID] = j.JobModifyIndex
			}
			if m := missing(want, got); len(m) > 0 {
				return fmt.Errorf("%s misses %v", c.names[i], m)
			}
			if _, ok := got["minority-write"]; ok {
				return fmt.Errorf("%s holds a write the minority refused", c.names[i])
			}
		}
		return nil
	})
	c.waitReady(old, 30*time.Second)
}

func TestDockerLinearizableUnderPartitions(t *testing.T) {
	c := newDockerCluster(t)
	all := []int{0, 1, 2}
	c.leader(all, 30*time.Second)
	var targets []regTarget
	for i := range all {
		targets = append(targets, regTarget{name: c.names[i], client: c.client(i), up: func() bool { return true }})
	}
	history := regHistory(t, targets, namespaceRegs, 6, 3, 20*time.Second, func(ctx context.Context, mark func(string, ...any)) {
		// Twice: cut the leader off, let both sides run, heal.
		for range 2 {
			select {
			case <-time.After(3 * time.Second):
			case <-ctx.Done():
				return
			}
			victim := c.leader(all, 20*time.Second)
			mark("partitioning leader %s", c.names[victim])
			c.partition(victim)
			mark("partitioned %s", c.names[victim])
			select {
			case <-time.After(5 * time.Second):
			case <-ctx.Done():
			}
			mark("healing %s", c.names[victim])
			c.heal(victim)
			mark("healed %s", c.names[victim])
		}
		<-ctx.Done()
	})
	if len(history) < 100 {
		t.Fatalf("only %d operations recorded", len(history))
	}
	checkLinearizable(t, history)
}
