package leader

import "time"

// Node churn (docs/queue.md): a node that misses its heartbeat is marked
// down with an evaluation per job it ran, held by the broker for
// NodeChurnWindow. Another node going down meanwhile adds no evaluation
// for a job that already has one held for at least nodeChurnMargin more
// (the store drops it, store.NodeUpdateStatusRequest.CoalesceAfter): the
// held one reconciles the job against the state as it is when due, every
// node lost until then included. A job gets at most about one evaluation
// per window however many of its nodes fail, and none is delivered before
// the window ends.
const (
	NodeChurnWindow = 2 * time.Second
	// nodeChurnMargin keeps a held evaluation from being joined when it
	// is about to be delivered: the write that would join it is applied
	// a little after the leader stamps it.
	nodeChurnMargin = 500 * time.Millisecond
)
