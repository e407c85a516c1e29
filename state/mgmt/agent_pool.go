package mgmt

import (
	"time"

	"github.com/schedhq/sched/state"
)

// Agent pools (go-tfe's AgentPools). Runs of a workspace in agent
// execution mode execute on its agent pool; here an agent pool is a node
// pool of the cluster: the pool named N runs its runs' jobs on the nodes
// of node pool N (docs/terraform.md). sched has no agents of its own to
// register, so a pool lists none.

// PrefixAgentPool is the prefix of agent pool IDs.
const PrefixAgentPool = "apool-"

// AgentPoolNameMaxLen bounds an agent pool's name (a node pool's name).
const AgentPoolNameMaxLen = 128

// MaxAllowedWorkspaces bounds an agent pool's allowed workspaces.
const MaxAllowedWorkspaces = 1000

// AgentPool is an organization's agent pool.
type AgentPool struct {
	// ID is "apool-<id>".
	ID               string
	OrganizationName string
	// Name is also the node pool the pool's runs execute on.
	Name string
	// OrganizationScoped: every workspace of the organization may use it;
	// otherwise only AllowedWorkspaceIDs.
	OrganizationScoped  bool
	AllowedWorkspaceIDs []string
	CreatedAt           time.Time
	CreateIndex         uint64
	ModifyIndex         uint64
}

// NodePool is the node pool the pool's runs execute on.
func (p *AgentPool) NodePool() string { return p.Name }

// Copy returns a deep copy of p.
func (p *AgentPool) Copy() *AgentPool {
	c := *p
	c.AllowedWorkspaceIDs = append([]string(nil), p.AllowedWorkspaceIDs...)
	return &c
}

// AgentPoolPatch carries an agent pool's writable attributes; nil keeps
// the current value.
type AgentPoolPatch struct {
	Name                *string
	OrganizationScoped  *bool
	AllowedWorkspaceIDs *[]string
}

// Validate checks the patch; create requires a name.
func (p *AgentPoolPatch) Validate(create bool) error {
	v := &state.ValidationError{}
	switch {
	case p.Name != nil:
		if msg := ValidSlug(*p.Name, AgentPoolNameMaxLen); msg != "" {
			v.Add(AttrPointer("name"), "%s", msg)
		}
	case create:
		v.Add(AttrPointer("name"), "is required")
	}
	if p.AllowedWorkspaceIDs != nil && len(*p.AllowedWorkspaceIDs) > MaxAllowedWorkspaces {
		v.Add(RelPointer("allowed-workspaces"), "lists %d workspaces; at most %d", len(*p.AllowedWorkspaceIDs), MaxAllowedWorkspaces)
	}
	return v.Err()
}

// Apply sets the attributes the patch names on a.
func (p *AgentPoolPatch) Apply(a *AgentPool) {
	if p.Name != nil {
		a.Name = *p.Name
	}
	if p.OrganizationScoped != nil {
		a.OrganizationScoped = *p.OrganizationScoped
	}
	if p.AllowedWorkspaceIDs != nil {
		a.AllowedWorkspaceIDs = append([]string(nil), (*p.AllowedWorkspaceIDs)...)
	}
}
