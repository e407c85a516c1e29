package jobspec

import (
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// TestRescheduleJobAndGroupBlocks: a job-level reschedule block applies to
// every group without one, and a group's block sets its attributes over
// the job's (Nomad's merge), in both syntaxes; the block that has no job
// block above it sets its attributes over the job type's defaults (a
// service job's is unlimited), as Nomad merges a block over them.
func TestRescheduleJobAndGroupBlocks(t *testing.T) {
	off := &state.ReschedulePolicy{}
	tests := []struct {
		name, job, group string
		want             *state.ReschedulePolicy
	}{
		{name: "none", want: nil},
		{name: "job block only", job: "reschedule {\n attempts = 0\n unlimited = false\n}", want: off},
		{name: "group block only", group: "reschedule {\n attempts = 0\n unlimited = false\n}", want: off},
		{name: "group over job", job: "reschedule {\n attempts = 3\n interval = \"1h\"\n delay = \"5s\"\n}",
			group: "reschedule {\n attempts = 1\n}",
			want:  &state.ReschedulePolicy{Attempts: 1, Interval: time.Hour, Delay: 5 * time.Second, Unlimited: true}},
		{name: "partial group block", group: "reschedule {\n delay = \"1m\"\n}",
			want: &state.ReschedulePolicy{Delay: time.Minute, Unlimited: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "job \"j\" {\n" + tt.job + "\n  group \"g\" {\n" + tt.group + "\n  }\n  group \"h\" {\n  }\n}\n"
			hcl2, err := Parse(ParseConfig{Body: []byte(src)})
			if err != nil {
				t.Fatal(err)
			}
			hcl1, err := ParseHCL1("j.hcl", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range []*state.Job{hcl2, hcl1} {
				assertEqual(t, tt.want, j.TaskGroups[0].ReschedulePolicy)
				// The other group has no block: the job's, or none.
				wantOther := tt.want
				if tt.job == "" {
					wantOther = nil
				} else if tt.group != "" {
					wantOther = &state.ReschedulePolicy{Attempts: 3, Interval: time.Hour, Delay: 5 * time.Second, Unlimited: true}
				}
				assertEqual(t, wantOther, j.TaskGroups[1].ReschedulePolicy)
			}
			if hcl2.TaskGroups[1].ReschedulePolicy != nil && hcl2.TaskGroups[1].ReschedulePolicy == hcl2.TaskGroups[0].ReschedulePolicy {
				t.Error("two groups share one policy")
			}
		})
	}
}

// TestReschedulePartialBlockOfBatchJob: a batch job's block that sets only
// the delay keeps the batch defaults for the rest: one attempt in 24h.
func TestReschedulePartialBlockOfBatchJob(t *testing.T) {
	src := "job \"j\" {\n type = \"batch\"\n group \"g\" {\n reschedule {\n delay = \"1m\"\n }\n }\n}\n"
	j, err := Parse(ParseConfig{Body: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	assertEqual(t, &state.ReschedulePolicy{Attempts: 1, Interval: 24 * time.Hour, Delay: time.Minute}, j.TaskGroups[0].ReschedulePolicy)
}
