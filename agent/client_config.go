package agent

import (
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/schedhq/sched/client/workloaduser"
	"github.com/schedhq/sched/scheduler"
)

// ClientConfig configures the client role: the node this agent runs
// allocations on.
//
//	client {
//	  enabled           = true
//	  servers           = ["10.0.0.1:4646", "10.0.0.2:4646"]  # HTTP addresses
//	  node_class        = "web"
//	  node_pool         = "default"
//	  meta              = { rack = "r1" }
//	  network_interface = "eth0"
//	  max_kill_timeout  = "30s"
//	  gc_interval       = "1m"
//	  gc_max_allocs     = 50
//	  gc_alloc_age      = "1h"
//	  driver_fingerprint_interval = "30s"  # 1s to 1h
//	  server_rebalance_interval   = "5m"   # 10s to 24h
//	  fs_max_reads_per_alloc = 32  # file system and log reads served at once
//	  fs_max_reads           = 256
//	  intro_token       = "<secret of a token with node:write>"
//	  raw_exec { enabled = true, default_user = "nobody", denied_users = ["root"] }
//	  users { dynamic = true, dynamic_user_min = 80000, dynamic_user_max = 89999 }
//	  reserved { cpu = 500, memory = 512, disk = 1024, reserved_ports = "22,80" }
//	  host_network "public" { cidr = "203.0.113.0/24", interface = "eth1", reserved_ports = "22" }
//	}
//
// The node's datacenter and region are the agent's.
type ClientConfig struct {
	Enabled bool
	// Servers are the servers' HTTP addresses ("host:port" or URLs); the
	// client fails over between them. Empty on an agent that is also a
	// server (and in -dev) means the agent's own HTTP address.
	Servers   []string
	NodeClass string
	NodePool  string
	Meta      map[string]string
	// NetworkInterface names the interface whose address ports get;
	// empty means the advertised HTTP address's host.
	NetworkInterface string
	Reserved         ReservedConfig
	HostNetworks     map[string]*HostNetworkConfig
	// MaxKillTimeout caps every task's kill_timeout. Default 30s.
	MaxKillTimeout time.Duration
	// GCInterval, GCMaxAllocs and GCAllocAge govern how long finished
	// allocations (their directories and logs) are kept: checked every
	// GCInterval (1m), kept at most GCAllocAge (1h), never more than
	// GCMaxAllocs (50) of them.
	GCInterval  time.Duration
	GCMaxAllocs int
	GCAllocAge  time.Duration
	// DriverFingerprintInterval is how often the client asks its drivers
	// again whether they are detected and healthy (a docker engine that
	// went away or came back changes the node). Zero means the client's
	// default (client.DefaultDriverFingerprintInterval, 30s); set, it is
	// 1s to 1h.
	DriverFingerprintInterval time.Duration
	// ServerRebalanceInterval is how often the client shuffles its
	// servers list again and moves to the new first server at its next
	// request (plus up to half as much jitter), so clients spread over the
	// servers again after a rolling restart. Zero means the client's
	// default (client.DefaultServerRebalanceInterval, 5m); set, it is
	// 10s to 24h.
	ServerRebalanceInterval time.Duration
	// FSMaxReadsPerAlloc and FSMaxReads cap the file system and log
	// reads (/v1/client/fs/*) the agent serves at once, for one
	// allocation (default 32) and in all (256); one more is a 429.
	FSMaxReadsPerAlloc int
	FSMaxReads         int
	// IntroToken is the secret of an ACL token with node:write that
	// introduces this node to servers with ACLs on (a new node cannot
	// register with a secret of its own choosing). Empty on an agent that
	// is also a server means a local secret of the agent's own.
	IntroToken string
	// RawExec is what the raw_exec driver may do on this node.
	RawExec RawExecConfig
	// Exec is the isolated exec driver's block, HostVolumes the
	// host_volume blocks (client_exec_config.go).
	Exec        ExecConfig
	HostVolumes map[string]*HostVolumeConfig
	// Docker is the docker driver's block (client_docker_config.go).
	Docker DockerConfig
	// Users is the workload uids the node gives its allocations.
	Users UsersConfig
	// BridgeNetworkName and BridgeNetworkSubnet are the host bridge of
	// exec tasks in network mode bridge (default sched0 on
	// 172.26.96.0/20; client/network.go).
	BridgeNetworkName   string
	BridgeNetworkSubnet string
}

