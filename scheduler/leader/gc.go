package leader

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// Garbage collection defaults.
const (
	DefaultGCInterval                = 5 * time.Minute
	DefaultEvalGCThreshold           = 1 * time.Hour
	DefaultBatchEvalGCThreshold      = 4 * time.Hour
	DefaultJobGCThreshold            = 4 * time.Hour
	DefaultNodeGCThreshold           = 24 * time.Hour
	DefaultDeploymentGCThreshold     = 1 * time.Hour
	DefaultACLTokenGCThreshold       = 1 * time.Hour
	DefaultGCBatchSize               = 1000
	forcedGCRequestsBufferedPerRound = 16
)

// GCConfig tunes the GarbageCollector. Every zero field means its default.
type GCConfig struct {
	// Interval is the time between two collections (DefaultGCInterval).
	Interval time.Duration
	// EvalThreshold is the age after which a terminal evaluation of a
	// service or system job, with its terminal allocations, is collected
	// (DefaultEvalGCThreshold).
	EvalThreshold time.Duration
	// BatchEvalThreshold is the same for batch and sysbatch jobs, kept
	// longer so users can see how their runs ended
	// (DefaultBatchEvalGCThreshold).
	BatchEvalThreshold time.Duration
	// JobThreshold is the age after which a dead job (stopped, or a batch
	// job that finished) is purged (DefaultJobGCThreshold).
	JobThreshold time.Duration
	// NodeThreshold is how long a node stays down before it is deleted
	// (DefaultNodeGCThreshold).
	NodeThreshold time.Duration
	// DeploymentThreshold is the age after which a finished deployment is
	// deleted (DefaultDeploymentGCThreshold).
	DeploymentThreshold time.Duration
	// ACLTokenThreshold is how long an ACL token stays expired before it
	// is deleted (DefaultACLTokenGCThreshold). An expired token no longer
	// resolves; keeping it a while lets an operator still see why a
	// client's requests started failing.
	ACLTokenThreshold time.Duration
	// BatchSize bounds the objects deleted by one command
	// (DefaultGCBatchSize), so one collection does not make one huge log
	// entry.
	BatchSize int
}

func (c GCConfig) withDefaults() GCConfig {
	c.Interval = cmp.Or(c.Interval, DefaultGCInterval)
	c.EvalThreshold = cmp.Or(c.EvalThreshold, DefaultEvalGCThreshold)
	c.BatchEvalThreshold = cmp.Or(c.BatchEvalThreshold, DefaultBatchEvalGCThreshold)
	c.JobThreshold = cmp.Or(c.JobThreshold, DefaultJobGCThreshold)
	c.NodeThreshold = cmp.Or(c.NodeThreshold, DefaultNodeGCThreshold)
	c.DeploymentThreshold = cmp.Or(c.DeploymentThreshold, DefaultDeploymentGCThreshold)
	c.ACLTokenThreshold = cmp.Or(c.ACLTokenThreshold, DefaultACLTokenGCThreshold)
	c.BatchSize = cmp.Or(c.BatchSize, DefaultGCBatchSize)
	return c
}

// GarbageCollector deletes what is old and done, on the leader, every
// Interval and on Force. Ages come from the times the leader stamped on
// the objects (evaluation and allocation ModifyTime, the job version's
// SubmitTime, the node's StatusUpdatedAt, the deployment's ModifyTime), so
// every server agrees on them and a failover does not reset them; an
// object with no time stamped is collected only by Force.
//
//   - A terminal evaluation older than its threshold (EvalThreshold, or
//     BatchEvalThreshold for batch and sysbatch jobs) is collected with its
//     allocations when all of them are terminal and as old; a terminal
//     allocation whose evaluation is gone is collected at the same age.
//   - A dead job (stopped, or a batch or sysbatch job whose work is done)
//     whose last version and every evaluation and allocation are older
//     than JobThreshold is purged with them. Periodic and parameterized
//     templates are never collected.
//   - A node down for NodeThreshold with no allocation that is not
//     terminal is deleted.
//   - A deployment that is no longer active and older than
//     DeploymentThreshold is deleted, unless it is its job's latest.
//   - An ACL token expired for ACLTokenThreshold, by its ExpirationTime,
//     is deleted. A token without an expiry is never collected.
//
// Force ignores the ages, not the rules: it collects every token that has
// expired, not one that has not. The deletions go through
// GarbageCollectRequest, whose Apply checks the rules again, except
// tokens, which go through ACLTokenDeleteRequest: their rule (expired at
// the leader's clock) depends on time, which Apply must not read, and
// expiry never changes once a token exists.
type GarbageCollector struct {
	cfg   GCConfig
	store *store.Store
	raft  Raft
	log   *slog.Logger
	now   func() time.Time
	run   runner

	force chan chan error
	// mu guards stopped, which is closed when the running collector stops
	// (nil while stopped), so Force never waits on a collector that is
	// gone.
	mu      sync.Mutex
	stopped chan struct{}
}

