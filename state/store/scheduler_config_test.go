package store

import (
	"errors"
	"testing"

	"github.com/schedhq/sched/state"
)

// stFillClusterTables writes the scheduler configuration at index base,
// for the snapshot round-trip test.
func stFillClusterTables(t *testing.T, s *Store, base uint64) {
	t.Helper()
	stApply(t, s, base, SchedulerConfigSetRequestType, &SchedulerConfigSetRequest{Config: &state.SchedulerConfiguration{
		SchedulerAlgorithm: state.SchedulerAlgorithmSpread, MemoryOversubscriptionEnabled: true,
		PreemptionConfig: state.PreemptionConfig{ServiceSchedulerEnabled: true},
	}})
}

func TestSchedulerConfigDefaultsThenSet(t *testing.T) {
	s := stStore(t, Config{})
	c, err := s.SchedulerConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.SchedulerAlgorithm != state.SchedulerAlgorithmBinpack || !c.PreemptionConfig.SystemSchedulerEnabled ||
		c.PreemptionConfig.ServiceSchedulerEnabled || c.ModifyIndex != 0 {
		t.Fatalf("default configuration = %+v", c)
	}
	// An empty algorithm is binpack.
	stApply(t, s, 10, SchedulerConfigSetRequestType, &SchedulerConfigSetRequest{Config: &state.SchedulerConfiguration{PauseEvalBroker: true}})
	c, _ = s.SchedulerConfig(nil)
	if c.SchedulerAlgorithm != state.SchedulerAlgorithmBinpack || !c.PauseEvalBroker || c.PreemptionConfig.SystemSchedulerEnabled ||
		c.CreateIndex != 10 || c.ModifyIndex != 10 {
		t.Fatalf("after set = %+v", c)
	}
	if got := s.Index(TableSchedulerConfig); got != 10 {
		t.Errorf("table index = %d, want 10", got)
	}
}

func TestSchedulerConfigCAS(t *testing.T) {
	s := stStore(t, Config{})
	spread := &state.SchedulerConfiguration{SchedulerAlgorithm: state.SchedulerAlgorithmSpread}
	// CAS 0 applies only while nothing was written.
	resp := stApply(t, s, 10, SchedulerConfigSetRequestType, &SchedulerConfigSetRequest{Config: spread, CAS: true, CASIndex: 0})
	if !resp.(*SchedulerConfigSetResponse).Updated {
		t.Fatal("CAS 0 on an unwritten configuration not applied")
	}
	resp = stApply(t, s, 11, SchedulerConfigSetRequestType, &SchedulerConfigSetRequest{
		Config: &state.SchedulerConfiguration{RejectJobRegistration: true}, CAS: true, CASIndex: 0})
	if resp.(*SchedulerConfigSetResponse).Updated {
		t.Fatal("CAS 0 applied over a written configuration")
	}
	c, _ := s.SchedulerConfig(nil)
	if c.RejectJobRegistration || c.SchedulerAlgorithm != state.SchedulerAlgorithmSpread || c.ModifyIndex != 10 {
		t.Fatalf("a failed CAS changed the configuration: %+v", c)
	}
	resp = stApply(t, s, 12, SchedulerConfigSetRequestType, &SchedulerConfigSetRequest{
		Config: &state.SchedulerConfiguration{RejectJobRegistration: true}, CAS: true, CASIndex: 10})
	if !resp.(*SchedulerConfigSetResponse).Updated {
		t.Fatal("CAS at the current ModifyIndex not applied")
	}
	c, _ = s.SchedulerConfig(nil)
	if !c.RejectJobRegistration || c.CreateIndex != 10 || c.ModifyIndex != 12 {
		t.Fatalf("after CAS = %+v", c)
	}
}

func TestSchedulerConfigRejectsBadAlgorithm(t *testing.T) {
	s := stStore(t, Config{})
	resp := stApplyErr(t, s, 10, SchedulerConfigSetRequestType, &SchedulerConfigSetRequest{
		Config: &state.SchedulerConfiguration{SchedulerAlgorithm: "random"}})
	err, ok := resp.(error)
	if !ok || !errors.Is(err, state.ErrInvalid) {
		t.Fatalf("bad algorithm answered %v", resp)
	}
	if c, _ := s.SchedulerConfig(nil); c.ModifyIndex != 0 {
		t.Errorf("a refused write changed the configuration: %+v", c)
	}
}
