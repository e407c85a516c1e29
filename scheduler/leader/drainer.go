package leader

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// Drainer moves allocations off draining nodes, on the leader. For every
// node with a DrainStrategy it marks allocations for migration
// (DesiredTransition.Migrate), with an evaluation (TriggeredBy
// "node-drain") for each job marked; the job's scheduler then stops the
// marked allocations and places replacements elsewhere.
//
//   - Service allocations go in batches: at most the group's
//     Migrate.MaxParallel (default 1) of a task group are migrating at
//     once. An allocation is migrating from its mark until it is stopped,
//     and its replacement (an allocation whose PreviousAllocation is a
//     marked one) until the replacement runs, so the next batch waits for
//     the previous one to be up elsewhere.
//   - Batch allocations are left to finish until the deadline, as in Nomad.
//   - System and sysbatch allocations go last, once nothing else is left,
//     and not at all with IgnoreSystemJobs.
//   - At the deadline (DrainStrategy.ForceDeadline; a negative Deadline
//     means at once) everything left is marked at once.
//
// The drain is complete when no allocation that the drain moves is left
// that is not terminal: the drainer then ends it (DrainStrategy nil, Drain
// false) and the node stays ineligible until an operator marks it
// eligible.
//
// The drainer wakes on writes to the nodes table, to the allocations of
// draining nodes and of the jobs being migrated (watch channels), and at
// the next deadline.
type Drainer struct {
	store *store.Store
	raft  Raft
	log   *slog.Logger
	now   func() time.Time
	newID func() string
	run   runner
}

// NewDrainer returns a stopped drainer.
func NewDrainer(store *store.Store, raft Raft, log *slog.Logger, now func() time.Time, newID func() string) *Drainer {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	if newID == nil {
		newID = state.NewID
	}
	return &Drainer{store: store, raft: raft, log: log, now: now, newID: newID}
}

// Name implements Service.
func (d *Drainer) Name() string { return "drainer" }

// Start follows draining nodes until Stop.
func (d *Drainer) Start(ctx context.Context) error { return d.run.start(ctx, d.loop) }

// Stop ends the drainer.
func (d *Drainer) Stop() { d.run.stop() }

func (d *Drainer) loop(ctx context.Context) {
	followTables(ctx, d.store, nodeFollowPace, []string{store.TableNodes}, d.pass)
}