// NewGarbageCollector returns a stopped collector.
func NewGarbageCollector(cfg GCConfig, store *store.Store, raft Raft, log *slog.Logger, now func() time.Time) *GarbageCollector {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &GarbageCollector{cfg: cfg.withDefaults(), store: store, raft: raft, log: log, now: now,
		force: make(chan chan error, forcedGCRequestsBufferedPerRound)}
}

// Name implements Service.
func (g *GarbageCollector) Name() string { return "gc" }

// Start collects every Interval until Stop.
func (g *GarbageCollector) Start(ctx context.Context) error {
	g.mu.Lock()
	g.stopped = make(chan struct{})
	g.mu.Unlock()
	return g.run.start(ctx, g.loop)
}

// Stop ends the collector; a collection in progress stops at its next
// write.
func (g *GarbageCollector) Stop() {
	g.mu.Lock()
	if g.stopped != nil {
		close(g.stopped)
		g.stopped = nil
	}
	g.mu.Unlock()
	g.run.stop()
}

// Force runs a collection now that ignores age thresholds and returns when
// it is committed. It fails with ErrNotLeader when the collector is not
// running.
func (g *GarbageCollector) Force(ctx context.Context) error {
	g.mu.Lock()
	stopped := g.stopped
	g.mu.Unlock()
	if stopped == nil {
		return ErrNotLeader
	}
	reply := make(chan error, 1)
	select {
	case g.force <- reply:
	case <-stopped:
		return ErrNotLeader
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-stopped:
		return ErrNotLeader
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *GarbageCollector) loop(ctx context.Context) {
	t := time.NewTicker(g.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := g.Collect(ctx, false); err != nil && ctx.Err() == nil {
				g.log.Error("garbage collection failed", "error", err)
			}
		case reply := <-g.force:
			reply <- g.Collect(ctx, true)
		}
	}
}

// Collect runs one collection; force ignores ages.
func (g *GarbageCollector) Collect(ctx context.Context, force bool) error {
	snap, err := g.store.Snapshot()
	if err != nil {
		return err
	}
	now := g.now()
	units, err := g.choose(snap, now, force)
	if err != nil {
		return err
	}
	tokens, err := g.chooseACLTokens(snap, gcAge{now: now, force: force})
	if err != nil {
		return err
	}
	var total store.GarbageCollectRequest
	for _, part := range splitGC(units, g.cfg.BatchSize) {
		if _, _, err := g.raft.Apply(ctx, store.GarbageCollectRequestType, part); err != nil {
			return fmt.Errorf("garbage collect: %w", err)
		}
		total.Evals = append(total.Evals, part.Evals...)
		total.Allocs = append(total.Allocs, part.Allocs...)
		total.Jobs = append(total.Jobs, part.Jobs...)
		total.Nodes = append(total.Nodes, part.Nodes...)
		total.Deployments = append(total.Deployments, part.Deployments...)
	}
	if len(units) > 0 {
		g.log.Info("garbage collected", "evals", len(total.Evals), "allocs", len(total.Allocs), "jobs", len(total.Jobs),
			"nodes", len(total.Nodes), "deployments", len(total.Deployments), "forced", force)
	}
	if err := g.deleteACLTokens(ctx, tokens); err != nil {
		return err
	}
	if len(tokens) > 0 {
		g.log.Info("garbage collected expired ACL tokens", "tokens", len(tokens), "forced", force)
	}
	return nil
}

// chooseACLTokens returns the accessors of the expired tokens to collect:
// expired for ACLTokenThreshold at age.now, or expired at all when forced.
func (g *GarbageCollector) chooseACLTokens(snap *store.StateSnapshot, age gcAge) ([]string, error) {
	tokens, err := snap.ACLTokens(nil, "")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range tokens {
		// IsExpired first: force ignores the threshold, never the expiry.
		if !t.IsExpired(age.now) || !age.older(t.ExpirationTime.UnixNano(), g.cfg.ACLTokenThreshold) {
			continue
		}
		out = append(out, t.AccessorID)
	}
	return out, nil
}

