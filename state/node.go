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
	ID                    string
	SecretID              string `json:"-"`
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
