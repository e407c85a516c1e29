package jobs

import (
	"cmp"
	"context"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/blocking"
	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// NodeAllocsUpdateRequest is the body of POST /v1/node/:node_id/allocations:
// a client's batched report on its allocations.
type NodeAllocsUpdateRequest struct {
	Allocs []*state.AllocClientUpdate
}

var clientStatuses = []string{
	state.AllocClientStatusPending, state.AllocClientStatusRunning, state.AllocClientStatusComplete,
	state.AllocClientStatusFailed, state.AllocClientStatusLost, state.AllocClientStatusUnknown,
}

var taskStates = []string{state.TaskStatePending, state.TaskStateRunning, state.TaskStateDead}

// nodeAllocations serves GET /v1/node/:node_id/allocations: every
// allocation placed on the node, whole (with its job). It is how a
// client learns its work. Its index is the highest ModifyIndex of the
// node's own allocations, not the allocations table's: a client's
// blocking query then returns when its node's allocations change, not at
// every write to any allocation of the cluster (with thousands of
// placements in flight, every client would poll its whole list).
func (h nodeAPI) nodeAllocations(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	var out []*state.Allocation
	err := h.core.Read(w, r, func(ws memdb.WatchSet, _ string) (uint64, error) {
		n, err := h.lookupNode(ws, p.ByName("node_id"))
		if err != nil {
			return 0, err
		}
		out, err = h.store.AllocsByNode(ws, n.ID)
		return nodeAllocsIndex(out), err
	})
	if err != nil {
		return nil, err
	}
	return nonNil(out), nil
}

// nodeAllocChanges serves GET /v1/node/:node_id/allocations/changes?since=N:
// the ModifyIndex of every allocation on the node, and whole only those
// modified after N (every one when N is 0 or absent). A client that asks
// from the index of its previous answer reads each allocation once per
// change rather than its node's whole list at every change; the blocking
// index is the node's own, as for nodeAllocations. The ACL rule is the
// same as the list's: node:read, or the node's own secret.
//
// With shared_jobs=true an allocation whose job is that of the previous
// allocation of the same job ID in the answer comes without it
// (shareChangedJobs).
//
// With server_changes=true every index in the answer is AllocModifyIndex
// instead: the last change the servers made (placement, stop, new job
// version), not what a client reported; the blocking index is the last
// such change to the node's allocations, removals included (an allocation
// read after the wait may be newer: the next answer carries it again).
// That is all a client agent acts on, and its own report (running, task
// events) then neither wakes its blocking read nor comes back to it
// whole, with its job: in the running scenario a report brought every
// allocation back a second time.
//
// With delta=true (and since above 0) the answer costs in proportion to
// the changes, not to the node's allocations: no Allocs, but Removed and
// Count (state.NodeAllocChanges), read from the node's log of writes
// (store.NodeAllocsChangedSince); the whole list comes only when that log
// does not reach back to since. Without server_changes its blocking index
// is then the node's last write, removals included. Every answer named
// each of a busy node's thousands of allocations, and their encoding was
// a good part of a dev agent's CPU while its client started allocations.
//
// With jobs=false the changed allocations come without their job, and
// with metrics=false without their placement metrics (Metrics), which a
// client agent never reads: with maps of scores and node counts, they
// were a fifth of a one-allocation batch job's answer and more of its
// encoding.
//
// With compact=true the changed allocations come as AllocCompact entries
// (nodeAllocChangesCompact), for a reader that follows only their status
// (sched-bench's client-path follower): a changed allocation whole, its
// task states and events included, is some 3 KB of JSON, its compact
// entry about 300 bytes. It goes with no other form (jobs, shared_jobs,
// metrics): a 400.
func (h nodeAPI) nodeAllocChanges(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	var since uint64
	if v := h.core.Query(r).Get("since"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, codec.BadRequest("since: %q is not an index (an unsigned integer)", v)
		}
		since = n
	}
	byServers, err := codec.BoolParam(h.core.Query(r), "server_changes")
	if err != nil {
		return nil, err
	}
	sharedJobs, err := codec.BoolParam(h.core.Query(r), "shared_jobs")
	if err != nil {
		return nil, err
	}
	delta, err := codec.BoolParam(h.core.Query(r), "delta")
	if err != nil {
		return nil, err
	}
	form := answerForm{shared: sharedJobs}
	if form.jobs, err = boolParamOr(h.core.Query(r), "jobs", true); err != nil {
		return nil, err
	}
	if form.metrics, err = boolParamOr(h.core.Query(r), "metrics", true); err != nil {
		return nil, err
	}
	compact, err := parseChangesCompact(h.core.Query(r))
	if err != nil {
		return nil, err
	}
	indexOf := func(a *state.Allocation) uint64 { return a.ModifyIndex }
	if byServers {
		indexOf = func(a *state.Allocation) uint64 { return a.AllocModifyIndex }
	}
	// A wake-up that finds nothing past the caller's index answers
	// nothing: the answer is built once, from the last read. With
	// server_changes the index is the node's list's own
	// (NodeAllocsServerIndex), so a wake-up for a client's report reads
	// no allocation at all; the allocations are read after the wait,
	// from a state at least as new as that index.
	var nodeID string
	var allocs []*state.Allocation
	err = h.core.Read(w, r, func(ws memdb.WatchSet, _ string) (uint64, error) {
		n, err := h.lookupNode(ws, p.ByName("node_id"))
		if err != nil {
			return 0, err
		}
		nodeID = n.ID
		if byServers {
			return h.store.NodeAllocsServerIndex(ws, n.ID)
		}
		if delta {
			return h.store.NodeAllocsWriteIndex(ws, n.ID)
		}
		allocs, err = h.store.AllocsByNode(ws, n.ID)
		return nodeAllocsIndex(allocs), err
	})
	if err != nil {
		return nil, err
	}
	out, err := nodeChanges(h.store, nodeID, since, indexOf, delta, allocs, byServers || delta)
	if err != nil {
		return nil, err
	}
	if compact {
		return compactChanges(out), nil
	}
	out.Changed = nonNil(form.apply(out.Changed))
	return out, nil
}

