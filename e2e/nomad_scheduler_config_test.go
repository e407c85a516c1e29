//go:build e2e

package e2e

import (
	"testing"

	nomad "github.com/hashicorp/nomad/api"
)

// TestNomadGoClientSchedulerConfiguration: Nomad's Go client reads the
// defaults, sets a configuration, and its check-and-set fails on a stale
// ModifyIndex and succeeds on the current one.
func TestNomadGoClientSchedulerConfiguration(t *testing.T) {
	a := newServer(t)
	a.start()
	op := nomadClient(t, a, "").Operator()

	got, _, err := op.SchedulerGetConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := got.SchedulerConfig
	if c == nil || c.SchedulerAlgorithm != nomad.SchedulerAlgorithmBinpack || !c.PreemptionConfig.SystemSchedulerEnabled ||
		c.PreemptionConfig.ServiceSchedulerEnabled {
		t.Fatalf("defaults = %+v", c)
	}

	c.SchedulerAlgorithm = nomad.SchedulerAlgorithmSpread
	c.PreemptionConfig.BatchSchedulerEnabled = true
	if out, _, err := op.SchedulerSetConfiguration(c, nil); err != nil || !out.Updated {
		t.Fatalf("set: %+v, %v", out, err)
	}
	got, _, err = op.SchedulerGetConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	c = got.SchedulerConfig
	if c.SchedulerAlgorithm != nomad.SchedulerAlgorithmSpread || !c.PreemptionConfig.BatchSchedulerEnabled || c.ModifyIndex == 0 {
		t.Fatalf("after set = %+v", c)
	}

	stale := *c
	stale.ModifyIndex--
	stale.PauseEvalBroker = true
	if out, _, err := op.SchedulerCASConfiguration(&stale, nil); err != nil || out.Updated {
		t.Fatalf("stale CAS: %+v, %v; want not updated", out, err)
	}
	c.RejectJobRegistration = true
	if out, _, err := op.SchedulerCASConfiguration(c, nil); err != nil || !out.Updated {
		t.Fatalf("CAS at the current index: %+v, %v", out, err)
	}
	got, _, _ = op.SchedulerGetConfiguration(nil)
	if c := got.SchedulerConfig; c.PauseEvalBroker || !c.RejectJobRegistration {
		t.Fatalf("after CAS = %+v", c)
	}
}
