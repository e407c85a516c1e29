package store

import (
	"slices"
	"strings"

	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
)

// JobByID returns the current version of a job, or nil when it does not
// exist.
func (r reader) JobByID(ws memdb.WatchSet, ns, id string) (*state.Job, error) {
	return first[*state.Job](ws, r.txn(), TableJobs, indexID, ns, id)
}

// Jobs lists the jobs of namespace ns ("*" for every namespace) whose ID
// starts with prefix, ordered by namespace, then ID.
func (r reader) Jobs(ws memdb.WatchSet, ns, prefix string) ([]*state.Job, error) {
	txn := r.txn()
	if ns == allNamespaces {
		keep := func(j *state.Job) bool { return strings.HasPrefix(j.ID, prefix) }
		return list(ws, txn, keep, TableJobs, indexID)
	}
	return list[*state.Job](ws, txn, nil, TableJobs, indexID+"_prefix", ns, prefixArg(prefix))
}

// JobVersions lists the retained versions of a job, newest first.
func (r reader) JobVersions(ws memdb.WatchSet, ns, id string) ([]*state.Job, error) {
	versions, err := jobVersions(ws, r.txn(), ns, id)
	slices.Reverse(versions)
	return versions, err
}

// jobVersions lists the retained versions of a job, oldest first.
func jobVersions(ws memdb.WatchSet, txn *memdb.Txn, ns, id string) ([]*state.Job, error) {
	return list[*state.Job](ws, txn, nil, TableJobVersion, indexID+"_prefix", ns, id)
}

// JobByIDAndVersion returns one version of a job, or nil when it is not
// retained.
func (r reader) JobByIDAndVersion(ws memdb.WatchSet, ns, id string, version uint64) (*state.Job, error) {
	return first[*state.Job](ws, r.txn(), TableJobVersion, indexID, ns, id, version)
}

// HoldsJob reports whether j is itself (the same object, not an equal
// copy) the current row of its job or of its version: a job read from the
// store and not copied since. A plan whose job the store holds can name
// it by JobRef.
func (r reader) HoldsJob(j *state.Job) bool {
	if j == nil {
		return false
	}
	if cur, err := r.JobByID(nil, j.Namespace, j.ID); err == nil && cur == j {
		return true
	}
	v, err := r.JobByIDAndVersion(nil, j.Namespace, j.ID, j.Version)
	return err == nil && v == j
}

// JobSubmission returns the source a job version was registered from, or
// nil when none was given or it is no longer retained.
func (r reader) JobSubmission(ws memdb.WatchSet, ns, id string, version uint64) (*state.JobSubmission, error) {
	return first[*state.JobSubmission](ws, r.txn(), TableJobSubmission, indexID, ns, id, version)
}

// applyJobRegister registers a job version and its evaluation; see
// JobRegisterRequest.
func applyJobRegister(t *writeTxn, req *JobRegisterRequest) (any, error) {
	job := req.Job
	switch {
	case job == nil:
		return nil, state.Invalidf("Job", "missing job")
	case job.ID == "":
		return nil, state.Invalidf("Job.ID", "missing job ID")
	case job.Namespace == "":
		return nil, state.Invalidf("Job.Namespace", "missing namespace")
	}
	if err := requireNamespace(t, job.Namespace); err != nil {
		return nil, err
	}
	existing, err := first[*state.Job](nil, t.Txn, TableJobs, indexID, job.Namespace, job.ID)
	if err != nil {
		return nil, err
	}
	if req.EnforceIndex {
		if err := checkJobModifyIndex(job, existing, req.JobModifyIndex); err != nil {
			return nil, err
		}
	}
	if req.PreserveCounts && existing != nil {
		for _, tg := range job.TaskGroups {
			if old := existing.LookupTaskGroup(tg.Name); old != nil {
				tg.Count = old.Count
			}
		}
	}

	current := existing
	if existing == nil || existing.SpecChanged(job) {
		job.Version = 0
		job.CreateIndex = t.index
		if existing != nil {
			job.Version = existing.Version + 1
			job.CreateIndex = existing.CreateIndex
		}
		job.ModifyIndex, job.JobModifyIndex = t.index, t.index
		job.SubmitTime = req.Now
		job.Stable = false
		// The status follows from the job's evals and allocs, including
		// the eval below: refreshJobStatuses sets it before commit, and
		// moves the job between its parent's children counters, from the
		// status it had ("" when new).
		job.Status = ""
		if existing != nil {
			job.Status = existing.Status
		}
		if err := putJobVersion(t, job); err != nil {
			return nil, err
		}
		if err := cancelDeployments(t, job.Namespace, job.ID, int64(job.Version), "Cancelled due to newer version of job", req.Now); err != nil {
			return nil, err
		}
		t.jobs[nsID{job.Namespace, job.ID}] = true
		current = job
	}
	if req.Submission != nil {
		if err := putSubmission(t, current, req.Submission, current != job); err != nil {
			return nil, err
		}
	}
	if err := ensureJobSummary(t, current); err != nil {
		return nil, err
	}
	resp := &JobRegisterResponse{
		JobModifyIndex: current.JobModifyIndex,
		Version:        current.Version,
		Index:          t.index,
	}
	if req.Eval != nil {
		if err := insertJobEval(t, req.Eval, current, current.JobModifyIndex, req.Now); err != nil {
			return nil, err
		}
		resp.EvalID, resp.EvalCreateIndex = req.Eval.ID, req.Eval.CreateIndex
	}
	return resp, nil
}

