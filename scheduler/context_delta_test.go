package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// deltaState is a State holding only allocations: what proposedUsage
// reads (AllocByID, AllocsByJob, AllocsByNode, NodeUsage). Any other read panics on the
// nil State.
type deltaState struct {
	State
	allocs map[string]*state.Allocation
}

func (s *deltaState) AllocByID(_ memdb.WatchSet, id string) (*state.Allocation, error) {
	return s.allocs[id], nil
}

func (s *deltaState) AllocsByJob(_ memdb.WatchSet, namespace, jobID string, _ bool) ([]*state.Allocation, error) {
	var out []*state.Allocation
	for _, a := range s.allocs {
		if a.Namespace == namespace && a.JobID == jobID {
			out = append(out, a)
		}
	}
	return out, nil
}

func (s *deltaState) AllocsByNode(_ memdb.WatchSet, nodeID string) ([]*state.Allocation, error) {
	var out []*state.Allocation
	for _, a := range s.allocs {
		if a.NodeID == nodeID {
			out = append(out, a)
		}
	}
	return out, nil
}

func (s *deltaState) NodeUsage(_ memdb.WatchSet, nodeID string) (*state.NodeUsage, error) {
	u := &state.NodeUsage{NodeID: nodeID}
	for _, a := range s.allocs {
		if a.NodeID == nodeID {
			u.AddAlloc(a, 1)
		}
	}
	return u, nil
}

// referenceProposedUsage is proposedUsage as it was before the plan's
// changes were folded incrementally (planDelta): every call walks every
// stop, eviction and placement the plan holds for the node.
func referenceProposedUsage(c *evalContext, nodeID string, namespace, jobID, key string) (usage, int, error) {
	used, err := c.baseOf(nodeID, c.slotOf(nodeID))
	if err != nil {
		return usage{}, 0, err
	}
	counts, err := c.groupCounts(namespace, jobID, key)
	if err != nil {
		return usage{}, 0, err
	}
	n := counts[nodeID]
	stops, places := c.plan.NodeUpdate[nodeID], c.plan.NodeAllocation[nodeID]
	if c.plan.NodePreemptions != nil {
		stops = append(stops[:len(stops):len(stops)], c.plan.NodePreemptions[nodeID]...)
	}
	if len(stops) == 0 && len(places) == 0 {
		return used, n, nil
	}
	seen := make(map[string]bool, len(stops)+len(places))
	leave := func(id string) error {
		if seen[id] {
			return nil
		}
		seen[id] = true
		e, err := c.stateAlloc(id)
		if err != nil || e == nil || e.NodeID != nodeID || e.Terminal() {
			return err
		}
		used.sub(e.AllocatedResources)
		if inGroup(e, key) {
			n--
		}
		return nil
	}
	for _, a := range stops {
		if err := leave(a.ID); err != nil {
			return usage{}, 0, err
		}
	}
	for _, a := range places {
		if err := leave(a.ID); err != nil {
			return usage{}, 0, err
		}
	}
	for _, a := range places {
		if !a.Terminal() {
			used.add(a.AllocatedResources)
			if inGroup(a, key) {
				n++
			}
		}
	}
	return used, n, nil
}

// referenceProposedPorts counts the ports of the allocations
// proposedAllocs lists, as newPortPicker takes them.
func referenceProposedPorts(c *evalContext, nodeID string) (map[int]int32, error) {
	allocs, err := c.proposedAllocs(nodeID)
	if err != nil {
		return nil, err
	}
	out := map[int]int32{}
	for _, a := range allocs {
		if !a.Terminal() {
			for _, p := range allocPorts(a.AllocatedResources) {
				out[p]++
			}
		}
	}
	return out, nil
}

// maxTestPort is the highest port of the random test's allocations.
const maxTestPort = 12

