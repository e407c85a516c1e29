package packed

import (
	"maps"
	"reflect"
	"slices"
	"unsafe"

	"github.com/schedhq/sched/state"
)

// Compact allocations (issue 19: memory per allocation).
//
// An allocation decoded from the log or a snapshot holds its own copy of
// every string, map and nested struct, although most of them repeat: every
// allocation of a plan has the same evaluation ID, job ID, namespace, group
// name and usually the same granted resources; every allocation on a node
// repeats the node's ID and name. Before an allocation is stored, compact
// replaces each such value by an equal one that is already held (by the
// stored job or node, or by an earlier allocation of the same command or
// restore), so the duplicate becomes garbage.
//
// Only what is equal is shared, so the stored contents, and Apply's result,
// are the same value for value as without compaction: compaction changes
// what is shared in memory, never what is read. Stored objects are never
// mutated (Store's contract), which is what makes the sharing safe. Apply
// compares jobs whole (once per decoded job); a restore, where every
// allocation decodes its own copy of its job, trusts the row identity
// (rowKey) instead, as comparing every copy whole would make a restore a
// quarter slower.

// Rows is what a compactor reads of the store: the rows whose values an
// allocation may share. Each returns nil when there is no such row.
type Rows interface {
	// Node is the node id.
	Node(id string) (*state.Node, error)
	// Job is the jobs table's row of the job id in namespace ns.
	Job(ns, id string) (*state.Job, error)
	// JobVersion is the job versions table's row of that version.
	JobVersion(ns, id string, version uint64) (*state.Job, error)
}

// Compactor holds what one command (or one restore) has already stored,
// for the allocations that follow to share. It is made by a Packer
// (Compactor, RestoreCompactor) and used by one goroutine.
type Compactor struct {
	rows Rows
	// shared is the Packer's cache of count maps, across commands.
	shared *countMaps
	// restore is set while restoring a snapshot: jobs are shared by row
	// identity (rowKey) without being compared whole.
	restore bool
	// strs interns free-form strings (evaluation IDs, descriptions) within
	// the command.
	strs map[string]string
	// jobs maps a decoded job to the stored one that replaces it (itself
	// when none does), so a job that many allocations of a command share
	// is compared once.
	jobs map[*state.Job]*state.Job
	// seen maps a job row's identity to the first job kept for it: in a
	// restore, every allocation decodes its own copy of its job.
	seen map[jobRowKey]*state.Job
	// resources holds the last resources granted per group.
	resources map[groupKey]*state.AllocatedResources
	// counts holds the last distinct metric maps seen, per field.
	counts [metricMapFields][]map[string]int
	quota  [][]string
	// details holds the last distinct task event details seen.
	details []map[string]string
	// nodes caches, in a restore, the node rows allocations name (never
	// an absent one): a restore inserts each row once, so a row found
	// stays the row, and a memdb lookup per allocation was a third of
	// what compaction cost a restore of 10,000 nodes' allocations.
	nodes map[string]*state.Node
}

// jobRowKey identifies one write of a job row (see rowKey).
type jobRowKey struct {
	ns, id                                        string
	version, create, jobModify, modify, submitted uint64
}

// groupKey names a task group of a job.
type groupKey struct{ ns, job, group string }

// metricMapFields is how many map[string]int fields AllocMetric has.
const metricMapFields = 5

// sharedMaps is how many distinct maps of one metric field a command
// keeps for sharing: plans repeat the same few.
const sharedMaps = 4

func newCompactor(rows Rows, counts *countMaps, restore bool) *Compactor {
	return &Compactor{
		rows:      rows,
		shared:    counts,
		restore:   restore,
		strs:      map[string]string{},
		jobs:      map[*state.Job]*state.Job{},
		seen:      map[jobRowKey]*state.Job{},
		resources: map[groupKey]*state.AllocatedResources{},
		nodes:     map[string]*state.Node{},
	}
}

// str returns a string equal to s, shared within the command.
func (c *Compactor) str(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := c.strs[s]; ok {
		return v
	}
	c.strs[s] = s
	return s
}

// Alloc compacts a, which is about to replace old (nil when new) and is
// not shared yet. What a kept from old is compact already and left alone.
func (c *Compactor) Alloc(old, a *state.Allocation) error { return c.alloc(old, a, false) }

// AllocRecord is Alloc for a new allocation that a Reader decoded from a
// snapshot's records in a restore (RestoreCompactor): the reader interned
// the strings records share already, and the allocations of one job row
// hold one decoded job, so these are shared by identity rather than
// looked up again (a map lookup per string and per job was a fifth of
// what compaction cost a restore).
func (c *Compactor) AllocRecord(a *state.Allocation) error { return c.alloc(nil, a, c.restore) }