// deleteACLTokens deletes tokens in commands of at most BatchSize. The
// delete command is all or none, so a token deleted by a user since the
// snapshot would fail its whole batch: the batch is then retried once
// without the tokens already gone.
func (g *GarbageCollector) deleteACLTokens(ctx context.Context, accessors []string) error {
	for batch := range slices.Chunk(accessors, g.cfg.BatchSize) {
		_, _, err := g.raft.Apply(ctx, store.ACLTokenDeleteRequestType, &store.ACLTokenDeleteRequest{AccessorIDs: batch})
		if errors.Is(err, state.ErrNotFound) {
			var left []string
			left, err = g.existingACLTokens(batch)
			if err == nil && len(left) > 0 {
				_, _, err = g.raft.Apply(ctx, store.ACLTokenDeleteRequestType, &store.ACLTokenDeleteRequest{AccessorIDs: left})
			}
		}
		if err != nil {
			return fmt.Errorf("garbage collect ACL tokens: %w", err)
		}
	}
	return nil
}

// existingACLTokens returns the accessors that still name a token.
func (g *GarbageCollector) existingACLTokens(accessors []string) ([]string, error) {
	var out []string
	for _, id := range accessors {
		t, err := g.store.ACLTokenByAccessorID(nil, id)
		if err != nil {
			return nil, err
		}
		if t != nil {
			out = append(out, id)
		}
	}
	return out, nil
}

// gcAge decides whether a time stamped in Unix nanoseconds is older than
// threshold at now. A zero stamp (unknown age) only counts when forced.
type gcAge struct {
	now   time.Time
	force bool
}

func (a gcAge) older(stamp int64, threshold time.Duration) bool {
	if a.force {
		return true
	}
	return stamp != 0 && a.now.Sub(time.Unix(0, stamp)) >= threshold
}

// gcUnit is what must be deleted in one command: a job with its
// evaluations and allocations (deleting them apart would make the job look
// pending in between), or an evaluation with its allocations.
type gcUnit struct {
	job         *store.GarbageCollectJob
	evals       []string
	allocs      []string
	nodes       []string
	deployments []string
}

func (u gcUnit) size() int {
	n := len(u.evals) + len(u.allocs) + len(u.nodes) + len(u.deployments)
	if u.job != nil {
		n++
	}
	return n
}

// choose picks what to collect from snap.
func (g *GarbageCollector) choose(snap *store.StateSnapshot, now time.Time, force bool) ([]gcUnit, error) {
	age := gcAge{now: now, force: force}
	var units []gcUnit
	evalsGone := map[string]bool{}
	allocsGone := map[string]bool{}
	purged := map[jobKey]bool{}
	jobs, err := snap.Jobs(nil, "*", "")
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		ok, evals, allocs, err := g.jobCollectable(snap, j, age)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		u := gcUnit{job: &store.GarbageCollectJob{Namespace: j.Namespace, ID: j.ID, JobModifyIndex: j.JobModifyIndex}}
		purged[jobKey{j.Namespace, j.ID}] = true
		for _, e := range evals {
			evalsGone[e.ID] = true
			u.evals = append(u.evals, e.ID)
		}
		for _, a := range allocs {
			allocsGone[a.ID] = true
			u.allocs = append(u.allocs, a.ID)
		}
		units = append(units, u)
	}
	evals, err := snap.Evals(nil, "*", "")
	if err != nil {
		return nil, err
	}
	for _, e := range evals {
		if evalsGone[e.ID] || !e.Terminal() {
			continue
		}
		threshold := g.cfg.EvalThreshold
		if e.Type == state.JobTypeBatch || e.Type == state.JobTypeSysBatch {
			threshold = g.cfg.BatchEvalThreshold
		}
		if !age.older(e.ModifyTime, threshold) {
			continue
		}
		// The history of a dead job, and of a batch job, goes with the
		// job: collecting it alone would make the job look pending.
		job, err := snap.JobByID(nil, e.Namespace, e.JobID)
		if err != nil {
			return nil, err
		}
		if job != nil && (job.Status == state.JobStatusDead || job.Type == state.JobTypeBatch || job.Type == state.JobTypeSysBatch) {
			continue
		}
		allocs, err := snap.AllocsByEval(nil, e.ID)
		if err != nil {
			return nil, err
		}
		if !allDone(allocs, age, threshold) {
			continue
		}
		u := gcUnit{evals: []string{e.ID}}
		evalsGone[e.ID] = true
		for _, a := range allocs {
			allocsGone[a.ID] = true
			u.allocs = append(u.allocs, a.ID)
		}
		units = append(units, u)
	}
	allocs, err := snap.Allocs(nil, "*", "")
	if err != nil {
		return nil, err
	}
	orphans := gcUnit{}
	for _, a := range allocs {
		if allocsGone[a.ID] || !a.Terminal() || !age.older(a.ModifyTime, g.cfg.EvalThreshold) {
			continue
		}
		if e, err := snap.EvalByID(nil, a.EvalID); err != nil {
			return nil, err
		} else if e == nil {
			orphans.allocs = append(orphans.allocs, a.ID)
		}
	}
	nodes, err := g.chooseNodes(snap, age)
	if err != nil {
		return nil, err
	}
	deps, err := g.chooseDeployments(snap, age, purged)
	if err != nil {
		return nil, err
	}
	// Allocations, nodes and deployments need not go together: one unit
	// each, which splitGC packs.
	for _, id := range orphans.allocs {
		units = append(units, gcUnit{allocs: []string{id}})
	}
	for _, id := range nodes {
		units = append(units, gcUnit{nodes: []string{id}})
	}
	for _, id := range deps {
		units = append(units, gcUnit{deployments: []string{id}})
	}
	return units, nil
}

