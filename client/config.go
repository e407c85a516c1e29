package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/client/workloaduser"
	"github.com/schedhq/sched/state"
)

// Defaults of Config, used where a field is zero.
const (
	DefaultBatchInterval     = 200 * time.Millisecond
	DefaultHeartbeatFraction = 0.5
	DefaultMinBackoff        = 250 * time.Millisecond
	DefaultMaxBackoff        = 30 * time.Second
	DefaultMaxKillTimeout    = 30 * time.Second
	DefaultGCInterval        = time.Minute
	// DefaultTemplateInterval is how often a running task's templates are
	// rendered again to detect a change.
	DefaultTemplateInterval = 5 * time.Second
	DefaultGCAllocAge       = time.Hour
	DefaultGCMaxAllocs      = 50
	DefaultWatchWait        = 5 * time.Minute
	// DefaultServerRebalanceInterval is how often a client shuffles its
	// server list again (plus up to half as much jitter): as Nomad's
	// clients, every few minutes.
	DefaultServerRebalanceInterval = 5 * time.Minute
	// DefaultWatchGather is how long the allocation watch lets changes
	// gather after a wake-up before it asks again.
	DefaultWatchGather = 100 * time.Millisecond
	// DefaultLocalWatchGather is the same after a wake-up the server in
	// the client's own process answered (Config.Local).
	DefaultLocalWatchGather = 10 * time.Millisecond
	// MaxTaskEvents is how many events a task state keeps: the newest,
	// and always the first (Received), as Nomad shows them.
	MaxTaskEvents = 10
)

// LocalServer is a server in the client's own process.
type LocalServer interface {
	// NodeAllocChanges answers as GET
	// /v1/node/:node_id/allocations/changes?server_changes=true&metrics=false&stale
	// does (with delta=true when delta, and since), blocking while the
	// node's index is at most minIndex (0: at once) and wait has not
	// passed, and returns the answer's index. Each changed allocation
	// comes with its job, which the client must not change; the
	// allocations themselves are the client's. An unknown node is an
	// error wrapping state.ErrNotFound. handled is false, with nothing
	// read, when this server should not answer (it may be cut off from
	// the cluster): the client then reads from Servers.
	NodeAllocChanges(ctx context.Context, nodeID string, since, minIndex uint64, delta bool, wait time.Duration) (changes *state.NodeAllocChanges, index uint64, handled bool, err error)
	// UpdateAllocs writes the node's report on its allocations as POST
	// /v1/node/:node_id/allocations does. handled is false, with no
	// write, when this server cannot take it (it does not lead): the
	// client then sends it to Servers. The updates are the server's
	// until it returns; an unknown node is an error wrapping
	// state.ErrNotFound.
	UpdateAllocs(ctx context.Context, nodeID string, ups []*state.AllocClientUpdate) (handled bool, err error)
}

