package client

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// watchLoop learns the node's allocations by blocking query and brings
// the local runners in line with them. It reads them as changes (GET
// /v1/node/:id/allocations/changes?server_changes=true&delta=true): an
// answer carries whole only the allocations the servers modified since
// the previous answer, names those that left the node, and says how many
// it holds, so that its cost, on both sides, is in proportion to the
// changes and not to the node's allocations (syncDelta). The first
// answer, and one after a delta that does not add up (an allocation left
// unnamed), names every allocation instead (mergeChanges, syncAllocs);
// the others then come from known, the allocations last read. The
// client's own reports do not count as changes: they neither wake it nor
// come back to it. Each job version comes once per answer
// (shared_jobs=true).
func (c *Client) watchLoop(ctx context.Context) {
	select {
	case <-c.registered:
	case <-ctx.Done():
		return
	}
	bo := backoff{min: c.cfg.MinBackoff, max: c.cfg.MaxBackoff}
	var index uint64
	known := map[string]*state.Allocation{}
	// needList: the next read asks at once (not blocking) for every
	// allocation's name, a delta having left known in doubt.
	needList := false
	// jobs are the job versions shareJobs hands out, kept from one
	// answer to the next (an index of the runners' jobs at every wake-up
	// cost time in proportion to the node's allocations); pruned to those
	// of known when it outgrows them.
	jobs := c.jobsInUse()
	for ctx.Err() == nil {
		changes, lastIndex, local, err := c.readChanges(ctx, index, needList)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if api.IsNotFound(err) || errors.Is(err, state.ErrNotFound) {
				c.checkRegistered()
			}
			c.log.Warn("watching allocations failed", "error", err)
			sleepCtx(ctx, bo.next())
			continue
		}
		bo.reset()
		if lastIndex < index {
			// The servers went back in time (state restored from an
			// older snapshot): start over, reading every allocation.
			index, needList = 0, false
			clear(known)
			continue
		}
		if len(jobs) > 2*len(known)+64 {
			jobs = jobsOf(known)
		}
		if changes.Allocs == nil {
			if !mergeDelta(known, changes) {
				// An allocation left the node unnamed (or the answer
				// lags behind known): ask for every name, from the same
				// index.
				needList = true
				continue
			}
			shareJobs(changes.Changed, jobs)
			c.syncDelta(changes.Changed, changes.Removed, lastIndex)
		} else {
			allocs, complete := mergeChanges(known, changes)
			if !complete {
				// An allocation this answer did not carry whole is not
				// known here (a server that lags behind the one of the
				// previous answer): read them all again.
				index, needList = 0, false
				continue
			}
			shareJobs(changes.Changed, jobs)
			c.syncAllocs(allocs, lastIndex)
		}
		index, needList = lastIndex, false
		// Let the next changes gather (Config.WatchGather,
		// LocalWatchGather).
		if len(changes.Changed) > 0 && !sleepCtx(ctx, c.gatherAfter(local)) {
			return
		}
	}
}

// gatherAfter is how long the watch lets changes gather after a wake-up
// that brought some, answered by the local server or not.
func (c *Client) gatherAfter(local bool) time.Duration {
	if local {
		return c.cfg.LocalWatchGather
	}
	return c.cfg.WatchGather
}

// readChanges reads the node's allocation changes since index: from the
// server in the agent's own process when there is one and it answers
// (Config.Local), otherwise by HTTP from the servers. Both block until the node's
// allocations change past index, unless needList asks at once for every
// allocation's name (not a delta). lastIndex is the answer's index;
// local tells the server in the agent's own process answered.
func (c *Client) readChanges(ctx context.Context, index uint64, needList bool) (changes *state.NodeAllocChanges, lastIndex uint64, local bool, err error) {
	if c.cfg.Local != nil {
		minIndex := index
		if needList {
			minIndex = 0
		}
		changes, lastIndex, handled, err := c.cfg.Local.NodeAllocChanges(ctx, c.nodeID, index, minIndex, !needList, c.cfg.WatchWait)
		if handled {
			return changes, lastIndex, true, err
		}
	}
	var meta *api.QueryMeta
	err = c.servers.call(ctx, func(s *api.Client) error {
		q := &api.QueryOptions{WaitIndex: index, WaitTime: c.cfg.WatchWait, AllowStale: true}
		var err error
		if needList {
			q.WaitIndex = 0
			changes, meta, err = s.Nodes().AllocationChangesShared(ctx, c.nodeID, index, q)
		} else {
			changes, meta, err = s.Nodes().AllocationDelta(ctx, c.nodeID, index, q)
		}
		return err
	})
	if err != nil {
		return nil, 0, false, err
	}
	return changes, meta.LastIndex, false, nil
}

// mergeDelta brings known (allocation ID → latest allocation read) up to
// date with a delta answer of the changes endpoint, and reports whether
// the result holds as many allocations as the node does: when it does
// not, one left the node unnamed, and known must be checked against the
// whole list (mergeChanges).
func mergeDelta(known map[string]*state.Allocation, changes *state.NodeAllocChanges) bool {
	for _, id := range changes.Removed {
		delete(known, id)
	}
	for _, a := range changes.Changed {
		known[a.ID] = a
	}
	return len(known) == changes.Count
}

// mergeChanges brings known (allocation ID → latest allocation read) up to
// date with an answer of the changes endpoint (indexes by AllocModifyIndex)
// and returns the node's whole list. complete is false when the answer
// names an allocation that it does not carry and known does not hold (or
// holds at another index); known is then left as it was.
func mergeChanges(known map[string]*state.Allocation, changes *state.NodeAllocChanges) (allocs []*state.Allocation, complete bool) {
	changed := make(map[string]*state.Allocation, len(changes.Changed))
	for _, a := range changes.Changed {
		changed[a.ID] = a
	}
	allocs = make([]*state.Allocation, 0, len(changes.Allocs))
	for id, mi := range changes.Allocs {
		a := changed[id]
		if a == nil {
			a = known[id]
			if a == nil || a.AllocModifyIndex != mi {
				return nil, false
			}
		}
		allocs = append(allocs, a)
	}
	clear(known)
	for _, a := range allocs {
		known[a.ID] = a
	}
	return allocs, true
}

