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

// spreadOn reports whether node n is ranked with the spread algorithm:
// its node pool's algorithm when the pool sets one, else the cluster's.
// Each pool is looked up once per evaluation.
func (c *evalContext) spreadOn(n *state.Node) bool {
	pool := n.NodePool
	if pool == "" {
		pool = state.NodePoolDefault
	}
	if s, ok := c.spreadPools[pool]; ok {
		return s
	}
	np, err := c.state.NodePoolByName(nil, pool)
	if err != nil {
		c.logger.Warn("read node pool, using the cluster's algorithm", "pool", pool, "error", err)
		np = nil
	}
	s := c.schedConfig().AlgorithmFor(np) == state.SchedulerAlgorithmSpread
	if c.spreadPools == nil {
		c.spreadPools = map[string]bool{}
	}
	c.spreadPools[pool] = s
	return s
}
