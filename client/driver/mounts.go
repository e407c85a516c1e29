package driver

import (
	"maps"
	"strings"
)

// MountConfig is a directory of the node bound into a task: a host volume
// its group requested (`volume "x" { type = "host" }`) and the task mounts
// (`volume_mount`). The client resolves them (client.ResolveVolumeMounts)
// before a start, so a driver gets host paths it may trust.
type MountConfig struct {
	// Volume is the group's name of the volume.
	Volume string
	// HostPath is the directory on the node (the host_volume's path).
	HostPath string
	// TaskPath is where the task sees it: the volume_mount's
	// destination, an absolute path inside the task's root for drivers
	// that give the task a root of its own (exec, docker).
	TaskPath string
	// ReadOnly: the task may not write to it (the host volume, the
	// group's request or the mount says so).
	ReadOnly bool
}

// VolumeEnvPrefix starts the variables that tell a task without a root
// of its own (raw_exec) where its volumes are on the node:
// SCHED_HOST_VOLUME_<volume>=<host path>, the volume's name with every
// byte other than a letter, a digit or '_' replaced by '_'.
const VolumeEnvPrefix = "SCHED_HOST_VOLUME_"

// withVolumeEnv returns env plus a VolumeEnvPrefix variable per mount;
// env itself is not changed.
func withVolumeEnv(env map[string]string, mounts []*MountConfig) map[string]string {
	if len(mounts) == 0 {
		return env
	}
	out := maps.Clone(env)
	if out == nil {
		out = map[string]string{}
	}
	for _, m := range mounts {
		out[VolumeEnvPrefix+envName(m.Volume)] = m.HostPath
	}
	return out
}

// envName makes s usable in a variable's name.
func envName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}