// alloc is Alloc; with records, a is AllocRecord's.
func (c *Compactor) alloc(old, a *state.Allocation, records bool) error {
	if old == nil {
		old = &state.Allocation{}
	}
	if a.Job != nil {
		job := a.Job
		if kept, ok := c.jobs[job]; ok && records {
			job = kept
		} else if job != old.Job {
			var err error
			if job, err = c.job(job); err != nil {
				return err
			}
			if records {
				c.jobs[a.Job] = job
			}
		}
		a.Job = job
		if a.Namespace == job.Namespace {
			a.Namespace = job.Namespace
		}
		if a.JobID == job.ID {
			a.JobID = job.ID
		}
		for _, tg := range job.TaskGroups {
			if tg != nil && tg.Name == a.TaskGroup {
				a.TaskGroup = tg.Name
				break
			}
		}
	}
	if a.NodeID != "" {
		n, err := c.node(a.NodeID)
		if err != nil {
			return err
		}
		if n != nil {
			a.NodeID = n.ID
			if a.NodeName == n.Name {
				a.NodeName = n.Name
			}
		}
	}
	if !records {
		a.Namespace = c.str(a.Namespace)
		a.JobID = c.str(a.JobID)
		a.TaskGroup = c.str(a.TaskGroup)
		a.NodeID = c.str(a.NodeID)
		a.NodeName = c.str(a.NodeName)
		a.EvalID = c.str(a.EvalID)
		a.DeploymentID = c.str(a.DeploymentID)
		a.FollowupEvalID = c.str(a.FollowupEvalID)
		a.DesiredDescription = c.str(a.DesiredDescription)
		a.ClientDescription = c.str(a.ClientDescription)
	}
	a.DesiredStatus = desiredStatus(a.DesiredStatus)
	a.ClientStatus = clientStatus(a.ClientStatus)
	if a.AllocatedResources != old.AllocatedResources {
		a.AllocatedResources = c.resourcesOf(groupKey{a.Namespace, a.JobID, a.TaskGroup}, a.AllocatedResources)
	}
	if a.Metrics != nil && a.Metrics != old.Metrics {
		a.Metrics = c.metrics(a.Metrics)
	}
	if len(a.TaskStates) > 0 && !sameMap(a.TaskStates, old.TaskStates) {
		a.TaskStates = c.taskStates(a.TaskStates)
	}
	return nil
}

// desiredStatus returns the package constant equal to s, or s.
func desiredStatus(s string) string {
	for _, k := range [...]string{state.AllocDesiredStatusRun, state.AllocDesiredStatusStop, state.AllocDesiredStatusEvict} {
		if s == k {
			return k
		}
	}
	return s
}

// clientStatus returns the package constant equal to s, or s.
func clientStatus(s string) string {
	for _, k := range [...]string{
		state.AllocClientStatusPending, state.AllocClientStatusRunning, state.AllocClientStatusComplete,
		state.AllocClientStatusFailed, state.AllocClientStatusLost, state.AllocClientStatusUnknown,
	} {
		if s == k {
			return k
		}
	}
	return s
}

// node returns the node row id, or nil: in a restore from the rows
// found before.
func (c *Compactor) node(id string) (*state.Node, error) {
	if !c.restore {
		return c.rows.Node(id)
	}
	if n, ok := c.nodes[id]; ok {
		return n, nil
	}
	n, err := c.rows.Node(id)
	if err == nil && n != nil {
		c.nodes[n.ID] = n
	}
	return n, err
}

// job returns a job equal to j that is already held: the stored jobs or
// versions row, or an earlier allocation's job with the same row identity
// (rowKey); else j.
func (c *Compactor) job(j *state.Job) (*state.Job, error) {
	if v, ok := c.jobs[j]; ok {
		return v, nil
	}
	kept := j
	if j.ModifyIndex != 0 {
		k := rowKey(j)
		cand, ok := c.seen[k]
		if !ok {
			row, err := c.storedRow(k)
			if err != nil {
				return nil, err
			}
			cand = row
		}
		// A job built by a command's writer rather than read from the
		// store may claim a row's indexes: Apply shares only what is
		// equal.
		if cand != nil && (cand == j || c.restore || reflect.DeepEqual(cand, j)) {
			kept = cand
		} else {
			c.seen[k] = j
		}
	}
	if !c.restore { // in a restore, no two allocations share a decoded job
		c.jobs[j] = kept
	}
	return kept, nil
}

// storedRow returns the row of the jobs or job versions table that has
// identity k, if there is one.
func (c *Compactor) storedRow(k jobRowKey) (*state.Job, error) {
	row, err := c.rows.Job(k.ns, k.id)
	if err != nil || (row != nil && rowKey(row) == k) {
		return row, err
	}
	row, err = c.rows.JobVersion(k.ns, k.id, k.version)
	if err != nil || (row != nil && rowKey(row) == k) {
		return row, err
	}
	return nil, nil
}

