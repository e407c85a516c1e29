package store

import (
	"sort"
	"sync"

	"github.com/schedhq/sched/state"
)

// DefaultEventBufferSize is how many applied log entries' events a store
// keeps for subscribers that resume from an index. The kept objects stay
// in memory (and in the garbage collector's work): with 4096, applying
// job registers cost about a quarter more CPU than without the buffer,
// with 256 a few percent.
const DefaultEventBufferSize = 256

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

// written is one write of a table with an event topic.
type written struct {
	table   string
	obj     any
	deleted bool
}

// eventTables are the tables whose writes are events.
var eventTables = map[string]bool{
	TableJobs: true, TableEvals: true, TableAllocs: true, TableDeployment: true,
	TableNodes: true, TableServiceRegistrations: true,
}

// record notes a write for the event stream. It is cheaper than go-memdb's
// change tracking, which keeps the object before every write and
// de-duplicates by encoded key.
func (t *writeTxn) record(table string, obj any, deleted bool) {
	if t.written != nil && eventTables[table] {
		*t.written = append(*t.written, written{table: table, obj: obj, deleted: deleted})
	}
}

// eventsOf turns what one command wrote into stream events, one per object
// (its last write wins when a command wrote it twice), in the order the
// objects were first written. An object is created when its CreateIndex is
// the command's index.
func eventsOf(index uint64, writes []written) []state.Event {
	if len(writes) == 0 {
		return nil
	}
	out := make([]state.Event, 0, len(writes))
	var at map[[2]string]int // for commands that write many objects
	for _, w := range writes {
		ev := eventOf(w.obj, index, w.deleted)
		ev.Index = index
		if i := seenAt(out, at, ev, w.obj); i >= 0 {
			out[i] = ev
			continue
		}
		if len(out) >= linearDedup {
			if at == nil {
				at = make(map[[2]string]int, len(writes))
				for i := range out {
					at[dedupKey(out[i])] = i
				}
			}
			at[dedupKey(ev)] = len(out)
		}
		out = append(out, ev)
	}
	return out
}

// linearDedup is how many events eventsOf compares one by one before it
// indexes them in a map.
const linearDedup = 16

// seenAt returns where out already holds an event for the same object as
// ev, or -1.
func seenAt(out []state.Event, at map[[2]string]int, ev state.Event, obj any) int {
	if at != nil {
		if i, ok := at[dedupKey(ev)]; ok {
			return i
		}
		return -1
	}
	id := objectID(obj)
	for i := range out {
		if out[i].Topic == ev.Topic && out[i].Namespace == ev.Namespace && objectID(out[i].Object) == id {
			return i
		}
	}
	return -1
}

// dedupKey names the object of an event: topic, namespace and ID.
func dedupKey(ev state.Event) [2]string {
	return [2]string{ev.Topic, ev.Namespace + "\x00" + objectID(ev.Object)}
}

// objectID is the ID of an object of an event table.
func objectID(obj any) string {
	id, _ := identity(obj)
	return id
}

// identity is the ID and CreateIndex of an object of an event table.
func identity(obj any) (string, uint64) {
	switch o := obj.(type) {
	case *state.Job:
		return o.ID, o.CreateIndex
	case *state.Evaluation:
		return o.ID, o.CreateIndex
	case *state.Allocation:
		return o.ID, o.CreateIndex
	case *state.Deployment:
		return o.ID, o.CreateIndex
	case *state.Node:
		return o.ID, o.CreateIndex
	case *state.ServiceRegistration:
		return o.ID, o.CreateIndex
	}
	return "", 0
}

// eventOf describes one written object of an event table; the object is
// created when the command at index created it.
func eventOf(obj any, index uint64, deleted bool) state.Event {
	_, createIndex := identity(obj)
	created := !deleted && createIndex == index
	pick := func(createdType, updatedType, deletedType string) string {
		switch {
		case deleted:
			return deletedType
		case created:
			return createdType
		}
		return updatedType
	}
	var ev state.Event
	switch o := obj.(type) {
	case *state.Job:
		ev = state.Event{Topic: state.TopicJob, Type: pick("JobRegistered", "JobRegistered", "JobDeregistered"),
			Key: o.ID, Namespace: o.Namespace}
	case *state.Evaluation:
		ev = state.Event{Topic: state.TopicEvaluation, Type: pick("EvaluationUpdated", "EvaluationUpdated", "EvaluationDeleted"),
			Key: o.ID, Namespace: o.Namespace, FilterKeys: nonEmpty(o.JobID, o.DeploymentID)}
	case *state.Allocation:
		ev = state.Event{Topic: state.TopicAllocation, Type: pick("AllocationCreated", "AllocationUpdated", "AllocationDeleted"),
			Key: o.ID, Namespace: o.Namespace, FilterKeys: nonEmpty(o.JobID, o.DeploymentID, o.NodeID)}
	case *state.Deployment:
		ev = state.Event{Topic: state.TopicDeployment, Type: pick("DeploymentCreated", "DeploymentStatusUpdate", "DeploymentDeleted"),
			Key: o.ID, Namespace: o.Namespace, FilterKeys: nonEmpty(o.JobID)}
	case *state.Node:
		ev = state.Event{Topic: state.TopicNode, Type: pick("NodeRegistration", "NodeUpdated", "NodeDeregistration"), Key: o.ID}
	case *state.ServiceRegistration:
		ev = state.Event{Topic: state.TopicService, Type: pick("ServiceRegistration", "ServiceRegistration", "ServiceDeregistration"),
			Key: o.ServiceName, Namespace: o.Namespace, FilterKeys: nonEmpty(o.ID, o.JobID, o.AllocID)}
	}
	ev.Object = obj
	return ev
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