// TestProposedUsageIncrementalMatchesReference drives random sequences of
// plan changes — stops, evictions, placements (new, terminal, of an ID
// already stopped or placed, of a state allocation moved to another
// node), stops taken back — and after each one compares proposedUsage on
// a random set of nodes and group keys with the from-scratch reference,
// and proposedPorts with the ports of the allocations proposedAllocs
// lists.
// Asking only some keys each step makes keys join a node's delta late.
// Without planUnstop dropping the node's delta, a stop taken back would
// stay counted and the answers would differ.
func TestProposedUsageIncrementalMatchesReference(t *testing.T) {
	type group struct{ job, tg string }
	groups := []group{{"a", "g1"}, {"a", "g2"}, {"b", "g1"}}
	ready := []*state.Node{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}}
	nodeIDs := []string{"n1", "n2", "n3", "n9"} // n9: not among the ready nodes
	unstops, sameID, folded := 0, 0, 0
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		newAlloc := func(id, node string) *state.Allocation {
			g := groups[rng.IntN(len(groups))]
			a := &state.Allocation{
				ID: id, Namespace: state.DefaultNamespace, JobID: g.job, TaskGroup: g.tg, NodeID: node,
				DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: state.AllocClientStatusRunning,
				AllocatedResources: &state.AllocatedResources{
					Tasks: map[string]*state.AllocatedTaskResources{
						"t": {CPU: 1 + rng.IntN(500), MemoryMB: 1 + rng.IntN(256)},
					},
					Shared: state.AllocatedSharedResources{DiskMB: rng.IntN(100)},
				},
			}
			// Ports from a small range, so that allocations share them.
			for range rng.IntN(3) {
				a.AllocatedResources.Shared.Ports = append(a.AllocatedResources.Shared.Ports, state.AllocatedPort{Value: 1 + rng.IntN(maxTestPort)})
			}
			if rng.IntN(3) == 0 {
				a.AllocatedResources.Tasks["t"].Networks = []*state.NetworkResource{{DynamicPorts: []state.Port{{Value: 1 + rng.IntN(maxTestPort)}}}}
			}
			switch rng.IntN(6) {
			case 0:
				a.ClientStatus = state.AllocClientStatusComplete
			case 1:
				a.DesiredStatus = state.AllocDesiredStatusStop
			}
			return a
		}
		st := &deltaState{allocs: map[string]*state.Allocation{}}
		var existing []*state.Allocation
		for i := range 24 {
			a := newAlloc(fmt.Sprintf("s%d", i), nodeIDs[rng.IntN(len(nodeIDs))])
			st.allocs[a.ID] = a
			existing = append(existing, a)
		}
		c := newEvalContext(st, &Plan{}, nil, testEpoch, seed)
		c.setNodes(ready, len(nodeIDs), false)
		var named []*state.Allocation // what the plan has named so far
		nextID := 0
		for step := range 150 {
			var op string
			switch r := rng.IntN(10); {
			case r < 3:
				op = "stop"
				a := existing[rng.IntN(len(existing))].CopySkipJob()
				a.DesiredStatus = state.AllocDesiredStatusStop
				c.planStop(a)
				named = append(named, a)
			case r < 4:
				op = "preempt"
				a := existing[rng.IntN(len(existing))].CopySkipJob()
				a.DesiredStatus = state.AllocDesiredStatusEvict
				c.planPreempt(a)
				named = append(named, a)
			case r < 6:
				op = "place new"
				a := newAlloc(fmt.Sprintf("p%d", nextID), nodeIDs[rng.IntN(len(nodeIDs))])
				nextID++
				c.planPlace(a)
				named = append(named, a)
			case r < 8:
				// An ID the plan or the state already has: an in-place
				// update, a second placement of one placed, a
				// placement of one stopped; sometimes on another node.
				op = "place same ID"
				var prev *state.Allocation
				if len(named) > 0 && rng.IntN(2) == 0 {
					prev = named[rng.IntN(len(named))]
				} else {
					prev = existing[rng.IntN(len(existing))]
				}
				node := prev.NodeID
				if rng.IntN(4) == 0 {
					node = nodeIDs[rng.IntN(len(nodeIDs))]
				}
				a := newAlloc(prev.ID, node)
				c.planPlace(a)
				named = append(named, a)
				sameID++
			default:
				op = "unstop"
				var stops []*state.Allocation
				for _, list := range c.plan.NodeUpdate {
					stops = append(stops, list...)
				}
				if len(stops) == 0 {
					continue
				}
				c.planUnstop(stops[rng.IntN(len(stops))])
				unstops++
			}
			asked := false
			for _, node := range nodeIDs {
				for _, g := range groups {
					if asked && rng.IntN(2) == 0 {
						continue
					}
					asked = true
					key := groupKey(state.DefaultNamespace, g.job, g.tg)
					want, wantN, err := referenceProposedUsage(c, node, state.DefaultNamespace, g.job, key)
					if err != nil {
						t.Fatal(err)
					}
					got, gotN, err := c.proposedUsage(node, -1, state.DefaultNamespace, g.job, key)
					if err != nil {
						t.Fatal(err)
					}
					if got != want || gotN != wantN {
						t.Fatalf("seed %d step %d (%s): node %s group %s/%s: usage %+v count %d, want %+v count %d",
							seed, step, op, node, g.job, g.tg, got, gotN, want, wantN)
					}
					if d := c.deltas[node]; d != nil && d.places > 0 {
						folded++
					}
				}
				if rng.IntN(3) == 0 {
					continue // the node's ports join its delta late
				}
				got, err := c.proposedPorts(node)
				if err != nil {
					t.Fatal(err)
				}
				want, err := referenceProposedPorts(c, node)
				if err != nil {
					t.Fatal(err)
				}
				for p := 1; p <= maxTestPort; p++ {
					if got[p] != want[p] {
						t.Fatalf("seed %d step %d (%s): node %s: port %d held by %d allocations, want %d",
							seed, step, op, node, p, got[p], want[p])
					}
				}
			}
		}
	}
	// The sequences did what the test is for.
	if unstops < 100 || sameID < 100 || folded == 0 {
		t.Fatalf("%d unstops, %d same-ID placements, %d answers from a delta: too few", unstops, sameID, folded)
	}
}
