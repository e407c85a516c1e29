//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/http/api/mgmt"
	"github.com/schedhq/sched/state"
)

// The registers of the linearizability check are namespaces: a put sets a
// namespace's Description, a get reads it (a consistent read, the default;
// "" when the namespace does not exist yet). Namespace writes have no side
// effects, so the history holds exactly what the clients did.

// regInput is one register operation.
type regInput struct {
	put   bool
	key   string
	value string // the value put
	// server names the server the operation was sent to (diagnostics).
	server string
}

// regOutput is what an operation returned. Only value takes part in the
// model; index (the write's index, or the read's ModifyIndex of what it
// saw) and meta (the response's X-Sched-Index) are there to explain a
// violation.
type regOutput struct {
	value string
	index uint64
	meta  uint64
}

// regModel is a set of independent registers, checked per key.
var regModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(regInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(st, input, output any) (bool, any) {
		in := input.(regInput)
		if in.put {
			return true, in.value
		}
		return output.(regOutput).value == st.(string), st
	},
	DescribeOperation: func(input, output any) string {
		in := input.(regInput)
		out := output.(regOutput)
		if in.put {
			return fmt.Sprintf("put(%s, %q) @%s index %d", in.key, in.value, in.server, out.index)
		}
		return fmt.Sprintf("get(%s) -> %q @%s modify %d index %d", in.key, out.value, in.server, out.index, out.meta)
	},
}

// regTarget is a server the workload may send to.
type regTarget struct {
	name   string
	client *api.Client
	// up reports whether the server may be tried (a killed process is
	// skipped rather than counted as a failure).
	up func() bool
}

// regOps are the two operations of a register on one kind of object.
// put writes value under key and returns the write's index; get returns
// the value ("" when the object does not exist), its ModifyIndex and the
// read's index.
type regOps struct {
	put func(ctx context.Context, c *api.Client, key, value string) (uint64, error)
	get func(ctx context.Context, c *api.Client, key string) (value string, modify, read uint64, err error)
}

// namespaceRegs are registers held in namespaces' Description.
var namespaceRegs = regOps{
	put: func(ctx context.Context, c *api.Client, key, value string) (uint64, error) {
		wm, err := c.Namespaces().Register(ctx, &state.Namespace{Name: key, Description: value}, nil)
		if err != nil {
			return 0, err
		}
		return wm.LastIndex, nil
	},
	get: func(ctx context.Context, c *api.Client, key string) (string, uint64, uint64, error) {
		ns, qm, err := c.Namespaces().Info(ctx, key, nil)
		switch {
		case err == nil:
			return ns.Description, ns.ModifyIndex, qm.LastIndex, nil
		case api.IsNotFound(err):
			return "", 0, 0, nil
		}
		return "", 0, 0, err
	},
}

// jobRegs are registers held in jobs' Meta["v"]: a put registers a new
// version of the job (with its evaluation), a get reads the job.
var jobRegs = regOps{
	put: func(ctx context.Context, c *api.Client, key, value string) (uint64, error) {
		job := batchShJob(key, "true")
		job.Meta = map[string]string{"v": value}
		resp, _, err := c.Jobs().Register(ctx, job, nil, nil)
		if err != nil {
			return 0, err
		}
		return resp.JobModifyIndex, nil
	},
	get: func(ctx context.Context, c *api.Client, key string) (string, uint64, uint64, error) {
		job, qm, err := c.Jobs().Info(ctx, key, nil)
		switch {
		case err == nil:
			return job.Meta["v"], job.ModifyIndex, qm.LastIndex, nil
		case api.IsNotFound(err):
			return "", 0, 0, nil
		}
		return "", 0, 0, err
	},
}