// UsersConfig is the client block's users block:
//
//	users {
//	  dynamic          = true    # a uid of its own per allocation, on a root client. -dev: false
//	  dynamic_user_min = 80000
//	  dynamic_user_max = 89999
//	}
//
// With dynamic on, a root client gives each allocation a uid (and a gid of
// the same number) of that range: its tasks that name no user run as it,
// instead of raw_exec's default_user, and only it may enter the
// allocation's directory, so one allocation's tasks cannot signal or read
// another's. The range's uids need not exist in /etc/passwd and must not
// be any real user's. A client that is not root runs every task as its
// own user, as before.
type UsersConfig struct {
	Dynamic                        bool
	DynamicUserMin, DynamicUserMax int
	// dynamicSet records that a file (or -dev) set dynamic.
	dynamicSet bool
}

type fileUsers struct {
	Dynamic        *bool `hcl:"dynamic,optional"`
	DynamicUserMin *int  `hcl:"dynamic_user_min,optional"`
	DynamicUserMax *int  `hcl:"dynamic_user_max,optional"`
}

// merge applies a config file's users block over u.
func (u *UsersConfig) merge(f *fileUsers) {
	if f == nil {
		return
	}
	if f.Dynamic != nil {
		u.Dynamic, u.dynamicSet = *f.Dynamic, true
	}
	set(&u.DynamicUserMin, f.DynamicUserMin)
	set(&u.DynamicUserMax, f.DynamicUserMax)
}

// devUsers is -dev's users block: tasks run as the user who runs the
// agent, as -dev's raw_exec says.
func devUsers() UsersConfig { return UsersConfig{dynamicSet: true} }

// finish fills the keys left unset and checks the range.
func (u *UsersConfig) finish() []error {
	if !u.dynamicSet {
		u.Dynamic, u.dynamicSet = true, true
	}
	if u.DynamicUserMin == 0 {
		u.DynamicUserMin = int(workloaduser.DefaultMin)
	}
	if u.DynamicUserMax == 0 {
		u.DynamicUserMax = int(workloaduser.DefaultMax)
	}
	if !u.Dynamic {
		return nil
	}
	var errs []error
	for name, v := range map[string]int{"dynamic_user_min": u.DynamicUserMin, "dynamic_user_max": u.DynamicUserMax} {
		if v < 1 || int64(v) > math.MaxUint32-1 {
			errs = append(errs, fmt.Errorf("client.users.%s: %d is not a uid above 0 (root)", name, v))
		}
	}
	if len(errs) == 0 && u.DynamicUserMax < u.DynamicUserMin {
		errs = append(errs, fmt.Errorf("client.users: dynamic_user_max %d is below dynamic_user_min %d", u.DynamicUserMax, u.DynamicUserMin))
	}
	return errs
}

// Range is the workload uids a client hands out; the zero Range (off)
// when dynamic is off.
func (u UsersConfig) Range() workloaduser.Range {
	if !u.Dynamic {
		return workloaduser.Range{}
	}
	return workloaduser.Range{Min: uint32(u.DynamicUserMin), Max: uint32(u.DynamicUserMax)}
}

// RawExecConfig is the client block's raw_exec block:
//
//	raw_exec {
//	  enabled      = false      # -dev: true
//	  default_user = "nobody"   # tasks naming no user, on a root client; "": the client's user. -dev: ""
//	  denied_users = ["root"]   # -dev: []
//	}
//
// raw_exec runs tasks without isolation, as the client's user unless told
// otherwise: off unless enabled, and on a root client never as root.
type RawExecConfig struct {
	Enabled     bool
	DefaultUser string
	DeniedUsers []string
	// userSet and deniedSet record that a file (or -dev) set the keys,
	// so that finish fills only the ones left unset.
	userSet, deniedSet bool
}

// Defaults of RawExecConfig outside -dev.
const DefaultRawExecUser = "nobody"

// DefaultRawExecDeniedUsers is the deny list outside -dev.
var DefaultRawExecDeniedUsers = []string{"root"}

type fileRawExec struct {
	Enabled     *bool     `hcl:"enabled,optional"`
	DefaultUser *string   `hcl:"default_user,optional"`
	DeniedUsers *[]string `hcl:"denied_users,optional"`
}

// merge applies a config file's raw_exec block over r.
func (r *RawExecConfig) merge(f *fileRawExec) {
	if f == nil {
		return
	}
	set(&r.Enabled, f.Enabled)
	if f.DefaultUser != nil {
		r.DefaultUser, r.userSet = *f.DefaultUser, true
	}
	if f.DeniedUsers != nil {
		r.DeniedUsers, r.deniedSet = *f.DeniedUsers, true
	}
}

// devRawExec is -dev's raw_exec: on, as the user who runs the agent.
func devRawExec() RawExecConfig {
	return RawExecConfig{Enabled: true, DeniedUsers: []string{}, userSet: true, deniedSet: true}
}

// finish fills the keys left unset.
func (r *RawExecConfig) finish() {
	if !r.userSet {
		r.DefaultUser, r.userSet = DefaultRawExecUser, true
	}
	if !r.deniedSet {
		r.DeniedUsers, r.deniedSet = slices.Clone(DefaultRawExecDeniedUsers), true
	}
}

