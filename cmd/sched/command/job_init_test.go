package command

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/jobspec"
)

// `sched job init` and `-short` write a docker service with a mapped
// port, a checked service and resources that parses and validates as
// written; an existing file is left alone.
func TestJobInit(t *testing.T) {
	for _, short := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "example.sched.hcl")
		args := []string{"job", "init", path}
		if short {
			args = []string{"job", "init", "-short", path}
		}
		runCLI(t, nil, runOpts{}, args...).check(t, 0, "Example job file written to "+path+"\n", "")
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		job, err := jobspec.Parse(jobspec.ParseConfig{Filename: path, Body: body})
		if err != nil {
			t.Fatalf("short=%v: the example does not parse: %v", short, err)
		}
		if msgs := localValidation(job); len(msgs) > 0 {
			t.Fatalf("short=%v: the example does not validate: %v", short, msgs)
		}
		tg := job.TaskGroups[0]
		task := tg.Tasks[0]
		if task.Driver != "docker" || task.Config["image"] == nil || task.Resources == nil || task.Resources.MemoryMB != 128 {
			t.Fatalf("short=%v: task %+v", short, task)
		}
		if len(tg.Networks) != 1 || len(tg.Networks[0].DynamicPorts) != 1 || tg.Networks[0].DynamicPorts[0].To != 80 {
			t.Fatalf("short=%v: network %+v", short, tg.Networks)
		}
		if len(tg.Services) != 1 || len(tg.Services[0].Checks) != 1 || tg.Services[0].PortLabel != "http" {
			t.Fatalf("short=%v: services %+v", short, tg.Services)
		}
		if !short && (job.Update == nil || job.Update.MaxParallel != 1 || job.Type != state.JobTypeService) {
			t.Fatalf("update %+v type %q", job.Update, job.Type)
		}
		f := newFakeAPI(t)
		f.on("PUT", "/v1/validate/job", reply(0, state.JobValidateResponse{DriverConfigValidated: true, ValidationErrors: []string{}}))
		runCLI(t, f, runOpts{}, "job", "validate", path).check(t, 0, "Job validation successful\n", "")

		// A second init leaves the file alone.
		if err := os.WriteFile(path, []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		runCLI(t, nil, runOpts{}, args...).check(t, 1, "", "Error writing example job: "+path+" already exists: remove it or name another file\n")
		if b, _ := os.ReadFile(path); string(b) != "mine" {
			t.Fatalf("the existing file was changed: %q", b)
		}
	}
	runCLI(t, nil, runOpts{}, "job", "init", "a", "b").check(t, 1, "",
		"This command takes 0 to 1 arguments, got 2\n"+initUsage(t))
}

// initUsage is job init's usage text, as -h prints it.
func initUsage(t *testing.T) string {
	t.Helper()
	return runCLI(t, nil, runOpts{}, "job", "init", "-h").stderr
}