// rowKey is what identifies one write of a job row: the store stamps every
// write with the command's index (ModifyIndex) and commits one row per job
// and command, so the copies of a stored job that agree on it are copies of
// one row. Only a job built by hand (a test's) can claim a row's identity
// with other content.
func rowKey(j *state.Job) jobRowKey {
	return jobRowKey{
		ns: j.Namespace, id: j.ID, version: j.Version, create: j.CreateIndex,
		jobModify: j.JobModifyIndex, modify: j.ModifyIndex, submitted: uint64(j.SubmitTime),
	}
}

// resourcesOf returns resources equal to r, shared with the previous
// allocation of the group when they are equal.
func (c *Compactor) resourcesOf(g groupKey, r *state.AllocatedResources) *state.AllocatedResources {
	if r == nil {
		return nil
	}
	prev := c.resources[g]
	if prev != nil && reflect.DeepEqual(prev, r) {
		return prev
	}
	if prev != nil && reflect.DeepEqual(prev.Tasks, r.Tasks) {
		// Different ports, same task grants. r is copied rather than
		// changed: only a itself is the caller's to change.
		cp := *r
		cp.Tasks = prev.Tasks
		r = &cp
	}
	c.resources[g] = r
	return r
}

// metrics returns orig, or a copy of it when its maps are not yet the
// shared ones, sharing its maps with earlier equal ones (orig itself is
// never changed). Its Scores need nothing: they are one byte slice with
// no pointer, node IDs packed in it (state.Scores).
func (c *Compactor) metrics(orig *state.AllocMetric) *state.AllocMetric {
	counts := [...]map[string]int{orig.NodesAvailable, orig.ClassFiltered, orig.ConstraintFiltered, orig.ClassExhausted, orig.DimensionExhausted}
	changed := false
	for i, m := range counts {
		counts[i] = c.countMap(i, m)
		changed = changed || !sameMap(counts[i], m)
	}
	quota := orig.QuotaExhausted
	if quota != nil {
		if i := slices.IndexFunc(c.quota, func(q []string) bool { return slices.Equal(q, quota) }); i >= 0 {
			changed = changed || unsafe.SliceData(c.quota[i]) != unsafe.SliceData(quota)
			quota = c.quota[i]
		} else if len(c.quota) < sharedMaps {
			c.quota = append(c.quota, quota)
		}
	}
	// A metric whose maps are the shared ones already (a packed plan's
	// reader interns them as it decodes) is kept as it is: copying it
	// made every placement's metric twice.
	if !changed {
		return orig
	}
	cp := *orig
	cp.NodesAvailable, cp.ClassFiltered, cp.ConstraintFiltered, cp.ClassExhausted, cp.DimensionExhausted = counts[0], counts[1], counts[2], counts[3], counts[4]
	cp.QuotaExhausted = quota
	return &cp
}

// countMap returns a map equal to m (nil when m is nil), shared with an
// earlier one of field i when there is one: of this command, or of any
// command before (the Packer's countMaps).
func (c *Compactor) countMap(i int, m map[string]int) map[string]int {
	if m == nil {
		return nil
	}
	seen := c.counts[i]
	// The same map first: a packed plan's reader hands every placement
	// of an evaluation the one map it interned, which maps.Equal would
	// walk entry by entry at every placement.
	for _, s := range seen {
		if sameMap(s, m) {
			return s
		}
	}
	for _, s := range seen {
		if maps.Equal(s, m) {
			return s
		}
	}
	m = c.shared.intern(m)
	if len(seen) < sharedMaps {
		c.counts[i] = append(seen, m)
	} else {
		seen[len(seen)-1] = m
	}
	return m
}

// taskStates returns a copy of the task states a client reported whose
// strings and event details are shared: with the package constants (task
// states, event types) or within the command (messages).
func (c *Compactor) taskStates(in map[string]*state.TaskState) map[string]*state.TaskState {
	out := make(map[string]*state.TaskState, len(in))
	for name, ts := range in {
		if ts == nil {
			out[name] = nil
			continue
		}
		cp := *ts
		cp.State = c.str(cp.State)
		if ts.Events != nil {
			cp.Events = make([]*state.TaskEvent, len(ts.Events))
			for i, e := range ts.Events {
				if e != nil {
					cp.Events[i] = c.event(*e)
				}
			}
		}
		out[c.str(name)] = &cp
	}
	return out
}

// event returns e with its strings and details shared.
func (c *Compactor) event(e state.TaskEvent) *state.TaskEvent {
	for _, p := range []*string{
		&e.Type, &e.RestartReason, &e.SetupError, &e.DriverError, &e.Message, &e.KillError, &e.KillReason,
		&e.DownloadError, &e.ValidationError, &e.FailedSibling, &e.SecretsError, &e.TaskSignalReason,
		&e.TaskSignal, &e.DriverMessage, &e.DisplayMessage,
	} {
		*p = c.str(*p)
	}
	if e.Details != nil {
		if i := slices.IndexFunc(c.details, func(d map[string]string) bool { return maps.Equal(d, e.Details) }); i >= 0 {
			e.Details = c.details[i]
		} else if len(c.details) < sharedMaps {
			c.details = append(c.details, e.Details)
		}
	}
	return &e
}
