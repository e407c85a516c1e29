package store

import (
	"fmt"
	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
)

// EvalByID returns an evaluation, or nil.
func (r reader) EvalByID(ws memdb.WatchSet, id string) (*state.Evaluation, error) {
	return first[*state.Evaluation](ws, r.txn(), TableEvals, indexID, id)
}

// EvalsByJob lists a job's evaluations, ordered by ID.
func (r reader) EvalsByJob(ws memdb.WatchSet, ns, jobID string) ([]*state.Evaluation, error) {
	return list[*state.Evaluation](ws, r.txn(), nil, TableEvals, indexJob, ns, jobID)
}

// Evals lists the evaluations of namespace ns ("*" for every namespace)
// whose ID starts with prefix, ordered by ID.
func (r reader) Evals(ws memdb.WatchSet, ns, prefix string) ([]*state.Evaluation, error) {
	return byNamespaceAndPrefix(ws, r.txn(), TableEvals, ns, prefix, func(e *state.Evaluation) string { return e.Namespace })
}

// EvalsModifiedAfter lists the evaluations written at an index above
// index, in the order they were written (ModifyIndex, then ID). Its cost
// is the number it returns, not the number of evaluations.
func (r reader) EvalsModifiedAfter(ws memdb.WatchSet, index uint64) ([]*state.Evaluation, error) {
	iter, err := r.txn().LowerBound(TableEvals, indexModify, index+1)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", TableEvals, err)
	}
	watch(ws, iter.WatchCh())
	var out []*state.Evaluation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*state.Evaluation))
	}
	return out, nil
}

// upsertEval writes an evaluation, keeping the creation stamps of the one
// it replaces, and schedules its job's status for a refresh.
func upsertEval(t *writeTxn, e *state.Evaluation) error {
	if e.ID == "" {
		return state.Invalidf("ID", "missing evaluation ID")
	}
	old, err := first[*state.Evaluation](nil, t.Txn, TableEvals, indexID, e.ID)
	if err != nil {
		return err
	}
	e.CreateIndex = t.index
	if old != nil {
		e.CreateIndex = old.CreateIndex
		if e.CreateTime == 0 {
			e.CreateTime = old.CreateTime
		}
	}
	e.ModifyIndex = t.index
	if err := t.insert(TableEvals, e); err != nil {
		return err
	}
	t.jobs[nsID{e.Namespace, e.JobID}] = true
	return nil
}

// upsertEvals writes the evaluations of a request's list named field.
func upsertEvals(t *writeTxn, field string, evals []*state.Evaluation) error {
	for i, e := range evals {
		if e == nil {
			return state.Invalidf(state.Fieldf(field, i, "ID"), "missing evaluation")
		}
		if err := upsertEval(t, e); err != nil {
			return prefixField(state.Fieldf(field, i, ""), err)
		}
	}
	return nil
}

// applyEvalUpdate creates or updates evaluations.
func applyEvalUpdate(t *writeTxn, req *EvalUpdateRequest) (any, error) {
	return nil, upsertEvals(t, "Evals", req.Evals)
}

// applyEvalDelete deletes evaluations and allocations (garbage collection),
// with the service registrations of those allocations.
// IDs that are already gone are skipped, so a repeated collection is
// harmless.
func applyEvalDelete(t *writeTxn, req *EvalDeleteRequest) (any, error) {
	for _, id := range req.Evals {
		e, err := first[*state.Evaluation](nil, t.Txn, TableEvals, indexID, id)
		if err != nil {
			return nil, err
		}
		if e == nil {
			continue
		}
		if err := t.delete(TableEvals, e); err != nil {
			return nil, err
		}
		t.jobs[nsID{e.Namespace, e.JobID}] = true
	}
	for _, id := range req.Allocs {
		a, err := t.allocByID(id)
		if err != nil {
			return nil, err
		}
		if a == nil {
			continue
		}
		if err := t.delete(TableAllocs, a); err != nil {
			return nil, err
		}
		if err := deleteServicesOf(t, indexAlloc, a.ID); err != nil {
			return nil, err
		}
		if err := updateSummaryForAlloc(t, a, nil); err != nil {
			return nil, err
		}
		t.jobs[nsID{a.Namespace, a.JobID}] = true
	}
	return nil, nil
}
