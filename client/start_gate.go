package client

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// startGate bounds how many allocations set up and start their tasks at
// once. A node handed a thousand placements in one answer made a thousand
// runners runnable together; Go's scheduler runs them in turn, so the
// client's own loops, woken meanwhile, waited behind all of them: the
// status reports 20–30 ms, and a heartbeat or a local server's Raft and
// FSM as long. Through the gate at most slots runners are in their
// start at a time, the others parked until a slot frees.
//
// A runner leaves the gate once its main tasks have started, or after
// hold, whichever comes first: a start that waits (an image pulled, a
// prestart task that runs for minutes) gives up its slot after hold and
// goes on outside the gate, so a slow start never holds up the rest for
// longer than that.
type startGate struct {
	slots chan struct{}
	hold  time.Duration
}

// startGateSlots is the gate's width per CPU the client may use; and
// startGateHold the longest one start keeps its slot.
const (
	startGateSlotsPerCPU = 2
	startGateHold        = 20 * time.Millisecond
)

func newStartGate(slots int, hold time.Duration) *startGate {
	return &startGate{slots: make(chan struct{}, max(slots, 1)), hold: hold}
}

// defaultStartGate sizes the gate by GOMAXPROCS.
func defaultStartGate() *startGate {
	return newStartGate(startGateSlotsPerCPU*runtime.GOMAXPROCS(0), startGateHold)
}

// enter waits for a slot; it returns the lease that holds it, or nil
// when ctx ended or stop was closed first. The caller leaves
// (startLease.leave) once its start is over; a lease not left within
// hold is freed by its timer.
func (g *startGate) enter(ctx context.Context, stop <-chan struct{}) *startLease {
	if g == nil {
		return nil // a client built without one (tests)
	}
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		return nil
	case <-stop:
		return nil
	}
	l := &startLease{g: g}
	l.t = time.AfterFunc(g.hold, l.release)
	return l
}

// startLease is one slot of a startGate.
type startLease struct {
	g    *startGate
	once sync.Once
	t    *time.Timer
}

// release frees the slot, once.
func (l *startLease) release() { l.once.Do(func() { <-l.g.slots }) }

// leave frees the slot if its timer has not; it is called by the
// goroutine that entered, and does nothing on a nil lease.
func (l *startLease) leave() {
	if l == nil {
		return
	}
	l.t.Stop()
	l.release()
}
