package store

import (
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

// Agent pools (state/mgmt/agent_pool.go): an agent pool names the node
// pool its workspaces' runs execute on.

// TableAgentPools holds agent pools. Persisted in snapshots: never rename.
const TableAgentPools = "agent_pools"

// Command types of agent pools (range 95-99).
const (
	AgentPoolUpsertRequestType MessageType = 98
	AgentPoolDeleteRequestType MessageType = 99
)

// AgentPoolUpsertRequest creates (Create) or updates an agent pool:
// Patch applied to the pool ID of OrganizationName, with the ID and time
// the leader chose for a new one.
type AgentPoolUpsertRequest struct {
	Create           bool
	ID               string
	OrganizationName string
	Patch            mgmt.AgentPoolPatch
	Now              time.Time
}

// AgentPoolDeleteRequest deletes an agent pool no workspace uses
// (ErrConflict otherwise).
type AgentPoolDeleteRequest struct {
	ID string
}

func agentPoolTableDefs() []tableDef {
	return []tableDef{{
		name: TableAgentPools,
		indexes: map[string]keyFunc{
			indexID: func(o any) []any { return []any{o.(*mgmt.AgentPool).ID} },
			indexMgOrg: func(o any) []any {
				p := o.(*mgmt.AgentPool)
				return []any{p.OrganizationName, p.CreateIndex}
			},
			indexMgOrgName: func(o any) []any {
				p := o.(*mgmt.AgentPool)
				return []any{p.OrganizationName, strings.ToLower(p.Name)}
			},
		},
		newRow: func() any { return new(mgmt.AgentPool) },
	}}
}

func applyAgentPoolUpsert(t *writeTxn, req *AgentPoolUpsertRequest) (any, error) {
	if err := req.Patch.Validate(req.Create); err != nil {
		return nil, err
	}
	var p *mgmt.AgentPool
	if req.Create {
		org, err := requireOrganization(t, req.OrganizationName)
		if err != nil {
			return nil, err
		}
		v := &state.ValidationError{}
		mgmt.CheckID(v, "ID", mgmt.PrefixAgentPool, req.ID)
		if err := v.Err(); err != nil {
			return nil, err
		}
		if err := requireNewID(t, TableAgentPools, req.ID); err != nil {
			return nil, err
		}
		p = &mgmt.AgentPool{ID: req.ID, OrganizationName: org.Name, OrganizationScoped: true, CreatedAt: mgmt.Time(req.Now)}
		stampNew(t, &p.CreateIndex, &p.ModifyIndex)
	} else {
		old, err := mustGetRow[mgmt.AgentPool](t, TableAgentPools, "agent pool", req.ID)
		if err != nil {
			return nil, err
		}
		p = old.Copy()
		p.ModifyIndex = t.index
	}
	req.Patch.Apply(p)
	taken, err := nameTaken(t, TableAgentPools, p.OrganizationName, p.Name, func(x *mgmt.AgentPool) string { return x.ID }, p.ID)
	if err != nil {
		return nil, err
	}
	if taken {
		return nil, state.Invalidf(mgmt.AttrPointer("name"), "has already been taken")
	}
	for i, id := range p.AllowedWorkspaceIDs {
		w, err := requireWorkspace(t, id)
		if err != nil || w.OrganizationName != p.OrganizationName {
			return nil, state.Invalidf(state.Fieldf(mgmt.RelPointer("allowed-workspaces"), i, ""), "workspace %q is not of organization %q", id, p.OrganizationName)
		}
	}
	return p, t.insert(TableAgentPools, p)
}

func applyAgentPoolDelete(t *writeTxn, req *AgentPoolDeleteRequest) (any, error) {
	p, err := mustGetRow[mgmt.AgentPool](t, TableAgentPools, "agent pool", req.ID)
	if err != nil {
		return nil, err
	}
	users, err := list[*mgmt.Workspace](nil, t.Txn, func(w *mgmt.Workspace) bool { return w.AgentPoolID == p.ID },
		TableWorkspaces, indexMgOrg, p.OrganizationName)
	if err != nil {
		return nil, err
	}
	if len(users) > 0 {
		return nil, state.Conflictf("agent pool %q is used by %d workspaces (%s first): move them to another pool first", p.ID, len(users), users[0].Name)
	}
	return nil, t.delete(TableAgentPools, p)
}

// AgentPoolByID returns an agent pool, or nil.
func (r reader) AgentPoolByID(ws memdb.WatchSet, id string) (*mgmt.AgentPool, error) {
	return first[*mgmt.AgentPool](ws, r.txn(), TableAgentPools, indexID, id)
}

// AgentPoolsByOrganization lists an organization's agent pools, oldest
// first.
func (r reader) AgentPoolsByOrganization(ws memdb.WatchSet, org string) ([]*mgmt.AgentPool, error) {
	return list[*mgmt.AgentPool](ws, r.txn(), nil, TableAgentPools, indexMgOrg, org)
}

// Runs lists every run (the run executor's pass).
func (r reader) Runs(ws memdb.WatchSet) ([]*mgmt.Run, error) {
	return list[*mgmt.Run](ws, r.txn(), nil, TableRuns, indexID)
}