// nodeChanges is the changes endpoint's answer for the node, before its
// form (answerForm) is applied: with delta and since above 0, read from
// the node's log of writes when it reaches back to since; otherwise from
// the node's whole list, allocs, read again from the store when reread
// (the blocking read did not read it). Changed holds the store's own
// allocations.
func nodeChanges(st *store.Store, nodeID string, since uint64, indexOf func(*state.Allocation) uint64, delta bool, allocs []*state.Allocation, reread bool) (*state.NodeAllocChanges, error) {
	if delta && since > 0 {
		ch, ok, err := st.NodeAllocsChangedSince(nodeID, since)
		if err != nil {
			return nil, err
		}
		if ok {
			out := &state.NodeAllocChanges{Removed: ch.Removed, Count: ch.Count}
			for _, a := range ch.Changed {
				if indexOf(a) > since {
					out.Changed = append(out.Changed, a)
				}
			}
			return out, nil
		}
	}
	if reread {
		var err error
		if allocs, err = st.AllocsByNode(nil, nodeID); err != nil {
			return nil, err
		}
	}
	out := &state.NodeAllocChanges{Allocs: make(map[string]uint64, len(allocs)), Count: len(allocs)}
	for _, a := range allocs {
		i := indexOf(a)
		out.Allocs[a.ID] = i
		if i > since {
			out.Changed = append(out.Changed, a)
		}
	}
	return out, nil
}

