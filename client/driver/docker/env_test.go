package docker

import (
	"slices"
	"testing"
)

// The container sees its directories and mapped ports at their container
// values under both the SCHED_ and the NOMAD_ names.
func TestContainerEnvNomadNames(t *testing.T) {
	env := map[string]string{"SCHED_TASK_DIR": "/host/t/local", "NOMAD_TASK_DIR": "/host/t/local", "KEEP": "x",
		"SCHED_PORT_http": "23456", "NOMAD_PORT_http": "23456"}
	got := containerEnv(env, []boundPort{{Label: "http", Host: 23456, Container: 8080}})
	for _, want := range []string{"KEEP=x",
		"SCHED_TASK_DIR=" + mountTargetLocal, "NOMAD_TASK_DIR=" + mountTargetLocal,
		"SCHED_ALLOC_DIR=" + mountTargetAlloc, "NOMAD_ALLOC_DIR=" + mountTargetAlloc,
		"SCHED_SECRETS_DIR=" + mountTargetSecrets, "NOMAD_SECRETS_DIR=" + mountTargetSecrets,
		"SCHED_PORT_http=8080", "NOMAD_PORT_http=8080"} {
		if !slices.Contains(got, want) {
			t.Errorf("container env lacks %s: %v", want, got)
		}
	}
}
