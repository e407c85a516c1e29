package scheduler

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/schedhq/sched/state"
)

// NodesStamper is a State that can tell whether its nodes changed:
// NodesStamp returns a value that compares equal (==) to an earlier
// answer, of the same state or of an earlier snapshot of its store,
// only when no write changed the nodes since; nil when it cannot tell.
// *store.StateSnapshot implements it.
type NodesStamper interface {
	NodesStamp() any
}

// NodeSets keeps, across evaluations and their attempts, the ready nodes
// readyNodes finds for a job's node pool and datacenters, for as long as
// the state's nodes do not change (NodesStamper). At 10,000 nodes,
// listing and filtering them cost some 6 ms of every attempt of every
// evaluation, the same answer each time while the cluster's nodes stay
// as they are; once nodes fill and concurrent plans collide, evaluations
// make their plans again and pay it again. A cached answer is the one
// readyNodes would give: the scheduling does not change. It is safe for
// concurrent use; the zero value is not (NewNodeSets).
type NodeSets struct {
	mu    sync.Mutex
	stamp any
	sets  map[nodeSetKey]*readySet
}

// maxNodeSets bounds the answers kept for one version of the nodes
// (distinct pools and datacenter lists); past it they are dropped.
const maxNodeSets = 64

// NewNodeSets returns an empty cache.
func NewNodeSets() *NodeSets {
	return &NodeSets{sets: map[nodeSetKey]*readySet{}}
}

// nodeSetKey names what readyNodes filters on: the job's node pool and
// its datacenter patterns, joined by NUL.
type nodeSetKey struct{ pool, dcs string }

// readySet is one answer of readyNodes. Its ready list is shared by the
// evaluations that use it and never changed; byDC is copied for each.
type readySet struct {
	ready         []*state.Node
	byDC          map[string]int
	inPool, total int
	// sorted tells ready is in ID order (setNodes).
	sorted bool
}

// lookup returns the answer kept for key at stamp, or nil.
func (c *NodeSets) lookup(stamp any, key nodeSetKey) *readySet {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stamp != stamp {
		return nil
	}
	return c.sets[key]
}

// keep records rs as the answer for key at stamp. An answer for nodes
// older than those the cache holds is not kept; one for newer nodes
// replaces every answer kept.
func (c *NodeSets) keep(stamp any, key nodeSetKey, rs *readySet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stamp != stamp {
		// Which of two stamps is newer is not known; the latest caller
		// is usually on the latest snapshot.
		c.stamp = stamp
		clear(c.sets)
	}
	if len(c.sets) >= maxNodeSets {
		clear(c.sets)
	}
	c.sets[key] = rs
}

// cachedReadyNodes is readyNodes answered from sets when the state's
// nodes are those an earlier answer was made from. ready must not be
// changed; sorted tells it is in ID order. sets may be nil.
func cachedReadyNodes(sets *NodeSets, st State, job *state.Job) (ready []*state.Node, byDC map[string]int, inPool, total int, sorted bool, err error) {
	var stamp any
	if sets != nil {
		if s, ok := st.(NodesStamper); ok {
			stamp = s.NodesStamp()
		}
	}
	if stamp == nil {
		ready, byDC, inPool, total, err = readyNodes(st, job)
		return ready, byDC, inPool, total, false, err
	}
	key := nodeSetKey{pool: job.NodePool, dcs: strings.Join(job.Datacenters, "\x00")}
	rs := sets.lookup(stamp, key)
	if rs == nil {
		rs = &readySet{}
		if rs.ready, rs.byDC, rs.inPool, rs.total, err = readyNodes(st, job); err != nil {
			return nil, nil, 0, 0, false, err
		}
		rs.ready = slices.Clip(rs.ready)
		rs.sorted = slices.IsSortedFunc(rs.ready, func(a, b *state.Node) int { return strings.Compare(a.ID, b.ID) })
		sets.keep(stamp, key, rs)
	}
	return rs.ready, maps.Clone(rs.byDC), rs.inPool, rs.total, rs.sorted, nil
}
