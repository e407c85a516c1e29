package store

import (
	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
)

// ServicesByJob lists the service registrations of a job's allocations,
// ordered by ID.
func (r reader) ServicesByJob(ws memdb.WatchSet, ns, jobID string) ([]*state.ServiceRegistration, error) {
	return list[*state.ServiceRegistration](ws, r.txn(), nil, TableServiceRegistrations, indexJob, ns, jobID)
}

// ServicesByName lists the instances of one service, ordered by ID.
func (r reader) ServicesByName(ws memdb.WatchSet, ns, name string) ([]*state.ServiceRegistration, error) {
	return list[*state.ServiceRegistration](ws, r.txn(), nil, TableServiceRegistrations, indexService, ns, name)
}

// ServicesByAlloc lists the service registrations of one allocation.
func (r reader) ServicesByAlloc(ws memdb.WatchSet, allocID string) ([]*state.ServiceRegistration, error) {
	return list[*state.ServiceRegistration](ws, r.txn(), nil, TableServiceRegistrations, indexAlloc, allocID)
}

// ServicesByNode lists the service registrations made by one node.
func (r reader) ServicesByNode(ws memdb.WatchSet, nodeID string) ([]*state.ServiceRegistration, error) {
	return list[*state.ServiceRegistration](ws, r.txn(), nil, TableServiceRegistrations, indexNode, nodeID)
}

// Services lists the service registrations of namespace ns ("*" for every
// namespace), ordered by namespace, service name, then ID.
func (r reader) Services(ws memdb.WatchSet, ns string) ([]*state.ServiceRegistration, error) {
	if ns == allNamespaces {
		return list[*state.ServiceRegistration](ws, r.txn(), nil, TableServiceRegistrations, indexService)
	}
	return list[*state.ServiceRegistration](ws, r.txn(), nil, TableServiceRegistrations, indexService+"_prefix", ns)
}

// ServiceUpsertRequest creates or updates service registrations.
type ServiceUpsertRequest struct {
	Services []*state.ServiceRegistration
}

// applyServiceUpsert creates or updates service registrations.
func applyServiceUpsert(t *writeTxn, req *ServiceUpsertRequest) (any, error) {
	for i, s := range req.Services {
		switch {
		case s == nil || s.ID == "":
			return nil, state.Invalidf(state.Fieldf("Services", i, "ID"), "missing service registration ID")
		case s.ServiceName == "":
			return nil, state.Invalidf(state.Fieldf("Services", i, "ServiceName"), "missing service name")
		case s.Namespace == "":
			return nil, state.Invalidf(state.Fieldf("Services", i, "Namespace"), "missing namespace")
		}
		old, err := first[*state.ServiceRegistration](nil, t.Txn, TableServiceRegistrations, indexID, s.ID)
		if err != nil {
			return nil, err
		}
		s.CreateIndex = t.index
		if old != nil {
			s.CreateIndex = old.CreateIndex
		}
		s.ModifyIndex = t.index
		if err := t.insert(TableServiceRegistrations, s); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// ServiceDeleteRequest deletes service registrations by ID and, for
// AllocIDs, every registration of those allocations. Unknown IDs are
// ignored: a client may retry a delete that already happened.
type ServiceDeleteRequest struct {
	IDs      []string
	AllocIDs []string
}

// applyServiceDelete deletes service registrations by ID and by
// allocation.
func applyServiceDelete(t *writeTxn, req *ServiceDeleteRequest) (any, error) {
	for _, id := range req.IDs {
		s, err := first[*state.ServiceRegistration](nil, t.Txn, TableServiceRegistrations, indexID, id)
		if err != nil {
			return nil, err
		}
		if s == nil {
			continue
		}
		if err := t.delete(TableServiceRegistrations, s); err != nil {
			return nil, err
		}
	}
	for _, allocID := range req.AllocIDs {
		if err := deleteServicesOf(t, indexAlloc, allocID); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// deleteServicesOf deletes the service registrations found by index
// (indexNode or indexAlloc) and arg. Servers call it in the command that
// makes registrations stale (a node down or gone, an allocation finished
// or collected), since the client that wrote them may never come back to
// remove them. Deleting none writes nothing, so the table's index moves
// only when a registration goes.
func deleteServicesOf(t *writeTxn, index, arg string) error {
	regs, err := list[*state.ServiceRegistration](nil, t.Txn, nil, TableServiceRegistrations, index, arg)
	if err != nil {
		return err
	}
	for _, s := range regs {
		if err := t.delete(TableServiceRegistrations, s); err != nil {
			return err
		}
	}
	return nil
}

// deleteServicesOfEndedAlloc deletes the registrations of a, just written,
// once its client is done with it (complete, failed or lost). An
// allocation servers only want stopped keeps them: its tasks may still run
// through their shutdown delay, and its client removes them when they stop.
func deleteServicesOfEndedAlloc(t *writeTxn, a *state.Allocation) error {
	if !a.ClientTerminal() {
		return nil
	}
	return deleteServicesOf(t, indexAlloc, a.ID)
}