// checkJobModifyIndex is the check-and-set of an EnforceIndex register.
func checkJobModifyIndex(job, existing *state.Job, want uint64) error {
	switch {
	case want == 0 && existing != nil:
		return state.Conflictf("enforcing job modify index 0: job %q already exists with job modify index %d",
			job.ID, existing.JobModifyIndex)
	case want != 0 && existing == nil:
		return state.Conflictf("enforcing job modify index %d: job %q does not exist", want, job.ID)
	case existing != nil && existing.JobModifyIndex != want:
		return state.Conflictf("enforcing job modify index %d: job %q has job modify index %d",
			want, job.ID, existing.JobModifyIndex)
	}
	return nil
}

// putJobVersion writes job as the current version, keeps it in the version
// history and drops versions beyond the retention limit.
func putJobVersion(t *writeTxn, job *state.Job) error {
	if err := t.insert(TableJobs, job); err != nil {
		return err
	}
	if err := t.insert(TableJobVersion, job); err != nil {
		return err
	}
	return pruneJobVersions(t, job)
}

// pruneJobVersions drops the oldest versions of current's job beyond
// JobVersionsRetained. It never drops the current version, nor the newest
// stable one, which an automatic revert falls back to.
func pruneJobVersions(t *writeTxn, current *state.Job) error {
	versions, err := jobVersions(nil, t.Txn, current.Namespace, current.ID)
	if err != nil {
		return err
	}
	excess := len(versions) - t.cfg.JobVersionsRetained
	if excess <= 0 {
		return nil
	}
	stable := -1
	for i := len(versions) - 1; i >= 0; i-- {
		if versions[i].Stable && versions[i].Version != current.Version {
			stable = i
			break
		}
	}
	for i, v := range versions {
		if excess == 0 {
			break
		}
		if i == stable || v.Version == current.Version {
			continue
		}
		if err := t.delete(TableJobVersion, v); err != nil {
			return err
		}
		excess--
	}
	return nil
}

// putSubmission stores sub as the source of job's current version. When
// onlyIfMissing, an existing submission of that version is kept: the job
// did not change, so the submission already there is its true source.
func putSubmission(t *writeTxn, job *state.Job, sub *state.JobSubmission, onlyIfMissing bool) error {
	if onlyIfMissing {
		old, err := first[*state.JobSubmission](nil, t.Txn, TableJobSubmission, indexID, job.Namespace, job.ID, job.Version)
		if err != nil || old != nil {
			return err
		}
	}
	sub.Namespace, sub.JobID = job.Namespace, job.ID
	sub.Version, sub.JobIndex = job.Version, job.JobModifyIndex
	if err := t.insert(TableJobSubmission, sub); err != nil {
		return err
	}
	subs, err := list[*state.JobSubmission](nil, t.Txn, nil, TableJobSubmission, indexID+"_prefix", job.Namespace, job.ID)
	if err != nil {
		return err
	}
	for i := 0; i < len(subs)-t.cfg.JobSubmissionsRetained; i++ {
		if err := t.delete(TableJobSubmission, subs[i]); err != nil {
			return err
		}
	}
	return nil
}

// insertJobEval inserts the evaluation created with a job register or
// deregister. It belongs to job, whatever the leader filled in.
func insertJobEval(t *writeTxn, e *state.Evaluation, job *state.Job, jobModifyIndex uint64, now int64) error {
	e.Namespace, e.JobID = job.Namespace, job.ID
	e.JobModifyIndex = jobModifyIndex
	e.CreateTime, e.ModifyTime = now, now
	if err := upsertEval(t, e); err != nil {
		return prefixField("Eval", err)
	}
	return nil
}

