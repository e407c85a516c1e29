package scheduler_test

import (
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// The scenarios are scripts (script_test.go has the file format): each
// file of testdata/scenarios runs on a fresh schedtest.Harness, with a
// fixed clock and sequential IDs, so a scheduler's random choices (seeded
// by the eval's ID) are the same every run. The commands:
//
//	nodes count=N [prefix=n] [dc=…] [class=…] [cpu=…] [mem=…] [attr.K=V] [meta.K=V]
//	node name=N [shape as nodes] [drain] [status=down]
//	job name=J [type=service|batch|system|sysbatch] [count=N] [group=G]
//	    [max_parallel=N] [canary=N] [stagger=D] [migrate_max_parallel=N]
//	    [run_for=D] [env=K:V] [restart_attempts=N] [service=S] [reschedule=off]
//	    [constraint=ATTR:VALUE] [spread=ATTR[:V%P,…]] [affinity=ATTR:V:W] [stop]
//	    [priority=N] [cpu=MHZ] [port=N]
//	config [preempt=TYPE,…|none]         the scheduler configuration
//	revert job=J version=N
//	stop job=J [no_shutdown_delay]
//	eval job=J [trigger=T] [node=N]      prints the plans, the eval, the
//	                                     evals created and the deployment
//	allocs job=J [all] [by=dc|class]     prints the allocations
//	client job=J status=S [alloc=a,b] [node=N] [deployment]
//	health job=J n=N [unhealthy|failed]
//	settle job=J
//	move job=J node=N [migrate]
//	deployment job=J [status=S] [promote] prints the job's deployments
//	advance by=D
//
// testdata/README.md explains each with its output; go test ./scheduler
// -run TestScenarios -rewrite writes the outputs the code prints now, for
// review in the diff.
var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/scenarios/*.txt")

// TestScenarios runs the scenario scripts of testdata/scenarios, each on
// a fresh harness: a cluster, a job, events, and after each eval the
// plan, the deployment and the evaluation as the script expects them.
// The commands are listed in testdata/README.md; go test -run
// TestScenarios -rewrite records the outputs anew.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			s, err := parseScript(f)
			if err != nil {
				t.Fatal(err)
			}
			r := &scenario{t: t, h: schedtest.NewHarness(t)}
			s.run(t, *rewrite, r.do)
		})
	}
}

// scenario is the harness a script drives.
type scenario struct {
	t *testing.T
	h *schedtest.Harness
}

// do runs one directive and returns what it prints.
func (r *scenario) do(d *directive) (string, error) {
	a := args(d.args)
	switch d.cmd {
	case "nodes":
		return "", r.nodes(a)
	case "node":
		return "", r.node(a)
	case "job":
		return "", r.job(a)
	case "revert":
		return "", r.revert(a)
	case "stop":
		r.h.StopJob(state.DefaultNamespace, a.str("job", ""), a.flag("no_shutdown_delay"))
		return "", nil
	case "eval":
		return r.eval(a)
	case "allocs":
		return r.allocs(a)
	case "client":
		return "", r.client(a)
	case "health":
		return "", r.health(a)
	case "settle":
		return "", r.settle(a)
	case "move":
		return "", r.move(a)
	case "deployment":
		return r.deployment(a)
	case "config":
		return "", r.config(a)
	case "advance":
		dur, err := time.ParseDuration(a.str("by", ""))
		if err != nil {
			return "", err
		}
		r.h.Advance(dur)
		return "", nil
	}
	return "", fmt.Errorf("unknown command %q", d.cmd)
}

// args are a command's arguments by key.
type args []arg

func (a args) get(key string) (string, bool) {
	for _, x := range a {
		if x.key == key {
			return x.val, true
		}
	}
	return "", false
}

func (a args) str(key, def string) string {
	if v, ok := a.get(key); ok {
		return v
	}
	return def
}

func (a args) flag(key string) bool { return a.str(key, "false") == "true" }

func (a args) int(key string, def int) int {
	v, ok := a.get(key)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		panic(fmt.Sprintf("%s=%q: not a number", key, v))
	}
	return n
}

// nodes registers count nodes named prefix0, prefix1, … (n0, n1, … by
// default), each shaped by the node arguments.
func (r *scenario) nodes(a args) error {
	prefix := a.str("prefix", "n")
	for i := range a.int("count", 1) {
		n := MockNode(fmt.Sprintf("%s%d", prefix, i))
		if err := shapeNode(n, a); err != nil {
			return err
		}
		r.h.UpsertNodes(n)
	}
	return nil
}

// node registers the named node, or changes it: its shape, its status
// (status=down), or a drain (drain).
func (r *scenario) node(a args) error {
	name := a.str("name", "")
	n := r.nodeByName(name)
	if n == nil {
		n = MockNode(name)
	} else {
		n = n.Copy()
	}
	if err := shapeNode(n, a); err != nil {
		return err
	}
	if a.flag("drain") {
		n.Drain = true
		n.SchedulingEligibility = state.NodeSchedulingIneligible
		// A registration keeps a known node's drain: write it anew.
		r.h.Apply(store.NodeDeregisterRequestType, &store.NodeDeregisterRequest{NodeIDs: []string{n.ID}})
	}
	r.h.UpsertNodes(n)
	if status, ok := a.get("status"); ok {
		r.h.SetNodeStatus(n.ID, status)
	}
	return nil
}

// shapeNode applies dc=, class=, cpu=, mem=, attr.K= and meta.K=.
func shapeNode(n *state.Node, a args) error {
	for _, x := range a {
		switch k := x.key; {
		case k == "dc":
			n.Datacenter = x.val
		case k == "class":
			n.NodeClass = x.val
		case k == "cpu" || k == "mem":
			v, err := strconv.Atoi(x.val)
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			if k == "cpu" {
				n.NodeResources.CPU = v
			} else {
				n.NodeResources.MemoryMB = v
			}
		case strings.HasPrefix(k, "attr."):
			n.Attributes[strings.TrimPrefix(k, "attr.")] = x.val
		case strings.HasPrefix(k, "meta."):
			n.Meta[strings.TrimPrefix(k, "meta.")] = x.val
		}
	}
	n.ComputedClass = ComputeClass(n)
	return nil
}

func (r *scenario) nodeByName(name string) *state.Node {
	nodes, err := r.h.Store.Nodes(nil, "")
	if err != nil {
		r.t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

func (r *scenario) nodeName(id string) string {
	n, _ := r.h.Store.NodeByID(nil, id)
	if n == nil {
		return id
	}
	return n.Name
}

// stored is the job as stored (nil when it is not).
func (r *scenario) stored(id string) *state.Job {
	j, err := r.h.Store.JobByID(nil, state.DefaultNamespace, id)
	if err != nil {
		r.t.Fatal(err)
	}
	return j
}

// job registers a version of the job name=: the first from the mock job
// of its type= (service, batch, system, sysbatch), the next from the
// stored one, each changed by the job arguments.
func (r *scenario) job(a args) error {
	id := a.str("name", "")
	j := r.stored(id)
	if j == nil {
		switch typ := a.str("type", state.JobTypeService); typ {
		case state.JobTypeService:
			j = MockJob(id)
		case state.JobTypeBatch:
			j = MockBatchJob(id)
		case state.JobTypeSystem, state.JobTypeSysBatch:
			j = MockSystemJob(id)
			j.Type = typ
		default:
			return fmt.Errorf("type %q", typ)
		}
	} else {
		j = j.Copy()
	}
	if err := shapeJob(j, a); err != nil {
		return err
	}
	r.h.UpsertJob(j)
	return nil
}

// shapeJob applies the job arguments to the job's first group:
//
//	count=N group=NAME (renames it) max_parallel=N canary=N stagger=DUR
//	migrate_max_parallel=N run_for=DUR (task config: a destructive
//	change) env=K:V (destructive) restart_attempts=N (in place)
//	service=NAME (in place) reschedule=off (attempts 0, not unlimited)
//	constraint=ATTR:VALUE (job level, "=")
//	spread=ATTR[:VALUE%PERCENT,…] affinity=ATTR:VALUE:WEIGHT stop
//	priority=N (the job's) cpu=MHZ (the task's) port=N (the group's one
//	network: static port N, labelled http)
func shapeJob(j *state.Job, a args) error {
	tg := j.TaskGroups[0]
	task := tg.Tasks[0]
	for _, x := range a {
		var n int
		var err error
		switch x.key {
		case "count", "max_parallel", "canary", "migrate_max_parallel", "restart_attempts", "priority", "cpu", "port":
			n, err = strconv.Atoi(x.val)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", x.key, err)
		}
		switch x.key {
		case "count":
			tg.Count = n
		case "group":
			tg.Name = x.val
		case "max_parallel", "canary", "stagger":
			if tg.Update == nil {
				tg.Update = &state.UpdateStrategy{}
			}
			switch x.key {
			case "max_parallel":
				tg.Update.MaxParallel = n
			case "canary":
				tg.Update.Canary = n
			default:
				if tg.Update.Stagger, err = time.ParseDuration(x.val); err != nil {
					return err
				}
			}
		case "migrate_max_parallel":
			tg.Migrate.MaxParallel = n
		case "run_for":
			task.Config = map[string]any{"run_for": x.val}
		case "env":
			k, v, _ := strings.Cut(x.val, ":")
			task.Env = map[string]string{k: v}
		case "restart_attempts":
			tg.RestartPolicy.Attempts = n
		case "service":
			tg.Services = []*state.Service{{Name: x.val, PortLabel: "http"}}
		case "reschedule":
			if x.val != "off" {
				return fmt.Errorf("reschedule=%q: only off", x.val)
			}
			tg.ReschedulePolicy = &state.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: state.DelayFunctionConstant}
		case "constraint":
			attr, val, _ := strings.Cut(x.val, ":")
			j.Constraints = append(j.Constraints, &state.Constraint{LTarget: "${" + attr + "}", Operand: "=", RTarget: val})
		case "spread":
			sp, err := parseSpread(x.val)
			if err != nil {
				return err
			}
			tg.Spreads = append(tg.Spreads, sp)
		case "affinity":
			parts := strings.Split(x.val, ":")
			if len(parts) != 3 {
				return fmt.Errorf("affinity %q: want ATTR:VALUE:WEIGHT", x.val)
			}
			w, err := strconv.Atoi(parts[2])
			if err != nil {
				return err
			}
			tg.Affinities = append(tg.Affinities, &state.Affinity{LTarget: "${" + parts[0] + "}", Operand: "=", RTarget: parts[1], Weight: int8(w)})
		case "priority":
			j.Priority = n
		case "cpu":
			task.Resources.CPU = n
		case "port":
			tg.Networks = []*state.NetworkResource{{ReservedPorts: []state.Port{{Label: "http", Value: n}}}}
		case "stop":
			j.Stop = true
		}
	}
	return nil
}

// config writes the scheduler configuration: preempt= lists the job
// types whose scheduler may preempt (comma-separated, or none); the rest
// is the default.
func (r *scenario) config(a args) error {
	cfg := state.DefaultSchedulerConfiguration()
	if list, ok := a.get("preempt"); ok {
		cfg.PreemptionConfig = state.PreemptionConfig{}
		for _, typ := range strings.Split(list, ",") {
			switch typ {
			case state.JobTypeService:
				cfg.PreemptionConfig.ServiceSchedulerEnabled = true
			case state.JobTypeBatch:
				cfg.PreemptionConfig.BatchSchedulerEnabled = true
			case state.JobTypeSystem:
				cfg.PreemptionConfig.SystemSchedulerEnabled = true
			case state.JobTypeSysBatch:
				cfg.PreemptionConfig.SysBatchSchedulerEnabled = true
			case "none":
			default:
				return fmt.Errorf("preempt=%s: not a job type", typ)
			}
		}
	}
	r.h.Apply(store.SchedulerConfigSetRequestType, &store.SchedulerConfigSetRequest{Config: cfg})
	return nil
}

// parseSpread reads ATTR[:VALUE%PERCENT,…], a spread of weight 100.
func parseSpread(s string) (*state.Spread, error) {
	attr, targets, _ := strings.Cut(s, ":")
	sp := &state.Spread{Attribute: "${" + attr + "}", Weight: 100}
	for _, t := range strings.Split(targets, ",") {
		if t == "" {
			continue
		}
		v, p, _ := strings.Cut(t, "%")
		pct, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("spread target %q: %w", t, err)
		}
		sp.SpreadTarget = append(sp.SpreadTarget, &state.SpreadTarget{Value: v, Percent: uint8(pct)})
	}
	return sp, nil
}

// revert registers version= of job= again, as a revert does.
func (r *scenario) revert(a args) error {
	old, err := r.h.Store.JobByIDAndVersion(nil, state.DefaultNamespace, a.str("job", ""), uint64(a.int("version", 0)))
	if err != nil || old == nil {
		return fmt.Errorf("no version %d: %v", a.int("version", 0), err)
	}
	r.h.UpsertJob(old.Copy())
	return nil
}

// liveAllocs are the job's live allocations in name order.
func (r *scenario) liveAllocs(job string) []*state.Allocation {
	live := r.h.LiveAllocs(state.DefaultNamespace, job)
	slices.SortStableFunc(live, func(x, y *state.Allocation) int { return strings.Compare(x.Name, y.Name) })
	return live
}