// ReservedConfig is node capacity held back from scheduling.
type ReservedConfig struct {
	CPU           int
	MemoryMB      int
	DiskMB        int
	ReservedPorts string
}

// HostNetworkConfig is a named network ports may bind to.
type HostNetworkConfig struct {
	CIDR          string
	Interface     string
	ReservedPorts string
}

type fileClient struct {
	Enabled          *bool              `hcl:"enabled,optional"`
	Servers          *[]string          `hcl:"servers,optional"`
	NodeClass        *string            `hcl:"node_class,optional"`
	NodePool         *string            `hcl:"node_pool,optional"`
	Meta             *map[string]string `hcl:"meta,optional"`
	NetworkInterface *string            `hcl:"network_interface,optional"`
	MaxKillTimeout   *string            `hcl:"max_kill_timeout,optional"`
	GCInterval       *string            `hcl:"gc_interval,optional"`
	GCMaxAllocs      *int               `hcl:"gc_max_allocs,optional"`
	GCAllocAge       *string            `hcl:"gc_alloc_age,optional"`
	DriverFPInterval *string            `hcl:"driver_fingerprint_interval,optional"`
	RebalanceEvery   *string            `hcl:"server_rebalance_interval,optional"`
	IntroToken       *string            `hcl:"intro_token,optional"`
	RawExec          *fileRawExec       `hcl:"raw_exec,block"`
	Exec             *fileExec          `hcl:"exec,block"`
	HostVolumes      []fileHostVolume   `hcl:"host_volume,block"`
	Docker           *fileDocker        `hcl:"docker,block"`
	Users            *fileUsers         `hcl:"users,block"`
	Reserved         *fileReserved      `hcl:"reserved,block"`
	HostNetworks     []fileHostNetwork  `hcl:"host_network,block"`

	FSMaxReadsPerAlloc *int `hcl:"fs_max_reads_per_alloc,optional"`
	FSMaxReads         *int `hcl:"fs_max_reads,optional"`

	BridgeNetworkName   *string `hcl:"bridge_network_name,optional"`
	BridgeNetworkSubnet *string `hcl:"bridge_network_subnet,optional"`
}

type fileReserved struct {
	CPU           *int    `hcl:"cpu,optional"`
	Memory        *int    `hcl:"memory,optional"`
	Disk          *int    `hcl:"disk,optional"`
	ReservedPorts *string `hcl:"reserved_ports,optional"`
}

type fileHostNetwork struct {
	Name          string  `hcl:"name,label"`
	CIDR          *string `hcl:"cidr,optional"`
	Interface     *string `hcl:"interface,optional"`
	ReservedPorts *string `hcl:"reserved_ports,optional"`
}

// merge applies a config file's client block over c: keys it sets
// replace, meta keys and host networks merge by name.
func (c *ClientConfig) merge(f *fileClient) error {
	set(&c.Enabled, f.Enabled)
	set(&c.Servers, f.Servers)
	set(&c.NodeClass, f.NodeClass)
	set(&c.NodePool, f.NodePool)
	set(&c.NetworkInterface, f.NetworkInterface)
	set(&c.GCMaxAllocs, f.GCMaxAllocs)
	set(&c.FSMaxReadsPerAlloc, f.FSMaxReadsPerAlloc)
	set(&c.FSMaxReads, f.FSMaxReads)
	set(&c.IntroToken, f.IntroToken)
	set(&c.BridgeNetworkName, f.BridgeNetworkName)
	set(&c.BridgeNetworkSubnet, f.BridgeNetworkSubnet)
	c.RawExec.merge(f.RawExec)
	c.Exec.merge(f.Exec)
	mergeHostVolumes(&c.HostVolumes, f.HostVolumes)
	if err := c.Docker.merge(f.Docker); err != nil {
		return err
	}
	c.Users.merge(f.Users)
	if f.Meta != nil {
		if c.Meta == nil {
			c.Meta = map[string]string{}
		}
		maps.Copy(c.Meta, *f.Meta)
	}
	for _, d := range []struct {
		name string
		src  *string
		dst  *time.Duration
	}{
		{"max_kill_timeout", f.MaxKillTimeout, &c.MaxKillTimeout},
		{"gc_interval", f.GCInterval, &c.GCInterval},
		{"gc_alloc_age", f.GCAllocAge, &c.GCAllocAge},
		{"driver_fingerprint_interval", f.DriverFPInterval, &c.DriverFingerprintInterval},
		{"server_rebalance_interval", f.RebalanceEvery, &c.ServerRebalanceInterval},
	} {
		if d.src == nil {
			continue
		}
		v, err := time.ParseDuration(*d.src)
		if err != nil {
			return fmt.Errorf("client.%s: %q is not a duration with units, such as 30s or 5m", d.name, *d.src)
		}
		*d.dst = v
	}
	if r := f.Reserved; r != nil {
		set(&c.Reserved.CPU, r.CPU)
		set(&c.Reserved.MemoryMB, r.Memory)
		set(&c.Reserved.DiskMB, r.Disk)
		set(&c.Reserved.ReservedPorts, r.ReservedPorts)
	}
	for _, hn := range f.HostNetworks {
		if c.HostNetworks == nil {
			c.HostNetworks = map[string]*HostNetworkConfig{}
		}
		cur := c.HostNetworks[hn.Name]
		if cur == nil {
			cur = &HostNetworkConfig{}
			c.HostNetworks[hn.Name] = cur
		}
		set(&cur.CIDR, hn.CIDR)
		set(&cur.Interface, hn.Interface)
		set(&cur.ReservedPorts, hn.ReservedPorts)
	}
	return nil
}

