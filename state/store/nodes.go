package store

import (
	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
)

// NodeByID returns a node, or nil.
func (r reader) NodeByID(ws memdb.WatchSet, id string) (*state.Node, error) {
	return first[*state.Node](ws, r.txn(), TableNodes, indexID, id)
}

// Nodes lists the nodes whose ID starts with prefix, ordered by ID.
func (r reader) Nodes(ws memdb.WatchSet, prefix string) ([]*state.Node, error) {
	return list[*state.Node](ws, r.txn(), nil, TableNodes, indexID+"_prefix", prefixArg(prefix))
}

// NodePools lists every node pool, ordered by name.
func (r reader) NodePools(ws memdb.WatchSet) ([]*state.NodePool, error) {
	return list[*state.NodePool](ws, r.txn(), nil, TableNodePools, indexID)
}

// NodePoolByName returns a node pool, or nil.
func (r reader) NodePoolByName(ws memdb.WatchSet, name string) (*state.NodePool, error) {
	return first[*state.NodePool](ws, r.txn(), TableNodePools, indexID, name)
}

// NodeRegisterRequest creates or updates a client node. On update, the
// server-owned scheduling fields (SchedulingEligibility, Drain,
// DrainStrategy) of the existing node are kept. A node pool that does not
// exist yet is created.
type NodeRegisterRequest struct {
	Node *state.Node
}

// applyNodeRegister creates or updates a node; see NodeRegisterRequest.
// A node written down loses its service registrations, as with
// applyNodeUpdateStatus.
func applyNodeRegister(t *writeTxn, req *NodeRegisterRequest) (any, error) {
	n := req.Node
	if n == nil || n.ID == "" {
		return nil, state.Invalidf("Node.ID", "missing node ID")
	}
	if n.NodePool == "" {
		n.NodePool = state.NodePoolDefault
	}
	if n.NodePool == state.NodePoolAll {
		return nil, state.Invalidf("Node.NodePool", "nodes cannot join the %q node pool", state.NodePoolAll)
	}
	n.SealSecret()
	old, err := first[*state.Node](nil, t.Txn, TableNodes, indexID, n.ID)
	if err != nil {
		return nil, err
	}
	n.CreateIndex = t.index
	if old != nil {
		n.CreateIndex = old.CreateIndex
		// Servers own scheduling eligibility and draining: a client
		// re-registering (e.g. after a restart) must not undo a drain.
		n.SchedulingEligibility = old.SchedulingEligibility
		n.Drain, n.DrainStrategy = old.Drain, old.DrainStrategy
	}
	if n.SchedulingEligibility == "" {
		n.SchedulingEligibility = state.NodeSchedulingEligible
	}
	n.ModifyIndex = t.index
	pool, err := first[*state.NodePool](nil, t.Txn, TableNodePools, indexID, n.NodePool)
	if err != nil {
		return nil, err
	}
	if pool == nil {
		p := &state.NodePool{Name: n.NodePool, CreateIndex: t.index, ModifyIndex: t.index}
		if err := t.insert(TableNodePools, p); err != nil {
			return nil, err
		}
	}
	if err := t.insert(TableNodes, n); err != nil {
		return nil, err
	}
	if n.Status == state.NodeStatusDown {
		return nil, deleteServicesOf(t, indexNode, n.ID)
	}
	return nil, nil
}

// NodeDeregisterRequest deletes nodes. It fails, deleting none, when one is
// unknown.
type NodeDeregisterRequest struct {
	NodeIDs []string
}

