package state

// ClientHostVolumeConfig is a directory of a node that jobs may mount by
// name: a client's `host_volume "name" { path, read_only }`, fingerprinted
// onto Node.HostVolumes. A group's `volume` of type "host" names it as its
// Source; the scheduler places the group only on nodes that have it (and,
// for a read-write request, have it read-write).
type ClientHostVolumeConfig struct {
	Name     string
	Path     string
	ReadOnly bool
}

// Copy returns a copy of v.
func (v *ClientHostVolumeConfig) Copy() *ClientHostVolumeConfig { return ClonePtr(v) }

// VolumeTypeHost is the Type of a VolumeRequest for a host volume.
const VolumeTypeHost = "host"
