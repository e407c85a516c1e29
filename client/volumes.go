package client

import (
	"errors"
	"fmt"
	"os"
	"path"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/state"
)

// ErrVolume: a task's volume_mount cannot be honoured on this node. The
// scheduler places a group only where its host volumes are (scheduler
// feasibility), so this is seen only when the node's volumes changed
// after the placement, or for a job the servers stored before they
// checked.
var ErrVolume = errors.New("volume mount")

// ResolveVolumeMounts turns task's volume_mounts into the host paths of
// the node's host volumes, for drivers to bind (driver.TaskConfig.Mounts):
// each mount names a volume of the group (tg.Volumes) of type host whose
// source is one of node.HostVolumes. A mount is read-only when the host
// volume, the group's request or the mount says so; a read-write request
// of a read-only host volume is refused. The error wraps ErrVolume and
// names the mount. node may be nil (no volumes).
func ResolveVolumeMounts(node *state.Node, tg *state.TaskGroup, task *state.Task) ([]*driver.MountConfig, error) {
	if len(task.VolumeMounts) == 0 {
		return nil, nil
	}
	out := make([]*driver.MountConfig, 0, len(task.VolumeMounts))
	for i, m := range task.VolumeMounts {
		if m == nil {
			return nil, fmt.Errorf("%w %d of task %q is empty", ErrVolume, i, task.Name)
		}
		var req *state.VolumeRequest
		if tg != nil {
			req = tg.Volumes[m.Volume]
		}
		switch {
		case req == nil:
			return nil, fmt.Errorf("%w of task %q: volume %q is not declared by group", ErrVolume, task.Name, m.Volume)
		case req.Type != state.VolumeTypeHost:
			return nil, fmt.Errorf("%w of task %q: volume %q has type %q; this client mounts only host volumes", ErrVolume, task.Name, m.Volume, req.Type)
		case m.Destination == "" || !path.IsAbs(path.Clean("/"+m.Destination)):
			return nil, fmt.Errorf("%w of task %q: volume %q has no destination", ErrVolume, task.Name, m.Volume)
		}
		var hv *state.ClientHostVolumeConfig
		if node != nil {
			hv = node.HostVolumes[req.Source]
		}
		if hv == nil {
			return nil, fmt.Errorf("%w of task %q: volume %q asks for host volume %q, which this node does not have", ErrVolume, task.Name, m.Volume, req.Source)
		}
		if hv.ReadOnly && !req.ReadOnly && !m.ReadOnly {
			return nil, fmt.Errorf("%w of task %q: host volume %q is read-only on this node and volume %q asks to write to it (set read_only)", ErrVolume, task.Name, req.Source, m.Volume)
		}
		out = append(out, &driver.MountConfig{
			Volume: m.Volume, HostPath: hv.Path,
			// A destination is inside the task's root whatever it says:
			// "../x" is "/x".
			TaskPath: path.Clean("/" + m.Destination),
			ReadOnly: hv.ReadOnly || req.ReadOnly || m.ReadOnly,
		})
	}
	return out, nil
}

// networkMode is the mode of the group's first network, "" when it has
// none.
func networkMode(tg *state.TaskGroup) string {
	if tg == nil || len(tg.Networks) == 0 || tg.Networks[0] == nil {
		return ""
	}
	return tg.Networks[0].Mode
}

// MaxHostVolumes bounds the host volumes of one client.
const MaxHostVolumes = 256

// checkHostVolumes checks the client's host volumes: a name, an absolute
// path to a directory that exists.
func checkHostVolumes(vols map[string]*state.ClientHostVolumeConfig) []error {
	var errs []error
	if len(vols) > MaxHostVolumes {
		return []error{fmt.Errorf("client: %d host volumes, more than %d", len(vols), MaxHostVolumes)}
	}
	for name, hv := range vols {
		switch {
		case name == "" || len(name) > 128:
			errs = append(errs, fmt.Errorf("client: host_volume name %q must be 1 to 128 bytes", name))
		case hv == nil:
			errs = append(errs, fmt.Errorf("client: host_volume %q is empty", name))
		case !path.IsAbs(hv.Path) || len(hv.Path) > 4096:
			errs = append(errs, fmt.Errorf("client: host_volume %q: path %q is not an absolute path", name, hv.Path))
		default:
			info, err := os.Stat(hv.Path)
			if err != nil {
				errs = append(errs, fmt.Errorf("client: host_volume %q: %w", name, err))
			} else if !info.IsDir() {
				errs = append(errs, fmt.Errorf("client: host_volume %q: path %q is not a directory", name, hv.Path))
			}
		}
	}
	return errs
}

// hostVolumes is the node's HostVolumes: a copy of the config's, each
// named by its key.
func hostVolumes(vols map[string]*state.ClientHostVolumeConfig) map[string]*state.ClientHostVolumeConfig {
	if len(vols) == 0 {
		return nil
	}
	out := make(map[string]*state.ClientHostVolumeConfig, len(vols))
	for name, hv := range vols {
		cp := *hv
		cp.Name = name
		out[name] = &cp
	}
	return out
}