// regHistory runs clients concurrent clients doing random puts and gets
// on keys registers for d, each op on a random server, while faults runs.
// A put that fails is recorded with an unknown outcome (it may take effect
// at any time after its call), unless the connection was refused, which
// means the server never saw it; a get that fails is dropped.
func regHistory(t *testing.T, targets []regTarget, regs regOps, clients, keys int, d time.Duration, faults func(ctx context.Context, mark func(format string, args ...any))) []porcupine.Operation {
	t.Helper()
	start := time.Now()
	now := func() int64 { return time.Since(start).Nanoseconds() }
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()

	var mu sync.Mutex
	var history []porcupine.Operation
	var unknown, failedReads, refused int
	var wg sync.WaitGroup
	for cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(cl), 42))
			for n := 0; ctx.Err() == nil; n++ {
				tgt := targets[rng.IntN(len(targets))]
				if !tgt.up() {
					continue
				}
				in := regInput{key: fmt.Sprintf("lin-%d", rng.IntN(keys)), server: tgt.name}
				in.put = rng.IntN(2) == 0
				if in.put {
					in.value = fmt.Sprintf("c%d-%d", cl, n)
				}
				rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
				call := now()
				var out regOutput
				var err error
				if in.put {
					out.index, err = regs.put(rctx, tgt.client, in.key, in.value)
				} else {
					out.value, out.index, out.meta, err = regs.get(rctx, tgt.client, in.key)
				}
				ret := now()
				rcancel()
				op := porcupine.Operation{ClientId: cl, Input: in, Call: call, Output: out, Return: ret}
				mu.Lock()
				switch {
				case err == nil:
					history = append(history, op)
				case errors.Is(err, syscall.ECONNREFUSED):
					refused++
				case in.put:
					op.Return = math.MaxInt64
					history = append(history, op)
					unknown++
				default:
					failedReads++
				}
				mu.Unlock()
			}
		}()
	}
	faults(ctx, func(format string, args ...any) {
		t.Logf("at %d ns: %s", now(), fmt.Sprintf(format, args...))
	})
	wg.Wait()
	t.Logf("history: %d operations (%d puts of unknown outcome), %d failed reads dropped, %d refused connections", len(history), unknown, failedReads, refused)
	return history
}

// checkLinearizable fails the test unless history is linearizable, leaving
// a visualization of the offending partition next to the test's files.
func checkLinearizable(t *testing.T, history []porcupine.Operation) {
	t.Helper()
	res, info := porcupine.CheckOperationsVerbose(regModel, history, 3*time.Minute)
	switch res {
	case porcupine.Ok:
		t.Logf("linearizable: %d operations, zero violations", len(history))
	case porcupine.Illegal:
		stamp := time.Now().UnixNano()
		path := filepath.Join(os.TempDir(), fmt.Sprintf("sched-linearizability-%d.html", stamp))
		if f, err := os.Create(path); err == nil {
			porcupine.Visualize(regModel, info, f)
			f.Close()
		}
		dump := filepath.Join(os.TempDir(), fmt.Sprintf("sched-linearizability-%d.txt", stamp))
		if f, err := os.Create(dump); err == nil {
			sorted := slices.Clone(history)
			slices.SortFunc(sorted, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
			for _, op := range sorted {
				fmt.Fprintf(f, "%s\t%d\t%d\t%d\t%s\n", op.Input.(regInput).key, op.ClientId, op.Call, op.Return, regModel.DescribeOperation(op.Input, op.Output))
			}
			f.Close()
		}
		t.Fatalf("history is NOT linearizable; visualization in %s, operations in %s", path, dump)
	default:
		t.Fatalf("linearizability check did not finish (%v)", res)
	}
}

// loopTargets are the servers of a loopback cluster as workload targets.
func loopTargets(c *loopCluster) []regTarget {
	var targets []regTarget
	for _, s := range c.servers {
		targets = append(targets, regTarget{name: s.name, client: s.client(), up: s.alive})
	}
	return targets
}

// waitCtx waits d, or until ctx ends; it reports whether d passed.
func waitCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}

// killLeaderFor SIGKILLs the current leader, lets the survivors carry on
// for d (or until ctx ends), and restarts it.
func killLeaderFor(ctx context.Context, c *loopCluster, d time.Duration, mark func(string, ...any)) {
	victim := c.leader(10 * time.Second)
	mark("killing leader %s", victim.name)
	victim.kill()
	mark("killed %s", victim.name)
	waitCtx(ctx, d)
	mark("restarting %s", victim.name)
	victim.launch()
}

func TestClusterLinearizableUnderLeaderKills(t *testing.T) {
	c := newLoopCluster(t, 3, "")
	c.startAll()
	c.leader(20 * time.Second)
	history := regHistory(t, loopTargets(c), namespaceRegs, 6, 3, 16*time.Second, func(ctx context.Context, mark func(string, ...any)) {
		// Twice: let the load run, SIGKILL the leader, let the survivors
		// carry on, restart it.
		for range 2 {
			if !waitCtx(ctx, 3*time.Second) {
				return
			}
			killLeaderFor(ctx, c, 3*time.Second, mark)
		}
		<-ctx.Done()
	})
	if len(history) < 200 {
		t.Fatalf("only %d operations recorded", len(history))
	}
	checkLinearizable(t, history)
}

