package scheduler

import "github.com/schedhq/sched/state"

// reasonHostVolumes is the filter reason of a node that lacks a host
// volume the group asks for, or has it only read-only where the group
// asks to write: Nomad's wording, which operators search for.
const reasonHostVolumes = "missing compatible host volumes"

// hostVolumesFit reports whether n has every host volume tg requests
// (VolumeRequest.Source among Node.HostVolumes), read-write where the
// request is not read-only. Host volumes are the node's own, not part of
// its computed class, so this runs per node and a group that requests one
// marks the eval's eligibility as escaped (a blocked eval cannot tell from
// a class whether a node helps).
func hostVolumesFit(n *state.Node, tg *state.TaskGroup) bool {
	for _, req := range tg.Volumes {
		if req == nil || req.Type != state.VolumeTypeHost {
			continue
		}
		hv := n.HostVolumes[req.Source]
		if hv == nil || hv.ReadOnly && !req.ReadOnly {
			return false
		}
	}
	return true
}

// requestsHostVolumes reports whether tg requests a host volume.
func requestsHostVolumes(tg *state.TaskGroup) bool {
	for _, req := range tg.Volumes {
		if req != nil && req.Type == state.VolumeTypeHost {
			return true
		}
	}
	return false
}
