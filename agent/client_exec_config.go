package agent

import (
	"fmt"
	"maps"
	"path"
	"slices"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/state"
)

// ExecConfig is the client block's exec block, the isolated exec driver:
//
//	exec {
//	  enabled       = true        # healthy only on a root client with cgroups
//	  chroot_env    = { "/bin" = "/bin", "/etc" = "/etc", "/lib" = "/lib", "/lib32" = "/lib32",
//	                    "/lib64" = "/lib64", "/run/resolvconf" = "/run/resolvconf",
//	                    "/sbin" = "/sbin", "/usr" = "/usr" }   # host path = path in the task's root
//	  cgroup_parent = "/sched"    # tasks' cgroups: <parent>/<alloc id>.<task>
//	  pids_limit    = 4096        # processes and threads per task
//	  default_user  = "nobody"    # tasks naming no user, without a workload uid
//	  denied_users  = ["root"]
//	}
type ExecConfig struct {
	Enabled      bool
	ChrootEnv    map[string]string
	CgroupParent string
	PIDsLimit    int64
	DefaultUser  string
	DeniedUsers  []string
	// enabledSet and deniedSet record that a file set the keys whose
	// default is not the zero value.
	enabledSet, deniedSet bool
}

type fileExec struct {
	Enabled      *bool              `hcl:"enabled,optional"`
	ChrootEnv    *map[string]string `hcl:"chroot_env,optional"`
	CgroupParent *string            `hcl:"cgroup_parent,optional"`
	PIDsLimit    *int64             `hcl:"pids_limit,optional"`
	DefaultUser  *string            `hcl:"default_user,optional"`
	DeniedUsers  *[]string          `hcl:"denied_users,optional"`
}

// merge applies a config file's exec block over c.
func (c *ExecConfig) merge(f *fileExec) {
	if f == nil {
		return
	}
	if f.Enabled != nil {
		c.Enabled, c.enabledSet = *f.Enabled, true
	}
	if f.ChrootEnv != nil {
		c.ChrootEnv = maps.Clone(*f.ChrootEnv)
	}
	set(&c.CgroupParent, f.CgroupParent)
	set(&c.PIDsLimit, f.PIDsLimit)
	set(&c.DefaultUser, f.DefaultUser)
	if f.DeniedUsers != nil {
		c.DeniedUsers, c.deniedSet = slices.Clone(*f.DeniedUsers), true
	}
}

// Bounds of the exec block.
const (
	maxChrootEnv = 64
	maxPIDsLimit = 1 << 22
)

// finish fills the defaults and checks the block.
func (c *ExecConfig) finish() []error {
	if !c.enabledSet {
		c.Enabled, c.enabledSet = true, true
	}
	if !c.deniedSet {
		c.DeniedUsers, c.deniedSet = []string{"root"}, true
	}
	if c.ChrootEnv == nil {
		c.ChrootEnv = maps.Clone(driver.DefaultChrootEnv)
	}
	if c.CgroupParent == "" {
		c.CgroupParent = driver.DefaultCgroupParent
	}
	if c.PIDsLimit == 0 {
		c.PIDsLimit = driver.DefaultPIDsLimit
	}
	if c.DefaultUser == "" {
		c.DefaultUser = driver.DefaultExecUser
	}
	var errs []error
	if len(c.ChrootEnv) > maxChrootEnv {
		errs = append(errs, fmt.Errorf("client.exec.chroot_env: %d entries, more than %d", len(c.ChrootEnv), maxChrootEnv))
	}
	for _, src := range slices.Sorted(maps.Keys(c.ChrootEnv)) {
		dst := c.ChrootEnv[src]
		if !path.IsAbs(src) || !path.IsAbs(dst) || path.Clean(dst) == "/" {
			errs = append(errs, fmt.Errorf("client.exec.chroot_env: %q = %q: both must be absolute paths, and the root itself is the task directory", src, dst))
		}
	}
	if p := c.CgroupParent; !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
		errs = append(errs, fmt.Errorf("client.exec.cgroup_parent: %q is not an absolute path below the cgroup root, such as /sched", p))
	}
	if c.PIDsLimit < 0 || c.PIDsLimit > maxPIDsLimit {
		errs = append(errs, fmt.Errorf("client.exec.pids_limit: %d is not between 1 and %d", c.PIDsLimit, maxPIDsLimit))
	}
	return errs
}

// driver configures base as this block says.
func (c *ExecConfig) driver(base *driver.Exec) *driver.Exec {
	base.Disabled = !c.Enabled
	base.ChrootEnv, base.CgroupParent, base.PIDsLimit = maps.Clone(c.ChrootEnv), c.CgroupParent, c.PIDsLimit
	base.DefaultUser, base.DeniedUsers = c.DefaultUser, slices.Clone(c.DeniedUsers)
	return base
}

// HostVolumeConfig is a client's host_volume block: a directory of the
// node that jobs mount by name.
//
//	host_volume "shared" {
//	  path      = "/srv/shared"   # an absolute path to a directory that exists
//	  read_only = false           # true: only read-only requests are placed here
//	}
type HostVolumeConfig struct {
	Path     string
	ReadOnly bool
}

type fileHostVolume struct {
	Name     string  `hcl:"name,label"`
	Path     *string `hcl:"path,optional"`
	ReadOnly *bool   `hcl:"read_only,optional"`
}

// mergeHostVolumes applies a file's host_volume blocks over vols, by
// name.
func mergeHostVolumes(vols *map[string]*HostVolumeConfig, fs []fileHostVolume) {
	for _, f := range fs {
		if *vols == nil {
			*vols = map[string]*HostVolumeConfig{}
		}
		cur := (*vols)[f.Name]
		if cur == nil {
			cur = &HostVolumeConfig{}
			(*vols)[f.Name] = cur
		}
		set(&cur.Path, f.Path)
		set(&cur.ReadOnly, f.ReadOnly)
	}
}

// checkHostVolumes checks the host_volume blocks: the client checks
// again, when it starts, that each path is a directory.
func checkHostVolumes(vols map[string]*HostVolumeConfig) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(vols)) {
		if p := vols[name].Path; !path.IsAbs(p) {
			errs = append(errs, fmt.Errorf("client.host_volume %q: path %q must be an absolute path", name, p))
		}
	}
	return errs
}

// hostVolumes is the client's HostVolumes.
func hostVolumes(vols map[string]*HostVolumeConfig) map[string]*state.ClientHostVolumeConfig {
	out := make(map[string]*state.ClientHostVolumeConfig, len(vols))
	for name, hv := range vols {
		out[name] = &state.ClientHostVolumeConfig{Name: name, Path: hv.Path, ReadOnly: hv.ReadOnly}
	}
	return out
}
