package store

import (
	"sort"
	"sync"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// DefaultEventBufferSize is how many applied log entries' events a store
// keeps for subscribers that resume from an index.
const DefaultEventBufferSize = 4096

// EventBuffer holds the events of the most recent applied log entries, in
// index order, for the event stream. Apply publishes into it on the FSM
// goroutine; any number of readers follow it with After. It is bounded:
// once full, each new entry evicts the oldest, and a reader that asks for
// an evicted index resumes at the oldest one kept.
type EventBuffer struct {
	mu sync.Mutex
	// ring holds up to cap(ring) batches; head is the slot of the oldest,
	// n how many are held.
	ring    []state.EventBatch
	head, n int
	// notify is closed (and replaced) by every publish.
	notify chan struct{}
	// last is the index of the newest batch published, even when it was
	// empty and so not kept.
	last uint64
}

// NewEventBuffer returns a buffer keeping the events of size log entries;
// size <= 0 means DefaultEventBufferSize.
func NewEventBuffer(size int) *EventBuffer {
	if size <= 0 {
		size = DefaultEventBufferSize
	}
	return &EventBuffer{ring: make([]state.EventBatch, size), notify: make(chan struct{})}
}

// publish appends the events of the entry at index (possibly none) and
// wakes every waiting reader.
func (b *EventBuffer) publish(index uint64, events []state.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if index > b.last {
		b.last = index
	}
	if len(events) == 0 {
		return
	}
	slot := (b.head + b.n) % len(b.ring)
	if b.n == len(b.ring) {
		b.head = (b.head + 1) % len(b.ring)
	} else {
		b.n++
	}
	b.ring[slot] = state.EventBatch{Index: index, Events: events}
	close(b.notify)
	b.notify = make(chan struct{})
}

// After returns the kept batches whose index is at least from, oldest
// first, at most max of them (max <= 0: all), and a channel closed at the
// next publish. from 0 means only what is published from now on.
func (b *EventBuffer) After(from uint64, max int) ([]state.EventBatch, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if from == 0 {
		return nil, b.notify
	}
	at := func(i int) state.EventBatch { return b.ring[(b.head+i)%len(b.ring)] }
	first := sort.Search(b.n, func(i int) bool { return at(i).Index >= from })
	count := b.n - first
	if max > 0 && count > max {
		count = max
	}
	out := make([]state.EventBatch, count)
	for i := range out {
		out[i] = at(first + i)
	}
	return out, b.notify
}

// LastIndex is the index of the newest log entry applied: where a
// subscription that starts now begins.
func (b *EventBuffer) LastIndex() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// eventsOf turns what one command wrote into stream events. Tables without
// a topic (indexes, versions, summaries, the management API's) produce
// none.
func eventsOf(index uint64, changes memdb.Changes) []state.Event {
	var out []state.Event
	for _, c := range changes {
		obj, deleted := c.After, c.Deleted()
		if deleted {
			obj = c.Before
		}
		if ev, ok := eventOf(c.Table, obj, c.Created(), deleted); ok {
			ev.Index = index
			out = append(out, ev)
		}
	}
	return out
}

// eventOf describes one written object; false for a table without a topic.
func eventOf(table string, obj any, created, deleted bool) (state.Event, bool) {
	pick := func(createdType, updatedType, deletedType string) string {
		switch {
		case deleted:
			return deletedType
		case created:
			return createdType
		}
		return updatedType
	}
	switch table {
	case TableJobs:
		j := obj.(*state.Job)
		return state.Event{Topic: state.TopicJob, Type: pick("JobRegistered", "JobRegistered", "JobDeregistered"),
			Key: j.ID, Namespace: j.Namespace, Object: j}, true
	case TableEvals:
		e := obj.(*state.Evaluation)
		return state.Event{Topic: state.TopicEvaluation, Type: pick("EvaluationUpdated", "EvaluationUpdated", "EvaluationDeleted"),
			Key: e.ID, Namespace: e.Namespace, FilterKeys: nonEmpty(e.JobID, e.DeploymentID), Object: e}, true
	case TableAllocs:
		a := obj.(*state.Allocation)
		return state.Event{Topic: state.TopicAllocation, Type: pick("AllocationCreated", "AllocationUpdated", "AllocationDeleted"),
			Key: a.ID, Namespace: a.Namespace, FilterKeys: nonEmpty(a.JobID, a.DeploymentID, a.NodeID), Object: a}, true
	case TableDeployment:
		d := obj.(*state.Deployment)
		return state.Event{Topic: state.TopicDeployment, Type: pick("DeploymentCreated", "DeploymentStatusUpdate", "DeploymentDeleted"),
			Key: d.ID, Namespace: d.Namespace, FilterKeys: nonEmpty(d.JobID), Object: d}, true
	case TableNodes:
		n := obj.(*state.Node)
		return state.Event{Topic: state.TopicNode, Type: pick("NodeRegistration", "NodeUpdated", "NodeDeregistration"),
			Key: n.ID, Object: n}, true
	case TableServiceRegistrations:
		s := obj.(*state.ServiceRegistration)
		return state.Event{Topic: state.TopicService, Type: pick("ServiceRegistration", "ServiceRegistration", "ServiceDeregistration"),
			Key: s.ServiceName, Namespace: s.Namespace, FilterKeys: nonEmpty(s.ID, s.JobID, s.AllocID), Object: s}, true
	}
	return state.Event{}, false
}

func nonEmpty(keys ...string) []string {
	out := keys[:0]
	for _, k := range keys {
		if k != "" {
			out = append(out, k)
		}
	}
	return out
}