// applyJobDeregister stops or purges a job; see JobDeregisterRequest.
func applyJobDeregister(t *writeTxn, req *JobDeregisterRequest) (any, error) {
	job, err := first[*state.Job](nil, t.Txn, TableJobs, indexID, req.Namespace, req.JobID)
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, state.NotFoundf("job %q in namespace %q not found", req.JobID, req.Namespace)
	}
	resp, err := deregisterJob(t, job, req, req.Eval)
	if err != nil || !isParentJob(job) {
		return resp, err
	}
	// A parent's children go with it.
	children, err := childrenOf(nil, t.Txn, job.Namespace, job.ID)
	if err != nil {
		return nil, err
	}
	evals := map[string]*state.Evaluation{}
	for _, e := range req.ChildEvals {
		evals[e.JobID] = e
	}
	for _, c := range children {
		if _, err := deregisterJob(t, c, req, evals[c.ID]); err != nil {
			return nil, err
		}
	}
	if req.Purge {
		if last, err := first[*state.PeriodicLaunch](nil, t.Txn, TablePeriodicLaunch, indexID, job.Namespace, job.ID); err != nil {
			return nil, err
		} else if last != nil {
			if err := t.delete(TablePeriodicLaunch, last); err != nil {
				return nil, err
			}
		}
	}
	return resp, nil
}

// deregisterJob stops or purges one job as req says, with eval (may be
// nil) to stop its allocations.
func deregisterJob(t *writeTxn, job *state.Job, req *JobDeregisterRequest, eval *state.Evaluation) (*JobDeregisterResponse, error) {
	resp := &JobDeregisterResponse{JobModifyIndex: job.JobModifyIndex, Index: t.index}
	switch {
	case req.Purge:
		if err := purgeJob(t, job); err != nil {
			return nil, err
		}
		resp.JobModifyIndex = t.index
	case !job.Stop:
		stopped := *job
		stopped.Stop = true
		stopped.Stable = false
		stopped.Version++
		stopped.ModifyIndex, stopped.JobModifyIndex = t.index, t.index
		stopped.SubmitTime = req.Now
		if err := putJobVersion(t, &stopped); err != nil {
			return nil, err
		}
		if err := cancelDeployments(t, job.Namespace, job.ID, -1, "Cancelled because job is stopped", req.Now); err != nil {
			return nil, err
		}
		t.jobs[nsID{job.Namespace, job.ID}] = true
		resp.JobModifyIndex = t.index
	}
	if req.NoShutdownDelay {
		if err := skipShutdownDelay(t, job); err != nil {
			return nil, err
		}
	}
	if eval != nil {
		if err := insertJobEval(t, eval, job, resp.JobModifyIndex, req.Now); err != nil {
			return nil, err
		}
		resp.EvalID, resp.EvalCreateIndex = eval.ID, eval.CreateIndex
	}
	return resp, nil
}

// purgeJob deletes a job with its versions, submissions and summary. Its
// evaluations and allocations stay until garbage collection.
func purgeJob(t *writeTxn, job *state.Job) error {
	if err := t.delete(TableJobs, job); err != nil {
		return err
	}
	versions, err := jobVersions(nil, t.Txn, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	for _, v := range versions {
		if err := t.delete(TableJobVersion, v); err != nil {
			return err
		}
	}
	subs, err := list[*state.JobSubmission](nil, t.Txn, nil, TableJobSubmission, indexID+"_prefix", job.Namespace, job.ID)
	if err != nil {
		return err
	}
	for _, s := range subs {
		if err := t.delete(TableJobSubmission, s); err != nil {
			return err
		}
	}
	sum, err := first[*state.JobSummary](nil, t.Txn, TableJobSummary, indexID, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	if sum != nil {
		if err := t.delete(TableJobSummary, sum); err != nil {
			return err
		}
	}
	return updateParentChildren(t, job, job.Status, "")
}

// skipShutdownDelay marks the running allocations of job so that clients
// stop them without waiting for their shutdown delay.
func skipShutdownDelay(t *writeTxn, job *state.Job) error {
	allocs, err := allocsOfJob(nil, t.Txn, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	yes := true
	for _, a := range allocs {
		if a.Terminal() || !sameJobInstance(a, job) {
			continue
		}
		c := *a
		c.DesiredTransition.NoShutdownDelay = &yes
		c.ModifyIndex, c.AllocModifyIndex = t.index, t.index
		if err := t.insert(TableAllocs, &c); err != nil {
			return err
		}
	}
	return nil
}

// sameJobInstance reports whether a belongs to job as registered now rather
// than to an earlier, purged job with the same ID.
func sameJobInstance(a *state.Allocation, job *state.Job) bool {
	return a.Job == nil || a.Job.CreateIndex == job.CreateIndex
}