// jobCollectable reports whether a job may be purged, with its evaluations
// and allocations.
func (g *GarbageCollector) jobCollectable(snap *store.StateSnapshot, j *state.Job, age gcAge) (bool, []*state.Evaluation, []*state.Allocation, error) {
	if j.Status != state.JobStatusDead || j.IsPeriodic() || j.IsParameterized() {
		return false, nil, nil, nil
	}
	if !j.Stop && j.Type != state.JobTypeBatch && j.Type != state.JobTypeSysBatch {
		return false, nil, nil, nil
	}
	if !age.older(j.SubmitTime, g.cfg.JobThreshold) {
		return false, nil, nil, nil
	}
	evals, err := snap.EvalsByJob(nil, j.Namespace, j.ID)
	if err != nil {
		return false, nil, nil, err
	}
	for _, e := range evals {
		if !e.Terminal() || !age.older(e.ModifyTime, g.cfg.JobThreshold) {
			return false, nil, nil, nil
		}
	}
	allocs, err := snap.AllocsByJob(nil, j.Namespace, j.ID, true)
	if err != nil {
		return false, nil, nil, err
	}
	if !allDone(allocs, age, g.cfg.JobThreshold) {
		return false, nil, nil, nil
	}
	return true, evals, allocs, nil
}

// allDone reports whether every allocation is terminal and older than
// threshold.
func allDone(allocs []*state.Allocation, age gcAge, threshold time.Duration) bool {
	for _, a := range allocs {
		if !a.Terminal() || !age.older(a.ModifyTime, threshold) {
			return false
		}
	}
	return true
}

// chooseNodes adds the down nodes to collect.
func (g *GarbageCollector) chooseNodes(snap *store.StateSnapshot, age gcAge) ([]string, error) {
	nodes, err := snap.Nodes(nil, "")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range nodes {
		if n.Status != state.NodeStatusDown || !age.older(n.StatusUpdatedAt*int64(time.Second), g.cfg.NodeThreshold) {
			continue
		}
		allocs, err := snap.AllocsByNode(nil, n.ID)
		if err != nil {
			return nil, err
		}
		live := false
		for _, a := range allocs {
			live = live || !a.Terminal()
		}
		if !live {
			out = append(out, n.ID)
		}
	}
	return out, nil
}

// chooseDeployments adds the finished deployments to collect.
func (g *GarbageCollector) chooseDeployments(snap *store.StateSnapshot, age gcAge, purged map[jobKey]bool) ([]string, error) {
	deps, err := snap.Deployments(nil, "*", "")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range deps {
		if d.Active() || !age.older(d.ModifyTime, g.cfg.DeploymentThreshold) {
			continue
		}
		key := jobKey{d.Namespace, d.JobID}
		if !purged[key] {
			job, err := snap.JobByID(nil, d.Namespace, d.JobID)
			if err != nil {
				return nil, err
			}
			if job != nil {
				latest, err := snap.LatestDeploymentByJob(nil, d.Namespace, d.JobID)
				if err != nil {
					return nil, err
				}
				if latest != nil && latest.ID == d.ID {
					continue
				}
			}
		}
		out = append(out, d.ID)
	}
	return out, nil
}

// splitGC packs units into commands of at most size objects; a unit
// larger than size goes alone.
func splitGC(units []gcUnit, size int) []*store.GarbageCollectRequest {
	var out []*store.GarbageCollectRequest
	var cur *store.GarbageCollectRequest
	n := 0
	for _, u := range units {
		if cur == nil || (n > 0 && n+u.size() > size) {
			cur, n = &store.GarbageCollectRequest{}, 0
			out = append(out, cur)
		}
		if u.job != nil {
			cur.Jobs = append(cur.Jobs, *u.job)
		}
		cur.Evals = append(cur.Evals, u.evals...)
		cur.Allocs = append(cur.Allocs, u.allocs...)
		cur.Nodes = append(cur.Nodes, u.nodes...)
		cur.Deployments = append(cur.Deployments, u.deployments...)
		n += u.size()
	}
	return out
}
