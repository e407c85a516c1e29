package scheduler

import (
	"github.com/schedhq/sched/state"
)

// spreadScorer scores nodes by how much placing there evens out the
// group's allocations over the values of the spread attributes.
//
// For a spread with targets, a value's desired count is its percentage of
// the group's count; values no target names share the remaining
// percentage as one bucket. Without targets, every value seen among the
// eval's ready nodes should get an equal share. A node scores
// (desired - placed) / desired for its value, clamped to [-1, 1]: positive
// while the value is under its share, negative once over it, -1 when the
// node lacks the attribute or its value has no share at all. Several
// spreads combine as the mean of their scores weighted by their weights.
// Allocations of the group count wherever they are, including those the
// plan is placing.
type spreadScorer struct {
	ctx     *evalContext
	job     *state.Job
	tg      *state.TaskGroup
	spreads []*spreadState
	weights float64
}

// spreadState is one spread with its shares and current counts.
type spreadState struct {
	attr   string
	weight float64
	// targets maps a listed value to its desired count; rest is the
	// desired count of all unlisted values together.
	targets map[string]float64
	rest    float64
	// values is the number of distinct values among ready nodes, for a
	// spread without targets, which share the group's count equally.
	values int
	count  float64
	counts map[string]int
}

// newSpreadScorer returns nil when the group has no spreads.
func newSpreadScorer(ctx *evalContext, job *state.Job, tg *state.TaskGroup, ready []*state.Node) *spreadScorer {
	all := append(append([]*state.Spread(nil), job.Spreads...), tg.Spreads...)
	if len(all) == 0 {
		return nil
	}
	s := &spreadScorer{ctx: ctx, job: job, tg: tg}
	count := float64(tg.Count)
	for _, sp := range all {
		if sp == nil {
			continue
		}
		st := &spreadState{attr: sp.Attribute, weight: float64(sp.Weight), count: count}
		if st.weight <= 0 {
			st.weight = 1
		}
		if len(sp.SpreadTarget) > 0 {
			st.targets = map[string]float64{}
			pct := 0.0
			for _, t := range sp.SpreadTarget {
				st.targets[t.Value] = float64(t.Percent) / 100 * count
				pct += float64(t.Percent)
			}
			st.rest = max(100-pct, 0) / 100 * count
		} else {
			seen := map[string]bool{}
			for _, n := range ready {
				if v, ok := resolveTarget(sp.Attribute, n); ok {
					seen[v] = true
				}
			}
			st.values = len(seen)
		}
		s.spreads = append(s.spreads, st)
		s.weights += st.weight
	}
	return s
}

// prepare counts the group's live and planned allocations per value.
func (s *spreadScorer) prepare(jobAllocs []*state.Allocation) error {
	live, err := s.ctx.liveJobAllocs(jobAllocs)
	if err != nil {
		return err
	}
	for _, st := range s.spreads {
		st.counts = map[string]int{}
	}
	for _, a := range live {
		if a.TaskGroup != s.tg.Name {
			continue
		}
		n, err := s.ctx.node(a.NodeID)
		if err != nil {
			return err
		}
		if n == nil {
			continue
		}
		for _, st := range s.spreads {
			if v, ok := resolveTarget(st.attr, n); ok {
				st.counts[v]++
			}
		}
	}
	return nil
}

// score returns n's spread score in [-1, 1].
func (s *spreadScorer) score(n *state.Node) float64 {
	total := 0.0
	for _, st := range s.spreads {
		total += st.weight * st.score(n)
	}
	return total / s.weights
}

func (st *spreadState) score(n *state.Node) float64 {
	v, ok := resolveTarget(st.attr, n)
	if !ok {
		return -1
	}
	if st.targets == nil {
		if st.values == 0 {
			return -1
		}
		return shareScore(st.count/float64(st.values), st.counts[v])
	}
	if desired, listed := st.targets[v]; listed {
		return shareScore(desired, st.counts[v])
	}
	used := 0
	for val, c := range st.counts {
		if _, listed := st.targets[val]; !listed {
			used += c
		}
	}
	return shareScore(st.rest, used)
}

// shareScore is (desired - used) / desired clamped to [-1, 1], or -1 when
// nothing is desired.
func shareScore(desired float64, used int) float64 {
	if desired <= 0 {
		return -1
	}
	return min(max((desired-float64(used))/desired, -1), 1)
}

// affinityScorer scores nodes by the affinities of a group, its job and
// its tasks: the sum of the weights of the affinities a node matches over
// the sum of all their absolute weights, so the score is in [-1, 1].
type affinityScorer struct {
	ctx   *evalContext
	affs  []*state.Affinity
	total float64
}

// newAffinityScorer returns nil when there are no affinities.
func newAffinityScorer(ctx *evalContext, job *state.Job, tg *state.TaskGroup) *affinityScorer {
	affs := append(append([]*state.Affinity(nil), job.Affinities...), tg.Affinities...)
	for _, t := range tg.Tasks {
		affs = append(affs, t.Affinities...)
	}
	s := &affinityScorer{ctx: ctx}
	for _, a := range affs {
		if a != nil && a.Weight != 0 {
			s.affs = append(s.affs, a)
			s.total += float64(absInt8(a.Weight))
		}
	}
	if len(s.affs) == 0 {
		return nil
	}
	return s
}

func (s *affinityScorer) score(n *state.Node) float64 {
	sum := 0.0
	for _, a := range s.affs {
		if s.ctx.meets(a.Operand, a.LTarget, a.RTarget, n) {
			sum += float64(a.Weight)
		}
	}
	return sum / s.total
}

func absInt8(v int8) int {
	if v < 0 {
		return -int(v)
	}
	return int(v)
}
