package store

import (
	"fmt"
	"testing"

	"github.com/schedhq/sched/state"
)

// eventSummary is "Topic/Type/Key@Index" for each event, for comparison.
func eventSummary(batches []state.EventBatch) []string {
	var out []string
	for _, b := range batches {
		for _, e := range b.Events {
			if e.Index != b.Index {
				out = append(out, fmt.Sprintf("index mismatch %d != %d", e.Index, b.Index))
			}
			out = append(out, fmt.Sprintf("%s/%s/%s@%d", e.Topic, e.Type, e.Key, e.Index))
		}
	}
	return out
}

func TestApplyPublishesEventsInIndexOrder(t *testing.T) {
	s := stStore(t, Config{})
	if got, _ := s.Events().After(0, 0); len(got) != 0 {
		t.Fatalf("from 0 = %v, want nothing (only new events)", got)
	}
	job := stJob("web")
	stRegister(t, s, 10, job, stEval("e1", job))
	stApply(t, s, 11, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")})
	stApply(t, s, 12, JobDeregisterRequestType, &JobDeregisterRequest{Namespace: state.DefaultNamespace, JobID: "web", Purge: true})
	// A failed command publishes nothing but still moves LastIndex.
	stApplyErr(t, s, 13, NodeDeregisterRequestType, &NodeDeregisterRequest{NodeIDs: []string{"nope"}})

	got, _ := s.Events().After(1, 0)
	summary := eventSummary(got)
	want := map[string]bool{
		"Job/JobRegistered/web@10": true, "Evaluation/EvaluationUpdated/e1@10": true,
		"Node/NodeRegistration/n1@11": true, "Job/JobDeregistered/web@12": true,
	}
	for _, w := range summary {
		delete(want, w)
	}
	if len(want) != 0 {
		t.Errorf("events %v lack %v", summary, want)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Index <= got[i-1].Index {
			t.Errorf("batches out of order: %d after %d", got[i].Index, got[i-1].Index)
		}
	}
	if li := s.Events().LastIndex(); li != 13 {
		t.Errorf("LastIndex = %d, want 13", li)
	}
	// Resuming at 11 starts with the node registration.
	resumed, _ := s.Events().After(11, 0)
	if len(resumed) == 0 || resumed[0].Index != 11 {
		t.Errorf("After(11) = %v, want to start at 11", eventSummary(resumed))
	}
	for _, b := range got {
		for _, e := range b.Events {
			if e.Topic == state.TopicEvaluation && (len(e.FilterKeys) == 0 || e.FilterKeys[0] != "web") {
				t.Errorf("eval event filter keys = %v, want the job first", e.FilterKeys)
			}
		}
	}
}

func TestEventBufferIsBoundedAndWakesReaders(t *testing.T) {
	b := NewEventBuffer(3)
	_, wake := b.After(0, 0)
	for i := uint64(1); i <= 5; i++ {
		b.publish(i, []state.Event{{Topic: state.TopicJob, Key: "j", Index: i}})
	}
	select {
	case <-wake:
	default:
		t.Fatal("publish did not wake a waiting reader")
	}
	got, _ := b.After(1, 0)
	if len(got) != 3 || got[0].Index != 3 || got[2].Index != 5 {
		t.Fatalf("After(1) of a 3-entry buffer after 5 publishes = %v, want 3..5", eventSummary(got))
	}
	if got, _ := b.After(4, 1); len(got) != 1 || got[0].Index != 4 {
		t.Errorf("After(4, max 1) = %v, want only 4", eventSummary(got))
	}
	if got, _ := b.After(6, 0); len(got) != 0 {
		t.Errorf("After(6) = %v, want nothing yet", eventSummary(got))
	}
}

// A command that writes the same object twice (a job, then its refreshed
// status) yields one event per object, the last write's, also past the
// linear de-duplication's reach.
func TestEventsOfDeduplicates(t *testing.T) {
	var writes []written
	for i := range linearDedup + 5 {
		a := &state.Allocation{ID: fmt.Sprintf("a%d", i), Namespace: "default", JobID: "web", CreateIndex: 9}
		writes = append(writes, written{table: TableAllocs, obj: a})
	}
	again := &state.Allocation{ID: "a1", Namespace: "default", JobID: "web", CreateIndex: 9, ClientStatus: "running"}
	late := &state.Allocation{ID: fmt.Sprintf("a%d", linearDedup+3), Namespace: "default", JobID: "web", CreateIndex: 3}
	writes = append(writes, written{table: TableAllocs, obj: again}, written{table: TableAllocs, obj: late})
	evs := eventsOf(9, writes)
	if len(evs) != linearDedup+5 {
		t.Fatalf("%d events, want %d", len(evs), linearDedup+5)
	}
	if evs[1].Object != again || evs[1].Type != "AllocationCreated" {
		t.Errorf("a1's event = %+v, want the second write, created", evs[1])
	}
	if evs[linearDedup+3].Object != late || evs[linearDedup+3].Type != "AllocationUpdated" {
		t.Errorf("late event = %+v, want the update", evs[linearDedup+3])
	}
}

// Deployments, allocations and services have their events too, with the
// job among their filter keys.
func TestDeploymentAllocationAndServiceEvents(t *testing.T) {
	s := stDeploymentFixture(t) // index 11: deployment d1, allocs a1 a2
	stApply(t, s, 12, ServiceUpsertRequestType, &ServiceUpsertRequest{Services: []*state.ServiceRegistration{
		{ID: "s1", ServiceName: "web", Namespace: state.DefaultNamespace, JobID: "web", AllocID: "a1", NodeID: "n1", Port: 80},
	}})
	stApply(t, s, 13, ServiceDeleteRequestType, &ServiceDeleteRequest{IDs: []string{"s1"}})
	got, _ := s.Events().After(11, 0)
	summary := eventSummary(got)
	for _, want := range []string{
		"Deployment/DeploymentCreated/d1@11", "Allocation/AllocationCreated/a1@11", "Allocation/AllocationCreated/a2@11",
		"Service/ServiceRegistration/web@12", "Service/ServiceDeregistration/web@13",
	} {
		found := false
		for _, s := range summary {
			found = found || s == want
		}
		if !found {
			t.Errorf("events %v lack %s", summary, want)
		}
	}
	for _, b := range got {
		for _, e := range b.Events {
			if e.Topic == state.TopicAllocation && (len(e.FilterKeys) < 2 || e.FilterKeys[0] != "web" || e.FilterKeys[1] != "d1") {
				t.Errorf("allocation %s filter keys %v, want job and deployment first", e.Key, e.FilterKeys)
			}
		}
	}
}
