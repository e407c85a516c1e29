package client

import "strings"

// The environment under Nomad's names. A task gets every SCHED_* variable
// twice: as SCHED_<name> and as NOMAD_<name>, with the same value, so a
// Nomad jobspec that reads ${NOMAD_PORT_http}, ${NOMAD_META_x} or
// ${NOMAD_TASK_DIR} (in env, driver config, templates and service names)
// runs unchanged. The aliases are made from the SCHED_* names, so a
// variable added to buildEnv gets its Nomad name with no second list to
// keep.

const (
	schedEnvPrefix = "SCHED_"
	nomadEnvPrefix = "NOMAD_"
)

// withNomadNames sets NOMAD_<name> for every SCHED_<name> of env, in
// place, and returns env. A NOMAD_ name env already holds is kept: what
// the caller set explicitly wins over an alias.
func withNomadNames(env map[string]string) map[string]string {
	aliases := make(map[string]string, len(env))
	for k, v := range env {
		if rest, ok := strings.CutPrefix(k, schedEnvPrefix); ok {
			aliases[nomadEnvPrefix+rest] = v
		}
	}
	for k, v := range aliases {
		if _, set := env[k]; !set {
			env[k] = v
		}
	}
	return env
}