// Config is everything a Client needs. New fills the zero fields with the
// defaults above and checks the rest.
type Config struct {
	// DataDir is the client's directory: node-id and secret-id, state/
	// (what survives a restart) and alloc/ (allocation directories).
	// Required.
	DataDir string
	// Servers are the HTTP addresses of the servers ("host:port" or a
	// URL). Each client shuffles them (Rand) and talks to one, failing
	// over to the next in its order, and shuffles them again every
	// ServerRebalanceInterval. Required.
	Servers []string
	// Local, when set, is the server in the client's own process (an
	// agent that runs both, as `sched agent -dev` does): the client reads
	// its allocations' changes from it directly, and sends it its
	// reports while it leads, without HTTP and its JSON (LocalServer).
	// Registration and heartbeats still go to Servers.
	Local LocalServer
	// ServersTLS, when set, is the TLS config of requests to https://
	// servers (the CA, the name their certificates carry, and the
	// certificate this node presents). Nil: the system's roots, no
	// client certificate.
	ServersTLS *tls.Config
	// Token is sent on every request to the servers; empty sends the
	// node's own SecretID, which the node endpoints accept.
	Token string
	// IntroToken introduces the node to servers with ACLs on: a token with
	// node:write, sent on a register only when the node's own secret is
	// refused (the servers do not know the node yet). Empty: none, and a
	// new node can register only where ACLs are off.
	IntroToken string
	// NodeName defaults to the hostname.
	NodeName   string
	Region     string
	Datacenter string
	NodeClass  string
	NodePool   string
	// Meta is the node's meta, visible to constraints as ${meta.<key>}.
	Meta map[string]string
	// Reserved is capacity held back from scheduling.
	Reserved state.NodeReservedResources
	// HostNetworks are the named networks ports may bind to.
	HostNetworks map[string]*state.HostNetwork
	// HostVolumes are the node's directories jobs may mount by name
	// (host_volume); New checks that each path is an absolute directory.
	HostVolumes map[string]*state.ClientHostVolumeConfig
	// NetworkInterface, when set, is the interface whose first address is
	// the node's default IP for ports. Empty means AdvertiseIP.
	NetworkInterface string
	// AdvertiseIP is the node's default IP for ports (SCHED_IP_<label>)
	// when NetworkInterface is empty. Empty means 127.0.0.1.
	AdvertiseIP string
	// HTTPAddr is the node's own HTTP address ("host:port"), where servers
	// reach it for /v1/client/* (logs, stats). Empty: none.
	HTTPAddr string
	// Drivers run tasks; a task naming a driver that is not here fails
	// validation.
	Drivers []driver.Driver
	// Services registers tasks' services when they start; nil means a
	// services.Manager of the client's own, talking to the first server.
	Services ServiceHooks
	// MaxKillTimeout caps every task's KillTimeout.
	MaxKillTimeout time.Duration
	// BatchInterval is how long status changes gather before they are sent
	// to the servers in one request.
	BatchInterval time.Duration
	// HeartbeatFraction is the share of the server-given TTL after which
	// the node heartbeats (0 < f < 1).
	HeartbeatFraction float64
	// MinBackoff and MaxBackoff bound the wait between retries when no
	// server answers.
	MinBackoff, MaxBackoff time.Duration
	// WatchWait is how long one blocking query for the node's allocations
	// waits.
	WatchWait time.Duration
	// WatchGather is how long the watch waits after a wake-up that
	// brought changes before it asks again, so that a stream of
	// placements wakes it once per WatchGather instead of once per plan.
	// Zero means DefaultWatchGather.
	WatchGather time.Duration
	// LocalWatchGather is WatchGather after a wake-up that Local
	// answered: a wake-up there costs no request and no JSON, and the
	// gathering delayed each placement's start by up to WatchGather (the
	// last of 2,000 one-allocation jobs started 2.2–2.6× the time they
	// took to register; 1.5–1.9× with 10 ms, docs/scale.md). Zero means
	// DefaultLocalWatchGather.
	LocalWatchGather time.Duration
	// TemplateInterval is how often a running task's templates are
	// rendered again; a changed file is acted on per its ChangeMode
	// (restart, signal, noop) after its Splay. Zero means
	// DefaultTemplateInterval.
	TemplateInterval time.Duration
	// GCInterval is how often terminal allocations are collected;
	// GCAllocAge how long a terminal allocation's directory (its logs) is
	// kept; GCMaxAllocs how many terminal allocations are kept at most.
	GCInterval  time.Duration
	GCAllocAge  time.Duration
	GCMaxAllocs int
	// WorkloadUsers is the range of uids a root client hands out, one per
	// allocation (client/workloaduser): the allocation's tasks that name
	// no user run as it and own its directory, so that they cannot signal
	// or read another allocation's. The uid is kept in the allocation's
	// state across client restarts and freed when the allocation is
	// destroyed; an allocation that finds none free fails. The zero
	// value turns this off (tasks run as the driver's default user). A
	// client that does not run as root cannot switch uids and ignores it.
	WorkloadUsers workloaduser.Range
	// DriverFingerprintInterval is how often the drivers are fingerprinted
	// again (a docker engine that went away or came back changes the
	// node); zero means DefaultDriverFingerprintInterval.
	DriverFingerprintInterval time.Duration
	// Bridge is the host bridge of exec tasks in network mode bridge
	// (network.go); the zero value means sched0 on 172.26.96.0/20.
	Bridge BridgeConfig
	// DestroyOnShutdown kills every task on Shutdown (dev mode with a
	// temporary data dir). Otherwise tasks keep running and a client
	// restarted on the same data dir finds them again.
	DestroyOnShutdown bool
	// BeforeRegister, when set, is called once before the node's first
	// registration, which waits for it: an agent that runs a server too
	// passes a wait for the cluster's leader, so that a normal start
	// registers once instead of failing (and warning) until the first
	// election. An error (or ctx ending) only ends the wait: registration
	// then proceeds as without it.
	BeforeRegister func(ctx context.Context) error
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand draws jitter and this client's order of Servers (each client
	// starts at a different server); nil means a random source.
	Rand *rand.Rand
	// ServerRebalanceInterval is how often the client shuffles Servers
	// again (plus up to half as much jitter) and moves to the new first
	// one at its next request, so clients that failed over (a rolling
	// restart of the servers) spread over them again; servers that failed
	// a request within the interval go last. Moving costs no
	// registration. Zero means DefaultServerRebalanceInterval; negative
	// turns it off.
	ServerRebalanceInterval time.Duration
}

