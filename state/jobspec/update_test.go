package jobspec

import (
	"testing"

	"github.com/schedhq/sched/state"
)

// TestUpdateMaxParallelDefault checks Nomad's default: an update block
// that does not set max_parallel gets 1 (in a group, the job block's),
// and only an explicit 0 turns deployments off.
func TestUpdateMaxParallelDefault(t *testing.T) {
	tests := []struct {
		name, job, group string
		wantJob, wantGrp int
	}{
		{name: "job block without", job: "update {\n canary = 1\n}", wantJob: 1, wantGrp: -1},
		{name: "group block without", group: "update {\n auto_revert = true\n}", wantJob: -1, wantGrp: 1},
		{name: "group inherits the job's", job: "update {\n max_parallel = 3\n}", group: "update {\n canary = 1\n}", wantJob: 3, wantGrp: 3},
		{name: "explicit zero", group: "update {\n max_parallel = 0\n}", wantJob: -1, wantGrp: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "job \"j\" {\n" + tt.job + "\n  group \"g\" {\n" + tt.group + "\n  }\n}\n"
			for _, parse := range []func() (job any, jobMax, grpMax int, err error){
				func() (any, int, int, error) {
					j, err := Parse(ParseConfig{Body: []byte(src)})
					return maxParallels(j, err)
				},
				func() (any, int, int, error) { j, err := ParseHCL1("j.hcl", []byte(src)); return maxParallels(j, err) },
			} {
				_, jm, gm, err := parse()
				if err != nil {
					t.Fatal(err)
				}
				if jm != tt.wantJob || gm != tt.wantGrp {
					t.Errorf("max_parallel job %d group %d, want %d and %d (-1: no block)", jm, gm, tt.wantJob, tt.wantGrp)
				}
			}
		})
	}
}

func maxParallels(j *state.Job, err error) (any, int, int, error) {
	if err != nil {
		return nil, 0, 0, err
	}
	jm, gm := -1, -1
	if j.Update != nil {
		jm = j.Update.MaxParallel
	}
	if u := j.TaskGroups[0].Update; u != nil {
		gm = u.MaxParallel
	}
	return j, jm, gm, nil
}