// AllocChanges is the changes endpoint for a client agent in the
// server's own process (`sched agent -dev`, or a server agent with its
// client on), without HTTP: the answer of GET
// /v1/node/:node_id/allocations/changes?server_changes=true&metrics=false&stale
// (with delta=true when delta), blocking as that read does (package
// blocking) when minIndex is above 0, and its index. Through HTTP every
// changed allocation and its job were encoded to JSON by the server and
// decoded by the client: a third of a dev agent's CPU while its client
// started one-allocation jobs. Nomad's client talks to a server in its
// own process the same way, without the network.
//
// The allocations are copies without their placement metrics; each
// carries its job whole (no shared_jobs form is needed: the jobs are the
// store's, one per version, and like everything read from the store must
// never be changed in place). An unknown node is a state.ErrNotFound. A
// client agent in another process has only the HTTP endpoint, whose ACL
// rule (node:read or the node's own secret) this path, in the server's
// own process, has no caller to check.
func (l *Local) AllocChanges(ctx context.Context, nodeID string, since, minIndex uint64, delta bool, wait time.Duration) (*state.NodeAllocChanges, uint64, error) {
	st := l.a.store
	index, err := blocking.Run(ctx, st, blocking.Options{MinIndex: minIndex, Wait: wait}, func(ws memdb.WatchSet) (uint64, error) {
		n, err := st.NodeByID(ws, nodeID)
		if err != nil {
			return 0, err
		}
		if n == nil {
			return 0, state.NotFoundf("node %q", nodeID)
		}
		return st.NodeAllocsServerIndex(ws, nodeID)
	})
	if err != nil {
		return nil, 0, err
	}
	out, err := nodeChanges(st, nodeID, since, func(a *state.Allocation) uint64 { return a.AllocModifyIndex }, delta, nil, true)
	if err != nil {
		return nil, 0, err
	}
	out.Changed = nonNil(answerForm{jobs: true}.apply(out.Changed))
	return out, index, nil
}

// UpdateAllocs is POST /v1/node/:node_id/allocations for a client agent
// in the server's own process, without HTTP: the same checks, the same
// batched write, the same answer; the updates are the caller's until it
// returns. The server must lead: a follower's writes go to the leader by
// HTTP (forwarding), and Writer.Apply refuses them here.
func (l *Local) UpdateAllocs(ctx context.Context, nodeID string, allocs []*state.AllocClientUpdate) (*state.NodeAllocsUpdateResponse, error) {
	return nodeAPI{l.a}.updateAllocs(ctx, nodeID, allocs)
}

// answerForm is the form of an answer's changed allocations: each with
// its job (the default), each job version once (shared), or none with it
// (!jobs: a reader that follows only their status); with their placement
// metrics (the default) or without (!metrics: a client agent).
type answerForm struct{ shared, jobs, metrics bool }

// apply returns changed in form f. The allocations are copied, never
// changed.
func (f answerForm) apply(changed []*state.Allocation) []*state.Allocation {
	if f.jobs && f.shared {
		changed = shareChangedJobs(changed)
	}
	if f.jobs && f.metrics {
		return changed
	}
	out := make([]*state.Allocation, len(changed))
	for i, a := range changed {
		cp := *a
		if !f.jobs {
			cp.Job = nil
		}
		if !f.metrics {
			cp.Metrics = nil
		}
		out[i] = &cp
	}
	return out
}

// nodeAllocChangesCompact is the compact=true answer of the changes
// endpoint: state.NodeAllocChanges with AllocCompact entries.
type nodeAllocChangesCompact struct {
	Allocs  map[string]uint64
	Changed []*AllocCompact
	Removed []string `json:",omitempty"`
	Count   int
}

// compactChanges is ch's compact=true answer.
func compactChanges(ch *state.NodeAllocChanges) *nodeAllocChangesCompact {
	out := &nodeAllocChangesCompact{Allocs: ch.Allocs, Changed: make([]*AllocCompact, len(ch.Changed)),
		Removed: ch.Removed, Count: ch.Count}
	for i, a := range ch.Changed {
		out.Changed[i] = compactOf(a)
	}
	return out
}

// boolParamOr reads the boolean query parameter name of q, def when it is
// absent.
func boolParamOr(q url.Values, name string, def bool) (bool, error) {
	if _, set := q[name]; !set {
		return def, nil
	}
	return codec.BoolParam(q, name)
}

