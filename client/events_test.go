package client

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// A task state keeps its first event and the newest MaxTaskEvents-1,
// and a copy taken before an append (a report, a journal record) keeps
// the events it had: appendEvent never changes the list in place.
func TestAppendEventKeepsFirstAndNewestAndCopies(t *testing.T) {
	ts := &state.TaskState{Events: make([]*state.TaskEvent, 0, 6)}
	tr := &taskRunner{ts: ts}
	names := func(evs []*state.TaskEvent) []string {
		var out []string
		for _, ev := range evs {
			out = append(out, ev.Message)
		}
		return out
	}
	var copies []*state.TaskState
	var was [][]string
	for i := range 3 * MaxTaskEvents {
		appendEvent(ts, newEvent(state.TaskDriverMessage, time.Unix(int64(i), 0), strconv.Itoa(i)))
		cp := tr.stateCopyLocked()
		copies, was = append(copies, cp), append(was, names(cp.Events))
	}
	for i, cp := range copies {
		if got := names(cp.Events); !slices.Equal(got, was[i]) {
			t.Errorf("copy %d changed: %v, was %v", i, got, was[i])
		}
	}
	got := names(ts.Events)
	want := []string{"0"}
	for i := 2*MaxTaskEvents + 1; i < 3*MaxTaskEvents; i++ {
		want = append(want, strconv.Itoa(i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}
