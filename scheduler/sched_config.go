package scheduler

import (
	"github.com/schedhq/sched/state"
)

// schedConfig returns the cluster's scheduler configuration, read once
// per evaluation attempt; the defaults when the state cannot answer.
func (c *evalContext) schedConfig() *state.SchedulerConfiguration {
	if c.config != nil {
		return c.config
	}
	cfg, err := c.state.SchedulerConfig(nil)
	if err != nil || cfg == nil {
		if err != nil {
			c.logger.Warn("read scheduler configuration, using the defaults", "error", err)
		}
		cfg = state.DefaultSchedulerConfiguration()
	}
	c.config = cfg
	return cfg
}

// poolOf returns node n's pool, looked up once per evaluation; nil when
// the state does not know it.
func (c *evalContext) poolOf(n *state.Node) *state.NodePool {
	name := n.NodePool
	if name == "" {
		name = state.NodePoolDefault
	}
	if np, ok := c.pools[name]; ok {
		return np
	}
	np, err := c.state.NodePoolByName(nil, name)
	if err != nil {
		c.logger.Warn("read node pool, using the cluster's configuration", "pool", name, "error", err)
		np = nil
	}
	if c.pools == nil {
		c.pools = map[string]*state.NodePool{}
	}
	c.pools[name] = np
	return np
}

// spreadOn reports whether node n is ranked with the spread algorithm:
// its node pool's algorithm when the pool sets one, else the cluster's.
func (c *evalContext) spreadOn(n *state.Node) bool {
	return c.schedConfig().AlgorithmFor(c.poolOf(n)) == state.SchedulerAlgorithmSpread
}

// memoryOversubscriptionOn reports whether a task placed on node n is
// granted its memory_max: the node pool's MemoryOversubscriptionEnabled
// when the pool sets it (as Nomad's node pool scheduler_config), else the
// cluster's.
func (c *evalContext) memoryOversubscriptionOn(n *state.Node) bool {
	if np := c.poolOf(n); np != nil {
		if b, ok := np.SchedulerConfiguration["MemoryOversubscriptionEnabled"].(bool); ok {
			return b
		}
	}
	return c.schedConfig().MemoryOversubscriptionEnabled
}
