package jobs

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
)

const schedConfigPath = "/v1/operator/scheduler/configuration"

func TestSchedulerConfigGetSetCAS(t *testing.T) {
	h := newHarness(t)
	var got state.SchedulerConfigurationResponse
	h.OK(http.MethodGet, schedConfigPath, nil, &got)
	if c := got.SchedulerConfig; c == nil || c.SchedulerAlgorithm != "binpack" || !c.PreemptionConfig.SystemSchedulerEnabled || c.ModifyIndex != 0 {
		t.Fatalf("defaults = %+v", got.SchedulerConfig)
	}

	var set state.SchedulerSetConfigurationResponse
	body := map[string]any{"SchedulerAlgorithm": "spread", "PreemptionConfig": map[string]any{"ServiceSchedulerEnabled": true}}
	h.OK(http.MethodPut, schedConfigPath, body, &set)
	if !set.Updated || set.Index == 0 {
		t.Fatalf("PUT answered %+v", set)
	}
	h.OK(http.MethodGet, schedConfigPath, nil, &got)
	c := got.SchedulerConfig
	if c.SchedulerAlgorithm != "spread" || !c.PreemptionConfig.ServiceSchedulerEnabled || c.PreemptionConfig.SystemSchedulerEnabled ||
		c.ModifyIndex != set.Index || got.Index != set.Index {
		t.Fatalf("after PUT: %+v (index %d), want ModifyIndex %d", c, got.Index, set.Index)
	}

	// A stale check-and-set writes nothing and says so.
	var cas state.SchedulerSetConfigurationResponse
	h.OK(http.MethodPut, schedConfigPath+"?cas=1", map[string]any{"SchedulerAlgorithm": "binpack"}, &cas)
	if cas.Updated {
		t.Fatal("CAS with a stale index answered Updated")
	}
	h.OK(http.MethodGet, schedConfigPath, nil, &got)
	if got.SchedulerConfig.SchedulerAlgorithm != "spread" {
		t.Fatalf("stale CAS changed the configuration: %+v", got.SchedulerConfig)
	}
	h.OK(http.MethodPut, schedConfigPath+"?cas="+strconv.FormatUint(set.Index, 10), map[string]any{"SchedulerAlgorithm": "binpack", "PauseEvalBroker": true}, &cas)
	if !cas.Updated {
		t.Fatal("CAS at the current ModifyIndex not applied")
	}
	h.OK(http.MethodGet, schedConfigPath, nil, &got)
	if got.SchedulerConfig.SchedulerAlgorithm != "binpack" || !got.SchedulerConfig.PauseEvalBroker {
		t.Fatalf("after CAS: %+v", got.SchedulerConfig)
	}
}

func TestSchedulerConfigBadInput(t *testing.T) {
	h := newHarness(t)
	before := h.Writes()
	h.Fail(http.MethodPut, schedConfigPath, map[string]any{"SchedulerAlgorithm": "random"}, http.StatusBadRequest, "SchedulerAlgorithm", "random")
	h.Fail(http.MethodPut, schedConfigPath+"?cas=abc", map[string]any{}, http.StatusBadRequest, "cas")
	h.Fail(http.MethodPut, schedConfigPath, `{"PauseEvalBroker": "yes"}`, http.StatusBadRequest)
	if h.Writes() != before {
		t.Errorf("refused requests wrote %d commands", h.Writes()-before)
	}
}

func TestSchedulerConfigACL(t *testing.T) {
	a := newACLHarness(t, true, "")
	mgmt := a.ManagementToken()
	reader := a.ClientToken(apitest.RulesText("", nil, "", "", "read"))
	writer := a.ClientToken(apitest.RulesText("", nil, "", "", "write"))
	nobody := a.ClientToken(apitest.RulesText("default", []string{"submit-job"}, "", "", ""))

	a.OKAs(reader, http.MethodGet, schedConfigPath, nil, nil)
	a.DeniedAs(nobody, http.MethodGet, schedConfigPath, nil)
	a.DeniedAs(reader, http.MethodPut, schedConfigPath, map[string]any{"RejectJobRegistration": true})
	var set state.SchedulerSetConfigurationResponse
	a.OKAs(writer, http.MethodPut, schedConfigPath, map[string]any{"RejectJobRegistration": true}, &set)
	if !set.Updated {
		t.Fatal("operator:write could not set the configuration")
	}

	// RejectJobRegistration: a submit-job token is refused with the
	// reason; a management token still registers.
	job := map[string]any{"Job": apitest.TestJob("web")}
	a.FailAs(nobody, http.MethodPut, "/v1/jobs", job, http.StatusForbidden, "RejectJobRegistration")
	if j, _ := a.H.Store.JobByID(nil, "default", "web"); j != nil {
		t.Fatal("a rejected registration wrote the job")
	}
	a.OKAs(mgmt, http.MethodPut, "/v1/jobs", job, nil)
	a.FailAs(nobody, http.MethodPost, "/v1/job/web/scale", map[string]any{"Count": 2, "Target": map[string]string{"Group": "web"}, "Message": "m"},
		http.StatusForbidden, "RejectJobRegistration")

	a.OKAs(writer, http.MethodPut, schedConfigPath, map[string]any{"RejectJobRegistration": false}, nil)
	a.OKAs(nobody, http.MethodPut, "/v1/jobs", map[string]any{"Job": apitest.TestJob("api")}, nil)
}

func TestNodePoolSchedulerAlgorithmValidated(t *testing.T) {
	h := newHarness(t)
	h.Fail(http.MethodPut, "/v1/node/pool/gpu", map[string]any{"SchedulerConfiguration": map[string]any{"SchedulerAlgorithm": "random"}},
		http.StatusBadRequest, "SchedulerConfiguration.SchedulerAlgorithm")
	h.OK(http.MethodPut, "/v1/node/pool/gpu", map[string]any{"SchedulerConfiguration": map[string]any{"SchedulerAlgorithm": "spread"}}, nil)
	p, _ := h.Store.NodePoolByName(nil, "gpu")
	if state.PoolSchedulerAlgorithm(p) != state.SchedulerAlgorithmSpread {
		t.Fatalf("pool = %+v", p)
	}
}