// parseChangesCompact reads the changes endpoint's compact (default
// false): its entries carry no job and no metrics, so any other form
// asked alongside it is a 400.
func parseChangesCompact(q url.Values) (bool, error) {
	compact, err := codec.BoolParam(q, "compact")
	if err != nil || !compact {
		return false, err
	}
	for _, other := range []string{"jobs", "shared_jobs", "metrics"} {
		if on, err := codec.BoolParam(q, other); err != nil {
			return false, err
		} else if on {
			return false, codec.BadRequest("%s: not with compact=true, whose entries carry no job and no metrics", other)
		}
	}
	return true, nil
}

// shareChangedJobs is the shared_jobs=true form of an answer's changed
// allocations: an allocation whose job is the very job of the previous
// allocation of the same job ID in the list goes without it (Job null),
// and the reader takes that one's (api.Nodes.AllocationChangesShared). A
// thousand placements of one job then carry it once, where each carried
// a copy, most of the answer's bytes and of both sides' JSON work. The
// allocations are copied, never changed.
func shareChangedJobs(changed []*state.Allocation) []*state.Allocation {
	type jobRef struct{ ns, id string }
	last := map[jobRef]*state.Job{}
	out := make([]*state.Allocation, len(changed))
	for i, a := range changed {
		out[i] = a
		if a.Job == nil {
			continue
		}
		k := jobRef{a.Namespace, a.JobID}
		if last[k] == a.Job {
			cp := *a
			cp.Job = nil
			out[i] = &cp
			continue
		}
		last[k] = a.Job
	}
	return out
}

// nodeAllocsIndex is the blocking index of a node's allocations: the
// highest ModifyIndex among them.
func nodeAllocsIndex(allocs []*state.Allocation) uint64 {
	var index uint64
	for _, a := range allocs {
		index = max(index, a.ModifyIndex)
	}
	return index
}

// nodeUpdateAllocs serves POST /v1/node/:node_id/allocations. Every
// listed allocation must be on the node (allocations that no longer exist
// are skipped: they may have been garbage collected since the client last
// looked). An allocation the servers still want running that stops on its
// own gets its job an evaluation in the same write: failed or lost
// (TriggeredBy alloc-failure) so the scheduler replaces or reschedules
// it, and completed for service and system jobs (TriggeredBy alloc-stop),
// whose allocations are meant to run for ever. A completed batch or
// sysbatch allocation needs none.
func (h nodeAPI) nodeUpdateAllocs(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	var req NodeAllocsUpdateRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	out, err := h.updateAllocs(r.Context(), p.ByName("node_id"), req.Allocs)
	if err != nil {
		return nil, err
	}
	h.core.SetMeta(w, out.Index)
	return out, nil
}

