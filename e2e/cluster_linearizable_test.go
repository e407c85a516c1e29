//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/schedhq/sched/http/api"
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

// regHistory runs clients concurrent clients doing random puts and gets
// on keys registers for d, each op on a random server, while faults runs.
// A put that fails is recorded with an unknown outcome (it may take effect
// at any time after its call), unless the connection was refused, which
// means the server never saw it; a get that fails is dropped.
func regHistory(t *testing.T, targets []regTarget, clients, keys int, d time.Duration, faults func(ctx context.Context, mark func(format string, args ...any))) []porcupine.Operation {
	t.Helper()
	start := time.Now()
	now := func() int64 { return time.Since(start).Nanoseconds() }
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()

	var mu sync.Mutex
	var ops []porcupine.Operation
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
					var wm *api.WriteMeta
					wm, err = tgt.client.Namespaces().Register(rctx, &state.Namespace{Name: in.key, Description: in.value}, nil)
					if err == nil {
						out.index = wm.LastIndex
					}
				} else {
					var ns *state.Namespace
					var qm *api.QueryMeta
					ns, qm, err = tgt.client.Namespaces().Info(rctx, in.key, nil)
					switch {
					case err == nil:
						out = regOutput{value: ns.Description, index: ns.ModifyIndex, meta: qm.LastIndex}
					case api.IsNotFound(err):
						err = nil
					}
				}
				ret := now()
				rcancel()
				op := porcupine.Operation{ClientId: cl, Input: in, Call: call, Output: out, Return: ret}
				mu.Lock()
				switch {
				case err == nil:
					ops = append(ops, op)
				case errors.Is(err, syscall.ECONNREFUSED):
					refused++
				case in.put:
					op.Return = math.MaxInt64
					ops = append(ops, op)
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
	t.Logf("history: %d operations (%d puts of unknown outcome), %d failed reads dropped, %d refused connections", len(ops), unknown, failedReads, refused)
	return ops
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

func TestClusterLinearizableUnderLeaderKills(t *testing.T) {
	c := newLoopCluster(t, 3, "")
	c.startAll()
	c.leader(20 * time.Second)
	var targets []regTarget
	for _, s := range c.servers {
		targets = append(targets, regTarget{name: s.name, client: s.client(), up: s.alive})
	}
	history := regHistory(t, targets, 6, 3, 16*time.Second, func(ctx context.Context, mark func(string, ...any)) {
		// Twice: let the load run, SIGKILL the leader, let the survivors
		// carry on, restart it.
		for range 2 {
			select {
			case <-time.After(3 * time.Second):
			case <-ctx.Done():
				return
			}
			victim := c.leader(10 * time.Second)
			mark("killing leader %s", victim.name)
			victim.kill()
			mark("killed %s", victim.name)
			select {
			case <-time.After(3 * time.Second):
			case <-ctx.Done():
			}
			mark("restarting %s", victim.name)
			victim.launch()
		}
		<-ctx.Done()
	})
	if len(history) < 200 {
		t.Fatalf("only %d operations recorded", len(history))
	}
	checkLinearizable(t, history)
}