// TestClusterLinearizableJobsUnderPausesAndFollowerKills checks job
// registers and reads (each put a new job version with its evaluation)
// while the leader is paused (SIGSTOP, then SIGCONT: a leader that wakes
// up believing it still leads) and a follower is killed and restarted.
func TestClusterLinearizableJobsUnderPausesAndFollowerKills(t *testing.T) {
	c := newLoopCluster(t, 3, "")
	c.startAll()
	c.leader(20 * time.Second)
	history := regHistory(t, loopTargets(c), jobRegs, 6, 3, 16*time.Second, func(ctx context.Context, mark func(string, ...any)) {
		if !waitCtx(ctx, 3*time.Second) {
			return
		}
		leader := c.leader(10 * time.Second)
		cmd, _, _ := leader.proc()
		mark("pausing leader %s", leader.name)
		if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Errorf("SIGSTOP: %v", err)
		}
		waitCtx(ctx, 3*time.Second)
		mark("resuming %s", leader.name)
		if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Errorf("SIGCONT: %v", err)
		}
		if !waitCtx(ctx, 3*time.Second) {
			return
		}
		follower := c.others(c.leader(10 * time.Second))[0]
		mark("killing follower %s", follower.name)
		follower.kill()
		waitCtx(ctx, 3*time.Second)
		mark("restarting %s", follower.name)
		follower.launch()
		<-ctx.Done()
	})
	if len(history) < 100 {
		t.Fatalf("only %d operations recorded", len(history))
	}
	checkLinearizable(t, history)
}

// mgmtRegs are registers held in organizations' email (/api/v2): a put
// PATCHes the organization, a get reads it. Organizations are created
// with the local part "init", which reads as the empty initial value.
func mgmtRegs(token string) regOps {
	client := func(c *api.Client) *mgmt.Client { return mgmt.New(c).WithToken(token) }
	return regOps{
		put: func(ctx context.Context, c *api.Client, key, value string) (uint64, error) {
			body := map[string]any{"data": map[string]any{"type": "organizations", "attributes": map[string]any{"email": value + "@lin.test"}}}
			_, err := client(c).Do(ctx, http.MethodPatch, "/organizations/"+key, nil, body)
			return 0, err
		},
		get: func(ctx context.Context, c *api.Client, key string) (string, uint64, uint64, error) {
			org, err := client(c).Organizations().Read(ctx, key)
			if err != nil {
				return "", 0, 0, err
			}
			v := strings.TrimSuffix(org.Email, "@lin.test")
			if v == "init" {
				v = ""
			}
			return v, 0, 0, nil
		},
	}
}

// TestClusterLinearizableManagementWritesUnderLeaderKills checks a
// management API write path (PATCH /api/v2/organizations/:name) and its
// reads across a leader SIGKILL.
func TestClusterLinearizableManagementWritesUnderLeaderKills(t *testing.T) {
	c := newLoopCluster(t, 3, "")
	c.startAll()
	lead := c.leader(20 * time.Second)
	ctx := context.Background()
	tok, _, err := lead.client().ACLTokens().Bootstrap(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	admin := mgmt.New(lead.client()).WithToken(tok.SecretID)
	keys := 3
	for i := range keys {
		if _, err := admin.Organizations().Create(ctx, mgmt.OrganizationCreateOptions{Name: fmt.Sprintf("lin-%d", i), Email: "init@lin.test"}); err != nil {
			t.Fatal(err)
		}
	}
	history := regHistory(t, loopTargets(c), mgmtRegs(tok.SecretID), 3, keys, 12*time.Second, func(ctx context.Context, mark func(string, ...any)) {
		if !waitCtx(ctx, 4*time.Second) {
			return
		}
		killLeaderFor(ctx, c, 3*time.Second, mark)
		<-ctx.Done()
	})
	if len(history) < 50 {
		t.Fatalf("only %d operations recorded", len(history))
	}
	checkLinearizable(t, history)
}