// jobKey names one version of a job.
type jobKey struct {
	ns, id         string
	version, index uint64
}

func keyOf(j *state.Job) jobKey { return jobKey{j.Namespace, j.ID, j.Version, j.JobModifyIndex} }

// shareJobs makes allocations of the same job version point at one Job
// (the runners' where they have it): every allocation arrives with its
// own copy, and a thousand copies of one job are most of a busy client's
// memory. Jobs read from the servers are never changed in place.
func shareJobs(allocs []*state.Allocation, known map[jobKey]*state.Job) {
	for _, a := range allocs {
		if a.Job == nil {
			continue
		}
		k := keyOf(a.Job)
		if j, ok := known[k]; ok {
			a.Job = j
		} else {
			known[k] = a.Job
		}
	}
}

// jobsOf indexes the jobs of allocs.
func jobsOf(allocs map[string]*state.Allocation) map[jobKey]*state.Job {
	out := make(map[jobKey]*state.Job, len(allocs))
	for _, a := range allocs {
		if a.Job != nil {
			out[keyOf(a.Job)] = a.Job
		}
	}
	return out
}

// jobsInUse indexes the jobs the runners hold.
func (c *Client) jobsInUse() map[jobKey]*state.Job {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[jobKey]*state.Job{}
	for _, ar := range c.runners {
		if j := ar.alloc().Job; j != nil {
			out[keyOf(j)] = j
		}
	}
	return out
}

// syncAllocs starts a runner for each new allocation, passes changed ones
// to their runners (in-place updates, stops), and destroys the runners
// of allocations the servers no longer have. serverIndex is the index
// the list reflects: a runner whose allocation is newer than that is
// kept, since a lagging server cannot know it yet.
func (c *Client) syncAllocs(allocs []*state.Allocation, serverIndex uint64) {
	seen := make(map[string]bool, len(allocs))
	var gone []*allocRunner
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		return
	}
	for _, a := range allocs {
		seen[a.ID] = true
		c.syncAllocLocked(a)
	}
	for id := range c.collected {
		if !seen[id] {
			delete(c.collected, id)
		}
	}
	for id, ar := range c.runners {
		if !seen[id] && ar.alloc().CreateIndex <= serverIndex {
			delete(c.runners, id)
			gone = append(gone, ar)
		}
	}
	c.mu.Unlock()
	c.destroyGone(gone)
}

// syncDelta is syncAllocs for a delta answer, in proportion to it: the
// changed allocations, and those removed from the node.
func (c *Client) syncDelta(changed []*state.Allocation, removed []string, serverIndex uint64) {
	var gone []*allocRunner
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		return
	}
	for _, a := range changed {
		c.syncAllocLocked(a)
	}
	for _, id := range removed {
		delete(c.collected, id)
		if ar := c.runners[id]; ar != nil && ar.alloc().CreateIndex <= serverIndex {
			delete(c.runners, id)
			gone = append(gone, ar)
		}
	}
	c.mu.Unlock()
	c.destroyGone(gone)
}

// syncAllocLocked starts a runner for a when it is new and has something
// to run, or passes it to its runner when it changed. c.mu must be held.
func (c *Client) syncAllocLocked(a *state.Allocation) {
	ar := c.runners[a.ID]
	switch {
	case ar == nil:
		if a.ServerTerminal() || a.ClientTerminal() || a.Job == nil || c.collected[a.ID] {
			return // nothing to run, or run and collected already
		}
		ar = newAllocRunner(c, a, nil)
		c.runners[a.ID] = ar
		c.runAlloc(ar)
	case a.AllocModifyIndex > ar.alloc().AllocModifyIndex:
		ar.update(a)
	}
}

// destroyGone destroys the runners of allocations the servers no longer
// have, each in a goroutine of its own.
func (c *Client) destroyGone(gone []*allocRunner) {
	for _, ar := range gone {
		c.log.Info("allocation removed by the servers; destroying it", "alloc", ar.id)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			ar.destroy()
		}()
	}
}

// gcLoop collects terminal allocations: their directories (and logs)
// are kept GCAllocAge after they finish, and at most GCMaxAllocs of them.
func (c *Client) gcLoop(ctx context.Context) {
	for c.sleep(ctx, c.cfg.GCInterval, nil) {
		c.collect()
	}
}

// collect destroys the terminal runners that are too old or too many.
func (c *Client) collect() int {
	now := c.now()
	type term struct {
		ar *allocRunner
		at int64
	}
	var terms []term
	c.mu.Lock()
	for _, ar := range c.runners {
		ar.mu.Lock()
		at := ar.terminalAt
		ar.mu.Unlock()
		if !at.IsZero() {
			terms = append(terms, term{ar, at.UnixNano()})
		}
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i].at < terms[j].at })
	var victims []*allocRunner
	for i, t := range terms {
		tooMany := len(terms)-i > c.cfg.GCMaxAllocs
		tooOld := now.Sub(t.ar.terminalAtTime()) >= c.cfg.GCAllocAge
		if tooMany || tooOld {
			delete(c.runners, t.ar.id)
			c.collected[t.ar.id] = true
			victims = append(victims, t.ar)
		}
	}
	c.mu.Unlock()
	for _, ar := range victims {
		ar.destroy()
	}
	return len(victims)
}