// finish fills defaults and validates.
func (c *Config) finish() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("client: DataDir is required"))
	}
	if len(c.Servers) == 0 {
		errs = append(errs, errors.New("client: at least one server address is required"))
	}
	for i, s := range c.Servers {
		if strings.TrimSpace(s) == "" {
			errs = append(errs, fmt.Errorf("client: servers[%d] is empty", i))
		}
	}
	if c.AdvertiseIP != "" && net.ParseIP(c.AdvertiseIP) == nil {
		errs = append(errs, fmt.Errorf("client: advertise IP %q is not an IP address", c.AdvertiseIP))
	}
	for name, hn := range c.HostNetworks {
		if hn == nil {
			errs = append(errs, fmt.Errorf("client: host_network %q is empty", name))
			continue
		}
		if hn.CIDR != "" {
			if _, _, err := net.ParseCIDR(hn.CIDR); err != nil {
				errs = append(errs, fmt.Errorf("client: host_network %q: cidr %q: %v", name, hn.CIDR, err))
			}
		}
	}
	errs = append(errs, checkHostVolumes(c.HostVolumes)...)
	if err := c.Bridge.check(); err != nil {
		errs = append(errs, err)
	}
	if c.HeartbeatFraction < 0 || c.HeartbeatFraction >= 1 {
		errs = append(errs, fmt.Errorf("client: heartbeat fraction %v is not in (0, 1)", c.HeartbeatFraction))
	}
	if !c.WorkloadUsers.IsZero() {
		if err := c.WorkloadUsers.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("client: %w", err))
		}
	}
	seen := map[string]bool{}
	for _, d := range c.Drivers {
		if seen[d.Name()] {
			errs = append(errs, fmt.Errorf("client: driver %q given twice", d.Name()))
		}
		seen[d.Name()] = true
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if c.Region == "" {
		c.Region = "global"
	}
	if c.Datacenter == "" {
		c.Datacenter = "dc1"
	}
	if c.NodePool == "" {
		c.NodePool = state.NodePoolDefault
	}
	if c.AdvertiseIP == "" {
		c.AdvertiseIP = "127.0.0.1"
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.MaxKillTimeout, DefaultMaxKillTimeout)
	def(&c.BatchInterval, DefaultBatchInterval)
	def(&c.MinBackoff, DefaultMinBackoff)
	def(&c.MaxBackoff, DefaultMaxBackoff)
	def(&c.WatchWait, DefaultWatchWait)
	def(&c.WatchGather, DefaultWatchGather)
	def(&c.LocalWatchGather, DefaultLocalWatchGather)
	def(&c.GCInterval, DefaultGCInterval)
	def(&c.TemplateInterval, DefaultTemplateInterval)
	def(&c.DriverFingerprintInterval, DefaultDriverFingerprintInterval)
	def(&c.GCAllocAge, DefaultGCAllocAge)
	if c.ServerRebalanceInterval == 0 {
		c.ServerRebalanceInterval = DefaultServerRebalanceInterval
	}
	if c.GCMaxAllocs <= 0 {
		c.GCMaxAllocs = DefaultGCMaxAllocs
	}
	if c.HeartbeatFraction == 0 {
		c.HeartbeatFraction = DefaultHeartbeatFraction
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return nil
}
