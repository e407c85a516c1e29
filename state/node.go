package state

// Node statuses.
const (
	NodeStatusInit         = "initializing"
	NodeStatusReady        = "ready"
	NodeStatusDown         = "down"
	NodeStatusDisconnected = "disconnected"
)

// Node scheduling eligibility.
const (
	NodeSchedulingEligible   = "eligible"
	NodeSchedulingIneligible = "ineligible"
)

// Built-in node pools.
const (
	NodePoolDefault = "default"
	NodePoolAll     = "all"
)

// Node is a client machine that runs allocations.
type Node struct {
	ID string
	// SecretID is the node's secret as the client sends it when it
	// registers. It is never stored: the leader replaces it with
	// SecretHash before proposing (SealSecret), and Apply and Restore seal
	// what older servers wrote in plain text.
	SecretID string `json:"-"`
	// SecretHash is HashSecret(SecretID): what the store and snapshots
	// keep, and what a node's requests are checked against.
	SecretHash            string `json:"-"`
	Name                  string
	Datacenter            string
	NodePool              string
	NodeClass             string
	ComputedClass         string
	HTTPAddr              string
	Attributes            map[string]string
	Meta                  map[string]string
	NodeResources         *NodeResources
	ReservedResources     *NodeReservedResources
	Drivers               map[string]*DriverInfo
	HostNetworks          map[string]*HostNetwork
	HostVolumes           map[string]*ClientHostVolumeConfig
	Status                string
	StatusDescription     string
	SchedulingEligibility string
	Drain                 bool
	DrainStrategy         *DrainStrategy
	// StatusUpdatedAt is Unix seconds.
	StatusUpdatedAt int64
	CreateIndex     uint64
	ModifyIndex     uint64
}

// SealSecret replaces a plain SecretID by its hash, so that raft and
// snapshots never hold a node's secret. It is pure, so Apply may call it.
func (n *Node) SealSecret() {
	if n.SecretID != "" {
		n.SecretHash = HashSecret(n.SecretID)
		n.SecretID = ""
	}
}

// SecretMatches reports, in constant time, whether secret is the node's
// secret. A node without a secret matches nothing.
func (n *Node) SecretMatches(secret string) bool {
	return n.SecretHash != "" && secret != "" && SecretMatches(n.SecretHash, secret)
}

// Ready reports whether the node may receive new allocations.
func (n *Node) Ready() bool {
	return n.Status == NodeStatusReady && !n.Drain && n.SchedulingEligibility == NodeSchedulingEligible
}

// NodeResources is a node's total capacity.
type NodeResources struct {
	CPU      int
	Cores    int
	MemoryMB int
	DiskMB   int
	Networks []*NetworkResource
	// MinDynamicPort and MaxDynamicPort bound dynamic port selection; zero
	// means the defaults 20000 and 32000.
	MinDynamicPort int
	MaxDynamicPort int
}

// NodeReservedResources is capacity held back from scheduling.
type NodeReservedResources struct {
	CPU           int
	MemoryMB      int
	DiskMB        int
	ReservedPorts string
}

// DriverInfo is a driver's fingerprint on a node.
type DriverInfo struct {
	Detected          bool
	Healthy           bool
	HealthDescription string
	Attributes        map[string]string
}

// HostNetwork is a named network on the node that ports may bind to.
type HostNetwork struct {
	Name          string
	CIDR          string
	Interface     string
	ReservedPorts string
}

// DrainStrategy says how to drain a node.
type DrainStrategy struct {
	Deadline         int64
	IgnoreSystemJobs bool
	// ForceDeadline is Unix nanoseconds.
	ForceDeadline int64
	StartedAt     int64
}

// NodePool groups nodes; jobs select a pool.
type NodePool struct {
	Name                   string
	Description            string
	Meta                   map[string]string
	SchedulerConfiguration map[string]any
	CreateIndex            uint64
	ModifyIndex            uint64
}
