package store

import (
	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
)

// Namespaces lists every namespace, ordered by name.
func (r reader) Namespaces(ws memdb.WatchSet) ([]*state.Namespace, error) {
	return list[*state.Namespace](ws, r.txn(), nil, TableNamespaces, indexID)
}

// NamespaceByName returns a namespace, or nil.
func (r reader) NamespaceByName(ws memdb.WatchSet, name string) (*state.Namespace, error) {
	return first[*state.Namespace](ws, r.txn(), TableNamespaces, indexID, name)
}

// requireNamespace fails with ErrNotFound unless namespace name exists.
func requireNamespace(t *writeTxn, name string) error {
	ns, err := first[*state.Namespace](nil, t.Txn, TableNamespaces, indexID, name)
	if err != nil {
		return err
	}
	if ns == nil {
		return state.NotFoundf("namespace %q not found", name)
	}
	return nil
}

// applyNamespaceUpsert creates or updates namespaces.
func applyNamespaceUpsert(t *writeTxn, req *NamespaceUpsertRequest) (any, error) {
	for i, ns := range req.Namespaces {
		if ns == nil || ns.Name == "" {
			return nil, state.Invalidf(state.Fieldf("Namespaces", i, "Name"), "missing namespace name")
		}
		old, err := first[*state.Namespace](nil, t.Txn, TableNamespaces, indexID, ns.Name)
		if err != nil {
			return nil, err
		}
		ns.CreateIndex = t.index
		from := ""
		if old != nil {
			ns.CreateIndex = old.CreateIndex
			from = old.Quota
		}
		if err := t.moveNamespaceQuota(ns.Name, from, ns.Quota); err != nil {
			return nil, err
		}
		ns.ModifyIndex = t.index
		if err := t.insert(TableNamespaces, ns); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// applyNamespaceDelete deletes namespaces, all or none: it refuses the
// default namespace, unknown names, and namespaces that still hold jobs
// that are not dead.
func applyNamespaceDelete(t *writeTxn, req *NamespaceDeleteRequest) (any, error) {
	for i, name := range req.Names {
		if name == state.DefaultNamespace {
			return nil, state.Invalidf(state.Fieldf("Names", i, ""), "the %q namespace cannot be deleted", state.DefaultNamespace)
		}
		ns, err := first[*state.Namespace](nil, t.Txn, TableNamespaces, indexID, name)
		if err != nil {
			return nil, err
		}
		if ns == nil {
			return nil, state.NotFoundf("namespace %q not found", name)
		}
		jobs, err := list[*state.Job](nil, t.Txn, nil, TableJobs, indexNamespace, name)
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			if j.Status != state.JobStatusDead {
				return nil, state.Conflictf("namespace %q has non-terminal job %q", name, j.ID)
			}
		}
		if err := t.moveNamespaceQuota(name, ns.Quota, ""); err != nil {
			return nil, err
		}
		if err := t.delete(TableNamespaces, ns); err != nil {
			return nil, err
		}
	}
	return nil, nil
}
