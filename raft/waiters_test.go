package raft

import (
	"testing"
)

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestAppliedIndexWakesOnlySatisfiedWaiters(t *testing.T) {
	var a appliedIndex
	a.set(5)
	if w := a.wait(5); w != nil {
		t.Fatal("wait(5) at applied 5 registered a waiter, want immediate")
	}
	w7, w9, w12 := a.wait(7), a.wait(9), a.wait(12)
	for _, w := range []*indexWaiter{w7, w9, w12} {
		if w == nil {
			t.Fatal("wait above applied returned nil")
		}
	}

	steps := []struct {
		set  uint64
		want [3]bool // w7, w9, w12 woken
	}{
		{6, [3]bool{false, false, false}},
		{9, [3]bool{true, true, false}},
		{11, [3]bool{true, true, false}},
		{12, [3]bool{true, true, true}},
	}
	for _, s := range steps {
		a.set(s.set)
		got := [3]bool{closed(w7.ch), closed(w9.ch), closed(w12.ch)}
		if got != s.want {
			t.Fatalf("after set(%d) woken = %v, want %v", s.set, got, s.want)
		}
	}
	if n := len(a.waiters); n != 0 {
		t.Errorf("%d waiters left, want 0", n)
	}
}

func TestAppliedIndexCancelRemovesWaiter(t *testing.T) {
	var a appliedIndex
	ws := []*indexWaiter{a.wait(10), a.wait(3), a.wait(7), a.wait(20)}
	a.cancel(ws[2]) // 7
	a.cancel(ws[0]) // 10
	if n := len(a.waiters); n != 2 {
		t.Fatalf("%d waiters after two cancels, want 2", n)
	}
	a.set(10)
	if !closed(ws[1].ch) {
		t.Error("waiter for 3 not woken by set(10)")
	}
	if closed(ws[0].ch) || closed(ws[2].ch) {
		t.Error("cancelled waiter was woken")
	}
	if closed(ws[3].ch) {
		t.Error("waiter for 20 woken by set(10)")
	}
	a.cancel(ws[1]) // already woken: must be a no-op
	if n := len(a.waiters); n != 1 {
		t.Errorf("%d waiters left, want 1 (the one for 20)", n)
	}
}

func TestBroadcastWakesEveryWaiterOnce(t *testing.T) {
	var b broadcast
	c1, c2 := b.changed(), b.changed()
	b.notify()
	for i, c := range []<-chan struct{}{c1, c2} {
		select {
		case <-c:
		default:
			t.Errorf("waiter %d not woken", i)
		}
	}
	c3 := b.changed()
	select {
	case <-c3:
		t.Error("a channel taken after notify is already closed")
	default:
	}
}

func TestPublishLeadershipKeepsOnlyLatest(t *testing.T) {
	tests := []struct {
		name   string
		values []bool
	}{
		{"one", []bool{true}},
		{"gain then lose", []bool{true, false}},
		{"flapping", []bool{true, false, true, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &Node{leaderCh: make(chan bool, 1)}
			for _, v := range tt.values { // nobody reads: must not block
				n.publishLeadership(v)
			}
			want := tt.values[len(tt.values)-1]
			if got := <-n.LeaderCh(); got != want {
				t.Errorf("LeaderCh delivered %v, want latest %v", got, want)
			}
			select {
			case v := <-n.LeaderCh():
				t.Errorf("LeaderCh delivered a second value %v", v)
			default:
			}
		})
	}
}
