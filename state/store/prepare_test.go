package store

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

// deepMap nests depth single-key maps around "x".
func deepMap(depth int) map[string]any {
	var v any = "x"
	for range depth {
		v = map[string]any{"a": v}
	}
	return v.(map[string]any)
}

// agree applies req on a fresh store both ways, as the leader judges it
// before proposing (Prepare) and as every server judges it from the log
// (Apply of the plain encoding), and fails when the verdicts differ.
func agree(t *testing.T, name string, mt MessageType, req any) {
	t.Helper()
	_, prepErr := Prepare(mt, req)
	data, err := Encode(mt, req)
	if err != nil {
		if prepErr == nil {
			t.Errorf("%s: Prepare accepted what cannot be encoded: %v", name, err)
		}
		return
	}
	s, err := NewStore(Config{})
	if err != nil {
		t.Fatal(err)
	}
	resp := s.Apply(1, data)
	applyErr, _ := resp.(error)
	// Refusals for what the state holds (no such namespace, a failed
	// check-and-set) are Apply's alone: the state may change between
	// the leader's look and the command's turn in the log.
	stateful := errors.Is(applyErr, state.ErrNotFound) || errors.Is(applyErr, state.ErrConflict)
	switch {
	case prepErr == nil && applyErr != nil && !stateful:
		t.Errorf("%s: accepted before proposing, refused from the log: %v", name, applyErr)
	case prepErr != nil && applyErr == nil:
		t.Errorf("%s: refused before proposing (%v), accepted from the log", name, prepErr)
	case prepErr != nil && !errors.Is(prepErr, state.ErrInvalid):
		t.Errorf("%s: Prepare's error %v is no validation error (a 400)", name, prepErr)
	}
}