// updateAllocs checks and writes a node's report on its allocations
// (nodeUpdateAllocs), with the evaluations it calls for.
func (h nodeAPI) updateAllocs(ctx context.Context, nodeID string, allocs []*state.AllocClientUpdate) (*state.NodeAllocsUpdateResponse, error) {
	req := NodeAllocsUpdateRequest{Allocs: allocs}
	if err := validateAllocUpdates(req.Allocs); err != nil {
		return nil, err
	}
	// knownNode: a leader elected a moment ago looks again after its
	// read barrier before a 404, which makes the client register again.
	if _, err := h.knownNode(ctx, nodeID); err != nil {
		return nil, err
	}

	type key struct{ ns, id string }
	triggers := map[key]string{}
	jobs := map[key]*state.Job{}
	updates := make([]*state.Allocation, 0, len(req.Allocs))
	for i, u := range req.Allocs {
		old, err := h.store.AllocByID(nil, u.ID)
		if err != nil {
			return nil, err
		}
		if old == nil {
			continue
		}
		if old.NodeID != nodeID {
			return nil, codec.BadRequest("Allocs[%d].ID: allocation %q is on node %q, not %q", i, u.ID, old.NodeID, nodeID)
		}
		updates = append(updates, &state.Allocation{
			ID: u.ID, ClientStatus: u.ClientStatus, ClientDescription: u.ClientDescription,
			TaskStates: u.TaskStates, DeploymentStatus: u.DeploymentStatus,
		})
		trigger := stopTrigger(old, u.ClientStatus)
		if trigger == "" {
			continue
		}
		k := key{old.Namespace, old.JobID}
		job, seen := jobs[k]
		if !seen {
			if job, err = h.store.JobByID(nil, old.Namespace, old.JobID); err != nil {
				return nil, err
			}
			jobs[k] = job
		}
		if job == nil || job.Stop || (old.Job != nil && old.Job.CreateIndex != job.CreateIndex) {
			continue
		}
		if trigger == state.EvalTriggerAllocStop && (job.Type == state.JobTypeBatch || job.Type == state.JobTypeSysBatch) {
			continue
		}
		if triggers[k] != state.EvalTriggerRetryFailedAlloc {
			triggers[k] = trigger
		}
	}

	now := h.core.Now().UnixNano()
	keys := slices.SortedFunc(maps.Keys(triggers), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.ns, b.ns), cmp.Compare(a.id, b.id))
	})
	evals := make([]*state.Evaluation, 0, len(keys))
	out := &state.NodeAllocsUpdateResponse{EvalIDs: make([]string, 0, len(keys))}
	for _, k := range keys {
		job := jobs[k]
		e := h.newEval(job, 0, triggers[k], now)
		e.JobModifyIndex = job.JobModifyIndex
		evals = append(evals, e)
		out.EvalIDs = append(out.EvalIDs, e.ID)
	}
	cmd := &store.AllocClientUpdateRequest{Allocs: updates, Evals: evals, Now: now}
	// Written with the reports of other nodes that arrive meanwhile
	// (node_allocs_batch.go).
	index, err := h.clientUpdates.submit(ctx, cmd)
	if err != nil {
		return nil, err
	}
	out.Index = index
	return out, nil
}

// stopTrigger returns the trigger of the evaluation an allocation going
// from old to client status next calls for, or "" when it needs none: only
// an allocation the servers want running that newly stops on its own.
func stopTrigger(old *state.Allocation, next string) string {
	if old.ServerTerminal() || old.ClientTerminal() {
		return ""
	}
	switch next {
	case state.AllocClientStatusFailed, state.AllocClientStatusLost:
		return state.EvalTriggerRetryFailedAlloc
	case state.AllocClientStatusComplete:
		return state.EvalTriggerAllocStop
	}
	return ""
}

// validateAllocUpdates checks a client's report, listing every problem
// with its field path.
func validateAllocUpdates(updates []*state.AllocClientUpdate) error {
	v := &state.ValidationError{}
	if len(updates) == 0 {
		v.Add("Allocs", "at least one allocation is required")
	}
	ids := newEntryIDs("Allocs", "allocation")
	for i, u := range updates {
		field := ids.field(i)
		if u == nil {
			v.Add(field, "must not be null")
			continue
		}
		ids.check(v, i, u.ID)
		switch {
		case u.ClientStatus == "":
			v.Add(field+".ClientStatus", "required, one of %v", clientStatuses)
		case !slices.Contains(clientStatuses, u.ClientStatus):
			v.Add(field+".ClientStatus", "%q is not one of %v", u.ClientStatus, clientStatuses)
		}
		for _, task := range slices.Sorted(maps.Keys(u.TaskStates)) {
			ts := u.TaskStates[task]
			tf := field + ".TaskStates[" + task + "]"
			if ts == nil {
				v.Add(tf, "must not be null")
				continue
			}
			if ts.State != "" && !slices.Contains(taskStates, ts.State) {
				v.Add(tf+".State", "%q is not one of %v", ts.State, taskStates)
			}
			for k, ev := range ts.Events {
				if ev == nil {
					v.Add(tf+".Events["+strconv.Itoa(k)+"]", "must not be null")
				}
			}
		}
	}
	return v.Err()
}
