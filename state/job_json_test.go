package state

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
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

// TestJobJSONReschedulePartial checks that a JSON reschedule block is set
// over the job type's defaults, as Nomad's API merges it: members left out
// (or null) take the default, explicit ones (zeros included) stay, and the
// decision survives the CLI's decode and re-encode of a JSON job file.
func TestJobJSONReschedulePartial(t *testing.T) {
	tests := []struct {
		name, typ, block string
		attempts         int
		interval         time.Duration
		unlimited        bool
	}{
		{name: "service delay only", typ: "service", block: `{"Delay": 10000000000}`, unlimited: true},
		{name: "service nulls", typ: "service", block: `{"Attempts": null, "Interval": null, "Unlimited": null}`, unlimited: true},
		{name: "batch delay only", typ: "batch", block: `{"Delay": 10000000000}`, attempts: 1, interval: 24 * time.Hour},
		{name: "batch attempts only", typ: "batch", block: `{"Attempts": 3}`, attempts: 3, interval: 24 * time.Hour},
		{name: "service turned off", typ: "service", block: `{"Attempts": 0, "Unlimited": false}`},
		{name: "batch interval zero kept", typ: "batch", block: `{"Interval": 0}`, attempts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `{"ID": "j", "Type": "` + tt.typ + `", "TaskGroups": [{"Name": "g", "ReschedulePolicy": ` + tt.block + `, "Tasks": []}]}`
			var j Job
			if err := json.Unmarshal([]byte(doc), &j); err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(&j)
			if err != nil {
				t.Fatal(err)
			}
			j = Job{}
			if err := json.Unmarshal(b, &j); err != nil {
				t.Fatal(err)
			}
			j.Canonicalize()
			rp := j.TaskGroups[0].ReschedulePolicy
			if rp.Attempts != tt.attempts || rp.Interval != tt.interval || rp.Unlimited != tt.unlimited {
				t.Errorf("got attempts %d interval %v unlimited %v, want %d %v %v", rp.Attempts, rp.Interval, rp.Unlimited, tt.attempts, tt.interval, tt.unlimited)
			}
			if rp.Delay != 10*time.Second && tt.block == `{"Delay": 10000000000}` {
				t.Errorf("delay %v, want 10s", rp.Delay)
			}
			if rp.unset != 0 {
				t.Errorf("canonicalized policy still marks %b unset", rp.unset)
			}
			// A canonicalized job encodes every member.
			out, err := json.Marshal(rp)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(out, []byte("null")) {
				t.Errorf("canonicalized policy encodes nulls: %s", out)
			}
		})
	}
}