// The leader's judgement before proposing and Apply's from the log agree
// on every command of the corpus; the ~2,000-deep job config of issue 13
// passed HTTP validation, then failed in Apply.
func TestPrepareAgreesWithApply(t *testing.T) {
	withConfig := func(depth int) *state.Job {
		j := stJob("deep")
		j.TaskGroups[0].Tasks[0].Config = deepMap(depth)
		return j
	}
	noID, noNS := stJob(""), stJob("x")
	noNS.Namespace = ""
	allPool := stNode("n1")
	allPool.NodePool = state.NodePoolAll
	for _, tc := range []struct {
		name string
		mt   MessageType
		req  any
	}{
		{"valid job", JobRegisterRequestType, &JobRegisterRequest{Job: stJob("web")}},
		{"no job", JobRegisterRequestType, &JobRegisterRequest{}},
		{"job without ID", JobRegisterRequestType, &JobRegisterRequest{Job: noID}},
		{"job without namespace", JobRegisterRequestType, &JobRegisterRequest{Job: noNS}},
		{"config 100 deep", JobRegisterRequestType, &JobRegisterRequest{Job: withConfig(100)}},
		{"config 1000 deep", JobRegisterRequestType, &JobRegisterRequest{Job: withConfig(1000)}},
		{"config 2000 deep", JobRegisterRequestType, &JobRegisterRequest{Job: withConfig(2000)}},
		{"valid node", NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")}},
		{"no node", NodeRegisterRequestType, &NodeRegisterRequest{}},
		{"node in pool all", NodeUpsertRequestType, &NodeUpsertRequest{Node: allPool}},
		{"scheduler config", SchedulerConfigSetRequestType, &SchedulerConfigSetRequest{Config: &state.SchedulerConfiguration{SchedulerAlgorithm: "spread"}}},
		{"scheduler config, bad algorithm", SchedulerConfigSetRequestType, &SchedulerConfigSetRequest{Config: &state.SchedulerConfiguration{SchedulerAlgorithm: "random"}}},
		{"no scheduler config", SchedulerConfigSetRequestType, &SchedulerConfigSetRequest{}},
	} {
		agree(t, tc.name, tc.mt, tc.req)
	}
}

// FuzzPrepareAgreesWithApply: for any job a client could send as JSON, the
// two verdicts agree. Its seed corpus is in testdata/fuzz.
func FuzzPrepareAgreesWithApply(f *testing.F) {
	seed, _ := json.Marshal(stJob("web"))
	f.Add(seed)
	f.Add([]byte(`{"ID": "x", "Namespace": "default", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Config": {"a": {"b": [1, [2, [3]]]}}}]}]}`))
	f.Add([]byte(`{"ID": "", "Namespace": "default"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var job state.Job
		if json.Unmarshal(data, &job) != nil {
			return
		}
		agree(t, "fuzzed job", JobRegisterRequestType, &JobRegisterRequest{Job: &job})
	})
}

// FuzzDecodeCommand: no log entry crashes the decoder, and whatever
// decodes is judged by its Check without a panic.
func FuzzDecodeCommand(f *testing.F) {
	for _, c := range []struct {
		mt  MessageType
		req any
	}{
		{JobRegisterRequestType, &JobRegisterRequest{Job: &state.Job{ID: "web", Namespace: "default"}}},
		{NodeRegisterRequestType, &NodeRegisterRequest{Node: &state.Node{ID: "n1", SecretHash: "ab"}}},
		{JobDeregisterRequestType, &JobDeregisterRequest{Namespace: "default", JobID: "web", Purge: true}},
		{QuotaUpsertRequestType, &QuotaUpsertRequest{Quotas: []*state.QuotaSpec{{Name: "q", Limits: []*state.QuotaLimit{{Region: "global", RegionLimit: &state.QuotaResources{CPU: -1}}}}}}},
		{StateVersionUploadRequestType, &StateVersionUploadRequest{ID: "sv-1", Kind: UploadState, Data: []byte(`{"version":4}`),
			Outputs: []*mgmt.StateVersionOutput{{Name: "o", Type: []byte(`"string"`), Value: []byte(`"v"`)}}}},
		{ConfigurationVersionUploadRequestType, &ConfigurationVersionUploadRequest{ID: "cv-1", Archive: []byte{0x1f, 0x8b}}},
	} {
		data, err := Encode(c.mt, c.req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte{byte(JobRegisterRequestType) | byte(IgnoreUnknownTypeFlag), 0xc1})
	f.Fuzz(func(t *testing.T, data []byte) {
		_, req, err := DecodeCommand(data)
		if err != nil {
			return
		}
		_ = check(req)
	})
}

// A plan's results skip Prepare's decoding round trip (they are made of
// values already judged when stored), but the entry Prepare returns is the
// same as Encode's and decodes to the same plan; a plan whose job carries
// what the log cannot decode (which a registration's Prepare refuses, so
// no stored job ever does) is where the exception would be wrong, and
// TestPrepareAgreesWithApply keeps registrations honest.
func TestPreparePlanWithoutRoundTrip(t *testing.T) {
	job := &state.Job{ID: "web", Namespace: "default", Type: state.JobTypeService, Version: 3}
	req := &PlanApplyRequest{EvalID: "e1", Job: job, Now: 7, JobAllocs: []*state.Allocation{
		{ID: "a1", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1", Name: "web.g[0]"},
		{ID: "a2", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n2", Name: "web.g[1]"},
	}}
	got, err := Prepare(PlanApplyRequestType, req)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Encode(PlanApplyRequestType, req)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatal("Prepare's entry differs from Encode's")
	}
	mt, decoded, err := DecodeCommand(got)
	if err != nil || mt != PlanApplyRequestType {
		t.Fatalf("decode: %v %v", mt, err)
	}
	d := decoded.(*PlanApplyRequest)
	if d.EvalID != "e1" || d.Job.Version != 3 || len(d.JobAllocs) != 2 || d.JobAllocs[1].Name != "web.g[1]" || d.Now != 7 {
		t.Errorf("decoded %+v", d)
	}
}

// Encode's pooled buffer never leaks one entry into another: entries
// encoded one after the other, large then small, are each exact.
func TestEncodeReusesNoBytes(t *testing.T) {
	big := &EvalStatusUpdateRequest{}
	for i := range 2000 {
		big.Evals = append(big.Evals, &state.Evaluation{ID: strconv.Itoa(i), Namespace: "default", Status: "complete"})
	}
	first, err := Encode(EvalStatusUpdateRequestType, big)
	if err != nil {
		t.Fatal(err)
	}
	keep := string(first)
	small, err := Encode(EvalStatusUpdateRequestType, &EvalStatusUpdateRequest{Evals: []*state.Evaluation{{ID: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != keep {
		t.Fatal("a later Encode changed an earlier entry")
	}
	var out EvalStatusUpdateRequest
	if err := Decode(small[1:], &out); err != nil || len(out.Evals) != 1 || out.Evals[0].ID != "x" {
		t.Errorf("small entry: %v %+v", err, out)
	}
}
