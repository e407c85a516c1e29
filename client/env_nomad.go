package client

// The environment under Nomad's names. A task gets every SCHED_* variable
// twice: as SCHED_<name> and as NOMAD_<name>, with the same value, so a
// Nomad jobspec that reads ${NOMAD_PORT_http}, ${NOMAD_META_x} or
// ${NOMAD_TASK_DIR} (in env, driver config, templates and service names)
// runs unchanged. buildEnv sets both names of each variable at once
// (TestBuildEnvNomadNames checks that none lacks its twin); a NOMAD_*
// name the task's env block sets wins over the alias.

const (
	schedEnvPrefix = "SCHED_"
	nomadEnvPrefix = "NOMAD_"
)
