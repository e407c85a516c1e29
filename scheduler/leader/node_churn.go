package leader

import (
	"time"

	"github.com/schedhq/sched/state"
)

// Node churn (docs/queue.md): a node that misses its heartbeat is marked
// down with an evaluation per job it ran, held by the broker. Another node
// going down meanwhile adds no evaluation for a job that already has one
// held for at least nodeChurnMargin more (the store drops it,
// store.NodeUpdateStatusRequest.CoalesceAfter): the held one reconciles
// the job against the state as it is when due, every node lost until then
// included.
//
// How long an evaluation is held:
//   - a job's first node-update evaluation of a churn is held
//     ChurnWindow (2 s): a single failed node is reacted to at once;
//   - a later one, while the churn period that began with the first is
//     not over, is held to the end of that period. The period is the
//     longest TTL plus grace this leader handed to a node (at most
//     MaxChurnPeriod): nodes that stop together are all marked down
//     within it of the first, however their TTLs spread them, so every
//     later loss of the churn joins that one evaluation.
//
// A job therefore gets at most two node-update evaluations per churn
// (sched-bench's churn scenario and TestNodeChurnTwoEvalsPerJob count
// them), at the cost of replacing what it loses after its first lost node
// up to one period late. A failover forgets the TTLs: until nodes
// heartbeat the new leader, every evaluation is held ChurnWindow only.
const (
	NodeChurnWindow = 2 * time.Second
	// MaxNodeChurnPeriod bounds the churn period: with the default
	// heartbeat rate, 5,000 nodes have TTLs of 100-200 s, too long to
	// leave a job short of what it lost.
	MaxNodeChurnPeriod = time.Minute
	// nodeChurnMargin keeps a held evaluation from being joined when it
	// is about to be delivered: the write that would join it is applied
	// a little after the leader stamps it. A ChurnWindow shorter than
	// four margins (in tests) uses a quarter of it.
	nodeChurnMargin = 500 * time.Millisecond
)

// churnPeriod is how long a churn lasts (see above); 0 while no node has
// heartbeat this leader.
func (h *Heartbeater) churnPeriod() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return min(h.longest, h.cfg.MaxChurnPeriod)
}

// holdChurnEvals sets when each of a down node's evaluations is due: the
// end of its job's churn period when one is under way, else ChurnWindow
// from now. A churn is under way for a job whose earliest node-update
// evaluation created within the last period is still less than a period
// old.
func (h *Heartbeater) holdChurnEvals(evals []*state.Evaluation, now time.Time) error {
	period := h.churnPeriod()
	for _, e := range evals {
		e.WaitUntil = now.Add(h.cfg.ChurnWindow)
		if period <= h.cfg.ChurnWindow {
			continue
		}
		prior, err := h.store.EvalsByJob(nil, e.Namespace, e.JobID)
		if err != nil {
			return err
		}
		since := now.Add(-period).UnixNano()
		var start int64
		for _, p := range prior {
			if p.TriggeredBy == state.EvalTriggerNodeUpdate && p.CreateTime >= since && (start == 0 || p.CreateTime < start) {
				start = p.CreateTime
			}
		}
		if start == 0 {
			continue
		}
		if end := time.Unix(0, start).Add(period); end.After(e.WaitUntil) {
			e.WaitUntil = end
		}
	}
	return nil
}