// Bounds of ClientConfig.DriverFingerprintInterval: each fingerprint asks
// every driver (the docker engine a ping and its version), so not more
// often than every second; and a node should not list a dead engine as
// healthy for more than an hour.
const (
	MinDriverFingerprintInterval = time.Second
	MaxDriverFingerprintInterval = time.Hour
)

// Bounds of ClientConfig.ServerRebalanceInterval: a move costs the client
// a new connection, so not more often than every 10s; and a day is long
// enough to mean "rarely".
const (
	MinServerRebalanceInterval = 10 * time.Second
	MaxServerRebalanceInterval = 24 * time.Hour
)

// finish checks the client block. A client-only agent must name its
// servers.
func (c *ClientConfig) finish(server bool) []error {
	if !c.Enabled {
		return nil
	}
	c.RawExec.finish()
	errs := c.Users.finish()
	errs = append(errs, c.Exec.finish()...)
	errs = append(errs, checkHostVolumes(c.HostVolumes)...)
	errs = append(errs, c.Docker.finish()...)
	if len(c.Servers) == 0 && !server {
		errs = append(errs, fmt.Errorf("client.servers: a client-only agent needs the servers' HTTP addresses"))
	}
	for i, s := range c.Servers {
		if strings.TrimSpace(s) == "" {
			errs = append(errs, fmt.Errorf("client.servers[%d]: empty address", i))
		}
	}
	for name, d := range map[string]time.Duration{"max_kill_timeout": c.MaxKillTimeout, "gc_interval": c.GCInterval, "gc_alloc_age": c.GCAllocAge} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("client.%s: must not be negative", name))
		}
	}
	if d := c.DriverFingerprintInterval; d != 0 && (d < MinDriverFingerprintInterval || d > MaxDriverFingerprintInterval) {
		errs = append(errs, fmt.Errorf("client.driver_fingerprint_interval: %v is not between %v and %v", d, MinDriverFingerprintInterval, MaxDriverFingerprintInterval))
	}
	if d := c.ServerRebalanceInterval; d != 0 && (d < MinServerRebalanceInterval || d > MaxServerRebalanceInterval) {
		errs = append(errs, fmt.Errorf("client.server_rebalance_interval: %v is not between %v and %v", d, MinServerRebalanceInterval, MaxServerRebalanceInterval))
	}
	if c.GCMaxAllocs < 0 {
		errs = append(errs, fmt.Errorf("client.gc_max_allocs: must not be negative"))
	}
	for name, v := range map[string]int{"fs_max_reads_per_alloc": c.FSMaxReadsPerAlloc, "fs_max_reads": c.FSMaxReads} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("client.%s: must not be negative (0: the default)", name))
		}
	}
	r := c.Reserved
	for name, v := range map[string]int{"cpu": r.CPU, "memory": r.MemoryMB, "disk": r.DiskMB} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("client.reserved.%s: must not be negative", name))
		}
	}
	if _, err := scheduler.ParsePortSpec(r.ReservedPorts); err != nil {
		errs = append(errs, fmt.Errorf("client.reserved.reserved_ports: %v", err))
	}
	for _, name := range slices.Sorted(maps.Keys(c.HostNetworks)) {
		hn := c.HostNetworks[name]
		if hn.CIDR != "" {
			if _, _, err := net.ParseCIDR(hn.CIDR); err != nil {
				errs = append(errs, fmt.Errorf("client.host_network %q: cidr %q is not a CIDR", name, hn.CIDR))
			}
		}
		if hn.CIDR == "" && hn.Interface == "" {
			errs = append(errs, fmt.Errorf("client.host_network %q: needs a cidr or an interface", name))
		}
		if _, err := scheduler.ParsePortSpec(hn.ReservedPorts); err != nil {
			errs = append(errs, fmt.Errorf("client.host_network %q: reserved_ports: %v", name, err))
		}
	}
	return errs
}