// applyNodeDeregister deletes nodes, all or none, with their service
// registrations.
func applyNodeDeregister(t *writeTxn, req *NodeDeregisterRequest) (any, error) {
	for _, id := range req.NodeIDs {
		n, err := first[*state.Node](nil, t.Txn, TableNodes, indexID, id)
		if err != nil {
			return nil, err
		}
		if n == nil {
			return nil, state.NotFoundf("node %q not found", id)
		}
		if err := t.delete(TableNodes, n); err != nil {
			return nil, err
		}
		if err := deleteServicesOf(t, indexNode, n.ID); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// NodeUpdateStatusRequest records a node's new status, e.g. `down` when its
// heartbeat was missed, with the evaluations that react to it.
type NodeUpdateStatusRequest struct {
	NodeID            string
	Status            string
	StatusDescription string
	// UpdatedAt is the leader's clock in Unix seconds.
	UpdatedAt int64
	Evals     []*state.Evaluation
	// CoalesceAfter, when set (Unix nanoseconds), drops the node-update
	// evaluations of jobs that already have a pending one due after it
	// (node_churn.go): node churn makes one evaluation per job per window.
	CoalesceAfter int64 `json:",omitempty"`
}

// NodeEvalsResponse is what Apply returns for the node commands that carry
// evaluations (NodeUpsertRequest, NodeUpdateStatusRequest,
// NodeUpdateEligibilityRequest, NodeUpdateDrainRequest): the IDs of the
// evaluations it wrote, in the request's order. A status change may write
// fewer than it carried (coalesceNodeEvals, joinHeldOnReturn), so an
// answer that lists the evaluations a change created lists these.
type NodeEvalsResponse struct {
	EvalIDs []string
}

// nodeEvalsResponse answers a node command that wrote evals.
func nodeEvalsResponse(evals []*state.Evaluation) *NodeEvalsResponse {
	out := &NodeEvalsResponse{EvalIDs: make([]string, 0, len(evals))}
	for _, e := range evals {
		out.EvalIDs = append(out.EvalIDs, e.ID)
	}
	return out
}

// applyNodeUpdateStatus records a node's status and the evaluations that
// react to it; it answers a NodeEvalsResponse. A node going down loses its
// service registrations in the same command: its client is not there to
// remove them.
func applyNodeUpdateStatus(t *writeTxn, req *NodeUpdateStatusRequest) (any, error) {
	n, err := first[*state.Node](nil, t.Txn, TableNodes, indexID, req.NodeID)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, state.NotFoundf("node %q not found", req.NodeID)
	}
	switch req.Status {
	case state.NodeStatusInit, state.NodeStatusReady, state.NodeStatusDown, state.NodeStatusDisconnected:
	default:
		return nil, state.Invalidf("Status", "unknown node status %q", req.Status)
	}
	next := *n
	next.Status = req.Status
	next.StatusDescription = req.StatusDescription
	next.StatusUpdatedAt = req.UpdatedAt
	next.ModifyIndex = t.index
	if err := t.insert(TableNodes, &next); err != nil {
		return nil, err
	}
	if next.Status == state.NodeStatusDown {
		if err := deleteServicesOf(t, indexNode, next.ID); err != nil {
			return nil, err
		}
	}
	evals, err := coalesceNodeEvals(t, req.Evals, req.CoalesceAfter)
	if err != nil {
		return nil, err
	}
	if next.Status == state.NodeStatusReady {
		if evals, err = joinHeldOnReturn(t, evals); err != nil { // node_churn.go
			return nil, err
		}
	}
	if err := upsertEvals(t, "Evals", evals); err != nil {
		return nil, err
	}
	return nodeEvalsResponse(evals), nil
}

// NodePoolUpsertRequest creates or updates node pools. The built-in `all`
// pool cannot be changed.
type NodePoolUpsertRequest struct {
	NodePools []*state.NodePool
}

// applyNodePoolUpsert creates or updates node pools.
func applyNodePoolUpsert(t *writeTxn, req *NodePoolUpsertRequest) (any, error) {
	for i, p := range req.NodePools {
		if p == nil || p.Name == "" {
			return nil, state.Invalidf(state.Fieldf("NodePools", i, "Name"), "missing node pool name")
		}
		if p.Name == state.NodePoolAll {
			return nil, state.Invalidf(state.Fieldf("NodePools", i, "Name"), "the %q node pool cannot be changed", state.NodePoolAll)
		}
		old, err := first[*state.NodePool](nil, t.Txn, TableNodePools, indexID, p.Name)
		if err != nil {
			return nil, err
		}
		p.CreateIndex = t.index
		if old != nil {
			p.CreateIndex = old.CreateIndex
		}
		p.ModifyIndex = t.index
		if err := t.insert(TableNodePools, p); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// NodePoolDeleteRequest deletes node pools. It fails, deleting none, when
// one is built in, unknown, or still has nodes or non-dead jobs.
type NodePoolDeleteRequest struct {
	Names []string
}

// applyNodePoolDelete deletes node pools, all or none: it refuses built-in
// pools, unknown names, and pools that still have nodes or jobs that are
// not dead.
func applyNodePoolDelete(t *writeTxn, req *NodePoolDeleteRequest) (any, error) {
	var nodes []*state.Node
	var jobs []*state.Job
	if len(req.Names) > 0 {
		var err error
		if nodes, err = list[*state.Node](nil, t.Txn, nil, TableNodes, indexID); err != nil {
			return nil, err
		}
		if jobs, err = list[*state.Job](nil, t.Txn, nil, TableJobs, indexID); err != nil {
			return nil, err
		}
	}
	for i, name := range req.Names {
		if isBuiltinNodePool(name) {
			return nil, state.Invalidf(state.Fieldf("Names", i, ""), "the built-in node pool %q cannot be deleted", name)
		}
		p, err := first[*state.NodePool](nil, t.Txn, TableNodePools, indexID, name)
		if err != nil {
			return nil, err
		}
		if p == nil {
			return nil, state.NotFoundf("node pool %q not found", name)
		}
		for _, n := range nodes {
			if n.NodePool == name {
				return nil, state.Conflictf("node pool %q has node %q", name, n.ID)
			}
		}
		for _, j := range jobs {
			if j.NodePool == name && j.Status != state.JobStatusDead {
				return nil, state.Conflictf("node pool %q is used by job %q in namespace %q", name, j.ID, j.Namespace)
			}
		}
		if err := t.delete(TableNodePools, p); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// NodesStamp identifies the version of the nodes table: the table's
// index row, which every write of a node replaces (a restore builds new
// ones). Two answers, of the store or of its snapshots, are the same
// (==) only when no write changed the nodes between them; nil when the
// table was never written. The scheduler keeps its ready nodes while it
// is unchanged (scheduler.NodeSets).
func (r reader) NodesStamp() any {
	raw, err := r.txn().First(TableIndex, indexID, TableNodes)
	if err != nil || raw == nil {
		return nil
	}
	return raw
}
