package state

import (
	"encoding/json"
	"testing"
)

// TestJobJSONMaxParallel checks that a JSON job means what the same job file
// means once canonicalized: an update block without MaxParallel (or with
// null) gets 1, a group's gets the job block's, and only an explicit 0
// turns deployments off.
func TestJobJSONMaxParallel(t *testing.T) {
	tests := []struct {
		name, job, group string
		wantJob, wantGrp int // -2: no block
	}{
		{name: "no blocks", wantJob: -2, wantGrp: -2},
		{name: "job block without", job: `"Update": {"Canary": 1},`, wantJob: 1, wantGrp: 1},
		{name: "job block with null", job: `"Update": {"MaxParallel": null},`, wantJob: 1, wantGrp: 1},
		{name: "group block without", group: `"Update": {"AutoRevert": true},`, wantJob: -2, wantGrp: 1},
		{name: "group inherits the job's", job: `"Update": {"MaxParallel": 3},`, group: `"Update": {"Canary": 1},`, wantJob: 3, wantGrp: 3},
		{name: "group overrides the job's", job: `"Update": {"MaxParallel": 3},`, group: `"Update": {"MaxParallel": 2},`, wantJob: 3, wantGrp: 2},
		{name: "explicit zero in the job", job: `"Update": {"MaxParallel": 0},`, wantJob: 0, wantGrp: 0},
		{name: "explicit zero in a group", group: `"Update": {"MaxParallel": 0},`, wantJob: -2, wantGrp: 0},
		{name: "lower-case key", job: `"Update": {"maxparallel": 0},`, wantJob: 0, wantGrp: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `{"ID": "j", "Type": "batch", ` + tt.job + `"TaskGroups": [{"Name": "g", ` + tt.group + `"Tasks": []}]}`
			var j Job
			if err := json.Unmarshal([]byte(doc), &j); err != nil {
				t.Fatal(err)
			}
			// The CLI decodes a JSON job file and sends it on: the
			// decision must survive that.
			b, err := json.Marshal(&j)
			if err != nil {
				t.Fatal(err)
			}
			j = Job{}
			if err := json.Unmarshal(b, &j); err != nil {
				t.Fatal(err)
			}
			j.Canonicalize()
			jm, gm := -2, -2
			if j.Update != nil {
				jm = j.Update.MaxParallel
			}
			if u := j.TaskGroups[0].Update; u != nil {
				gm = u.MaxParallel
			}
			if jm != tt.wantJob || gm != tt.wantGrp {
				t.Errorf("MaxParallel job %d group %d, want %d and %d (-2: no block)", jm, gm, tt.wantJob, tt.wantGrp)
			}
		})
	}
}

// TestJobJSONRoundTrip checks that a job read back from the API and sent
// again keeps its MaxParallel, including 0.
func TestJobJSONRoundTrip(t *testing.T) {
	in := Job{ID: "j", Update: &UpdateStrategy{MaxParallel: 0, Canary: 1},
		TaskGroups: []*TaskGroup{{Name: "g", Count: 2, Update: &UpdateStrategy{MaxParallel: 4}}}}
	b, err := json.Marshal(&in)
	if err != nil {
		t.Fatal(err)
	}
	var out Job
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Update.MaxParallel != 0 || out.TaskGroups[0].Update.MaxParallel != 4 || out.TaskGroups[0].Count != 2 {
		t.Errorf("round trip: job %d group %d count %d, want 0, 4, 2",
			out.Update.MaxParallel, out.TaskGroups[0].Update.MaxParallel, out.TaskGroups[0].Count)
	}
}

// TestEnabledDefaultsTrueInJSON: a periodic or scaling block without
// Enabled (as Nomad's client sends it) is enabled; an explicit false is
// kept.
func TestEnabledDefaultsTrueInJSON(t *testing.T) {
	var p PeriodicConfig
	if err := json.Unmarshal([]byte(`{"Spec":"@daily"}`), &p); err != nil || !p.Enabled || p.Spec != "@daily" {
		t.Errorf("periodic without Enabled: %+v, %v", p, err)
	}
	if err := json.Unmarshal([]byte(`{"Spec":"@daily","Enabled":false}`), &p); err != nil || p.Enabled {
		t.Errorf("periodic with Enabled false: %+v, %v", p, err)
	}
	var s ScalingPolicy
	if err := json.Unmarshal([]byte(`{"Max":3,"Enabled":null}`), &s); err != nil || !s.Enabled || s.Max != 3 {
		t.Errorf("scaling with null Enabled: %+v, %v", s, err)
	}
	if err := json.Unmarshal([]byte(`{"Max":3,"Enabled":false}`), &s); err != nil || s.Enabled {
		t.Errorf("scaling with Enabled false: %+v, %v", s, err)
	}
}