// pass handles every draining node once, adding what it read to ws, and
// returns the earliest deadline still ahead (zero for none).
func (d *Drainer) pass(ctx context.Context, ws memdb.WatchSet) time.Time {
	nodes, err := d.store.Nodes(nil, "")
	if err != nil {
		d.log.Error("drainer: list nodes", "error", err)
		return time.Time{}
	}
	var next time.Time
	now := d.now()
	for _, n := range nodes {
		ds := n.DrainStrategy
		if ds == nil {
			continue
		}
		if ds.Deadline >= 0 && ds.ForceDeadline > 0 {
			if at := time.Unix(0, ds.ForceDeadline); at.After(now) && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
		if err := d.drainNode(ctx, ws, n, now); err != nil && ctx.Err() == nil {
			d.log.Error("drainer: could not drain node", "node_id", n.ID, "error", err)
		}
	}
	return next
}

// drainNode marks the next allocations of one draining node, or completes
// its drain.
func (d *Drainer) drainNode(ctx context.Context, ws memdb.WatchSet, node *state.Node, now time.Time) error {
	ds := node.DrainStrategy
	allocs, err := d.store.AllocsByNode(ws, node.ID)
	if err != nil {
		return err
	}
	force := ds.Deadline < 0 || (ds.ForceDeadline > 0 && now.UnixNano() >= ds.ForceDeadline)
	var others, system []*state.Allocation
	for _, a := range allocs {
		if a.Terminal() {
			continue
		}
		if isSystemType(allocJobType(a)) {
			if !ds.IgnoreSystemJobs {
				system = append(system, a)
			}
			continue
		}
		others = append(others, a)
	}
	if len(others) == 0 && len(system) == 0 {
		return d.complete(ctx, node, now)
	}
	var marks []*state.Allocation
	switch {
	case force:
		marks = unmarked(append(others, system...))
	case len(others) > 0:
		marks, err = d.nextBatch(ws, others)
		if err != nil {
			return err
		}
	default:
		marks = unmarked(system)
	}
	if len(marks) == 0 {
		return nil
	}
	return d.mark(ctx, node, marks, now)
}

// nextBatch picks the service allocations that may start migrating now,
// per task group within Migrate.MaxParallel.
func (d *Drainer) nextBatch(ws memdb.WatchSet, allocs []*state.Allocation) ([]*state.Allocation, error) {
	type groupKey struct{ ns, job, group string }
	byGroup := map[groupKey][]*state.Allocation{}
	for _, a := range allocs {
		if allocJobType(a) != state.JobTypeService || migrating(a) {
			continue
		}
		k := groupKey{a.Namespace, a.JobID, a.TaskGroup}
		byGroup[k] = append(byGroup[k], a)
	}
	keys := slices.SortedFunc(maps.Keys(byGroup), func(a, b groupKey) int {
		return cmp.Or(cmp.Compare(a.ns, b.ns), cmp.Compare(a.job, b.job), cmp.Compare(a.group, b.group))
	})
	var out []*state.Allocation
	for _, k := range keys {
		jobAllocs, err := d.store.AllocsByJob(ws, k.ns, k.job, true)
		if err != nil {
			return nil, err
		}
		job, err := d.store.JobByID(nil, k.ns, k.job)
		if err != nil {
			return nil, err
		}
		if job == nil {
			job = byGroup[k][0].Job
		}
		room := maxParallel(job, k.group) - inFlight(jobAllocs, k.group)
		candidates := byGroup[k]
		slices.SortFunc(candidates, func(a, b *state.Allocation) int { return cmp.Compare(a.ID, b.ID) })
		for i := 0; i < room && i < len(candidates); i++ {
			out = append(out, candidates[i])
		}
	}
	return out, nil
}

// inFlight counts a group's migrations under way: marked allocations not
// stopped yet, and replacements of marked allocations not running yet.
func inFlight(allocs []*state.Allocation, group string) int {
	marked := map[string]bool{}
	for _, a := range allocs {
		if a.TaskGroup == group && migrating(a) {
			marked[a.ID] = true
		}
	}
	n := 0
	for _, a := range allocs {
		if a.TaskGroup != group || a.Terminal() {
			continue
		}
		switch {
		case marked[a.ID]:
			n++
		case a.PreviousAllocation != "" && marked[a.PreviousAllocation] && a.ClientStatus != state.AllocClientStatusRunning:
			n++
		}
	}
	return n
}

// maxParallel is how many allocations of a group may migrate at once.
func maxParallel(job *state.Job, group string) int {
	if job != nil {
		if tg := job.LookupTaskGroup(group); tg != nil && tg.Migrate != nil && tg.Migrate.MaxParallel > 0 {
			return tg.Migrate.MaxParallel
		}
	}
	return 1
}

// mark writes the migrate marks with an evaluation per job.
func (d *Drainer) mark(ctx context.Context, node *state.Node, marks []*state.Allocation, now time.Time) error {
	yes := true
	req := &store.AllocUpdateDesiredTransitionRequest{Allocs: map[string]*state.DesiredTransition{}}
	seen := map[jobKey]bool{}
	for _, a := range marks {
		req.Allocs[a.ID] = &state.DesiredTransition{Migrate: &yes}
		key := jobKey{a.Namespace, a.JobID}
		if seen[key] {
			continue
		}
		seen[key] = true
		prio, typ := state.DefaultJobPriority, allocJobType(a)
		if a.Job != nil {
			prio = a.Job.Priority
		}
		if job, err := d.store.JobByID(nil, a.Namespace, a.JobID); err == nil && job != nil {
			prio, typ = job.Priority, job.Type
		}
		req.Evals = append(req.Evals, &state.Evaluation{
			ID:              d.newID(),
			Namespace:       a.Namespace,
			Priority:        prio,
			Type:            typ,
			TriggeredBy:     state.EvalTriggerNodeDrain,
			JobID:           a.JobID,
			NodeID:          node.ID,
			NodeModifyIndex: node.ModifyIndex,
			Status:          state.EvalStatusPending,
			CreateTime:      now.UnixNano(),
			ModifyTime:      now.UnixNano(),
		})
	}
	if _, _, err := d.raft.Apply(ctx, store.AllocUpdateDesiredTransitionRequestType, req); err != nil {
		return err
	}
	d.log.Info("drainer marked allocations for migration", "node_id", node.ID, "allocs", len(marks), "evals", len(req.Evals))
	return nil
}

// complete ends a node's drain, leaving it ineligible.
func (d *Drainer) complete(ctx context.Context, node *state.Node, now time.Time) error {
	req := &store.NodeUpdateDrainRequest{NodeID: node.ID, UpdatedAt: now.Unix()}
	if _, _, err := d.raft.Apply(ctx, store.NodeUpdateDrainRequestType, req); err != nil {
		return err
	}
	d.log.Info("node drain complete", "node_id", node.ID)
	return nil
}

// unmarked returns the allocations not yet marked for migration.
func unmarked(allocs []*state.Allocation) []*state.Allocation {
	var out []*state.Allocation
	for _, a := range allocs {
		if !migrating(a) {
			out = append(out, a)
		}
	}
	return out
}

// migrating reports whether a is marked for migration.
func migrating(a *state.Allocation) bool {
	return a.DesiredTransition.Migrate != nil && *a.DesiredTransition.Migrate
}

// allocJobType is the type of an allocation's job.
func allocJobType(a *state.Allocation) string {
	if a.Job == nil {
		return state.JobTypeService
	}
	return a.Job.Type
}

// isSystemType reports whether jobs of type t run on every node.
func isSystemType(t string) bool {
	return t == state.JobTypeSystem || t == state.JobTypeSysBatch
}
