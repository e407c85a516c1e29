// Package client is the node side of sched: a client agent fingerprints
// its machine, registers it as a node with the servers and keeps it alive
// by heartbeat, learns its allocations by a blocking query, runs each one
// (an alloc runner per allocation, a task runner per task, drivers from
// client/driver), and reports every change back in batches.
//
// What the client needs to survive its own restart (allocations, task
// states, driver handles, restart counters) lives under
// <data_dir>/client/state; a client restarted on the same data dir
// re-attaches to the tasks it left running instead of starting them
// again.
package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/client/services"
	"github.com/schedhq/sched/client/taskinput"
	"github.com/schedhq/sched/client/workloaduser"
	"github.com/schedhq/sched/state"
)

// ServiceHooks registers the services of running tasks and groups with
// the servers. *services.Manager implements it.
type ServiceHooks interface {
	RegisterTask(ctx context.Context, alloc *state.Allocation, task *state.Task, env map[string]string, taskDir string) error
	RegisterGroup(ctx context.Context, alloc *state.Allocation, env map[string]string, dir string) error
	DeregisterTask(allocID, task string) error
	DeregisterAlloc(allocID string) error
	// Health reports whether every check of the allocation passes.
	Health(allocID string) (healthy bool, detail string)
}

var _ ServiceHooks = (*services.Manager)(nil)

// Client is a running client agent.
type Client struct {
	cfg      Config
	log      *slog.Logger
	nodeID   string
	secretID string
	// ip is the node's default address for ports; hostNetIPs the address
	// of each host network.
	ip         string
	hostNetIPs map[string]string
	dir        string // <data_dir>/client
	store      *stateStore
	servers    *servers
	drivers    map[string]driver.Driver
	services   ServiceHooks
	ownSvc     *services.Manager // closed on Shutdown when we made it
	fetcher    *taskinput.Fetcher
	updater    *updater
	// users hands out the allocations' workload uids; nil when they are
	// off or the client is not root (workload_user.go).
	users *workloaduser.Pool
	// nets are the allocations' network namespaces (network.go).
	nets *networks
	// httpClient carries every request to the servers; its idle
	// connections are closed on Shutdown.
	httpClient *http.Client

	nodeMu sync.RWMutex
	node   *state.Node

	mu      sync.Mutex
	runners map[string]*allocRunner
	// collected are the allocations garbage collection destroyed while
	// the servers still list them: a list read before they finished must
	// not start them again. An ID leaves once the servers drop it.
	collected map[string]bool

	ctx    context.Context
	cancel context.CancelFunc
	// wg tracks the client's loops and alloc runners.
	wg         sync.WaitGroup
	started    bool
	destroyAll atomic.Bool

	registered chan struct{}
	regOnce    sync.Once
	reregister chan struct{}
	// beatNow asks the heartbeat loop for a heartbeat at once
	// (checkRegistered).
	beatNow      chan struct{}
	registration atomic.Uint64 // successful registrations, for tests
	// heartbeatsOK and heartbeatsFailed count heartbeats the servers
	// answered and those that failed (HeartbeatStats).
	heartbeatsOK, heartbeatsFailed atomic.Uint64
	// heartbeatMaxDelay is HeartbeatMaxDelay, in nanoseconds.
	heartbeatMaxDelay atomic.Int64

	randMu sync.Mutex
}

// New checks cfg, fingerprints the machine and prepares the client. It
// starts nothing: call Start.
func New(cfg Config) (*Client, error) {
	if err := cfg.finish(); err != nil {
		return nil, err
	}
	c := &Client{
		cfg: cfg, log: cfg.Logger.With("component", "client"),
		dir:        filepath.Join(cfg.DataDir, "client"),
		drivers:    map[string]driver.Driver{},
		runners:    map[string]*allocRunner{},
		collected:  map[string]bool{},
		registered: make(chan struct{}),
		reregister: make(chan struct{}, 1),
		beatNow:    make(chan struct{}, 1),
		fetcher:    &taskinput.Fetcher{},
		hostNetIPs: map[string]string{},
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if err := os.MkdirAll(filepath.Join(c.dir, "alloc"), 0o711); err != nil {
		return nil, fmt.Errorf("client: data dir: %w", err)
	}
	c.store = &stateStore{dir: filepath.Join(c.dir, "state")}
	if err := c.setupWorkloadUsers(); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	var err error
	if c.nodeID, c.secretID, err = nodeIdentity(c.dir); err != nil {
		return nil, fmt.Errorf("client: node identity: %w", err)
	}
	if c.ip, err = defaultIP(cfg.NetworkInterface, cfg.AdvertiseIP); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	for name, hn := range cfg.HostNetworks {
		ip, err := hostNetworkIP(hn)
		if err != nil {
			return nil, fmt.Errorf("client: host_network %q: %w", name, err)
		}
		c.hostNetIPs[name] = ip
	}
	for _, d := range cfg.Drivers {
		c.drivers[d.Name()] = d
	}
	fp, err := fingerprint(procFS{root: "/proc"}, c.dir)
	if err != nil {
		c.log.Warn("fingerprint incomplete", "error", err)
	}
	c.node = c.buildNode(fp)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg.ServersTLS
	hc := &http.Client{Transport: tr}
	c.httpClient = hc
	// With ACLs on, the node endpoints accept the node's own secret.
	token := cfg.Token
	if token == "" {
		token = c.secretID
	}
	if c.servers, err = newServers(cfg.Servers, token, hc, cfg.Rand); err != nil {
		return nil, err
	}
	c.servers.rebalanceEvery(cfg.ServerRebalanceInterval, cfg.Now, cfg.Rand, c.log)
	c.services = cfg.Services
	if c.services == nil {
		m, err := services.New(services.Config{
			API: c.servers.current(), NodeID: c.nodeID, NodeSecret: c.secretID, Datacenter: cfg.Datacenter,
			Address: c.ip, Logger: cfg.Logger,
			// Service writes follow the client's server failover.
			CurrentAPI: c.servers.current,
		})
		if err != nil {
			return nil, fmt.Errorf("client: services: %w", err)
		}
		c.services, c.ownSvc = m, m
	}
	c.updater = newUpdater(c)
	c.nets = newNetworks(filepath.Join(c.dir, "network"), cfg.Bridge, linuxNetHost{}, c.log.Warn)
	return c, nil
}

// hostNetworkIP finds the address of a host network: its interface's
// first address inside its CIDR (or its first address), else any local
// address inside the CIDR.
func hostNetworkIP(hn *state.HostNetwork) (string, error) {
	var cidr *net.IPNet
	if hn.CIDR != "" {
		_, n, err := net.ParseCIDR(hn.CIDR)
		if err != nil {
			return "", err
		}
		cidr = n
	}
	var addrs []net.Addr
	if hn.Interface != "" {
		ifc, err := net.InterfaceByName(hn.Interface)
		if err != nil {
			return "", err
		}
		if addrs, err = ifc.Addrs(); err != nil {
			return "", err
		}
	} else {
		var err error
		if addrs, err = net.InterfaceAddrs(); err != nil {
			return "", err
		}
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && (cidr == nil || cidr.Contains(n.IP)) {
			return n.IP.String(), nil
		}
	}
	if cidr != nil {
		return "", fmt.Errorf("no local address in %s", hn.CIDR)
	}
	return "", errors.New("no address")
}

// Start restores the allocations a previous run left (re-attaching to
// their tasks), then registers the node and starts heartbeating,
// watching for allocations, reporting status and collecting garbage.
func (c *Client) Start() error {
	if c.started {
		return errors.New("client: already started")
	}
	c.started = true
	c.restore()
	c.goLoop(c.heartbeatLoop)
	c.goLoop(c.watchLoop)
	c.goLoop(c.updater.run)
	c.goLoop(c.gcLoop)
	c.goLoop(c.driverFingerprintLoop) // fingerprint.go
	return nil
}

func (c *Client) goLoop(fn func(ctx context.Context)) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		fn(c.ctx)
	}()
}

// restore re-creates the runners of the allocations on disk.
func (c *Client) restore() {
	restored, errs := c.store.load()
	for _, err := range errs {
		c.log.Warn("restore", "error", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range restored {
		ar := newAllocRunner(c, r.Alloc, r.Run)
		c.runners[ar.id] = ar
		c.runAlloc(ar)
	}
	if len(restored) > 0 {
		c.log.Info("restored allocations", "count", len(restored))
	}
}

// runAlloc starts an alloc runner's goroutine.
func (c *Client) runAlloc(ar *allocRunner) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ar.run()
		// Task goroutines of a runner cut short by shutdown finish here.
		ar.wg.Wait()
	}()
}

// Shutdown stops the client. Tasks keep running (a client restarted on
// the same data dir re-attaches to them) unless Config.DestroyOnShutdown,
// when every allocation is killed first. It waits for the client's
// goroutines and sends the last status updates.
func (c *Client) Shutdown() error {
	if c.started && c.cfg.DestroyOnShutdown && !c.destroyAll.Swap(true) {
		c.mu.Lock()
		runners := make([]*allocRunner, 0, len(c.runners))
		for _, ar := range c.runners {
			runners = append(runners, ar)
		}
		c.mu.Unlock()
		deadline := time.After(c.cfg.MaxKillTimeout + 5*time.Second)
		for _, ar := range runners {
			ar.stop(true)
		}
	wait:
		for _, ar := range runners {
			select {
			case <-ar.done:
			case <-deadline:
				c.log.Warn("allocations still stopping at shutdown")
				break wait
			}
		}
	}
	c.cancel()
	c.wg.Wait()
	c.nets.close()
	_ = c.store.close() // journal.go
	if c.ownSvc != nil {
		c.ownSvc.Close()
	}
	// A connection the transport dialed but never used looks, to an
	// in-process server, like a request on its way: http.Server.Shutdown
	// would wait seconds for it.
	c.httpClient.CloseIdleConnections()
	return nil
}

func (c *Client) destroying() bool { return c.destroyAll.Load() }

// NodeID is the node's ID, kept in <data_dir>/client/node-id.
func (c *Client) NodeID() string { return c.nodeID }

// SecretID is the node's secret, kept in <data_dir>/client/secret-id.
func (c *Client) SecretID() string { return c.secretID }

// Node returns the node as the client registers it.
func (c *Client) Node() *state.Node { return c.nodeSnapshot().Copy() }

func (c *Client) nodeSnapshot() *state.Node {
	c.nodeMu.RLock()
	defer c.nodeMu.RUnlock()
	return c.node
}

// WaitRegistered blocks until the node has registered once.
func (c *Client) WaitRegistered(ctx context.Context) error {
	select {
	case <-c.registered:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Allocs returns the allocations the client runs or keeps, each with its
// local status and task states, sorted by ID.
func (c *Client) Allocs() []*state.Allocation {
	c.mu.Lock()
	runners := make([]*allocRunner, 0, len(c.runners))
	for _, ar := range c.runners {
		runners = append(runners, ar)
	}
	c.mu.Unlock()
	out := make([]*state.Allocation, 0, len(runners))
	for _, ar := range runners {
		out = append(out, ar.info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ErrUnknownAlloc is returned for an allocation the client does not have.
var ErrUnknownAlloc = errors.New("allocation not found on this client")

func (c *Client) runner(id string) (*allocRunner, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ar := c.runners[id]
	if ar == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownAlloc, id)
	}
	return ar, nil
}

// Alloc returns one allocation as the client holds it, with its local
// status; the error wraps ErrUnknownAlloc when the client has no such
// allocation.
func (c *Client) Alloc(id string) (*state.Allocation, error) {
	ar, err := c.runner(id)
	if err != nil {
		return nil, err
	}
	return ar.info(), nil
}

// AllocDir is the allocation's directory, built first when no task
// needed it yet (allocdir.go).
func (c *Client) AllocDir(id string) (string, error) {
	ar, err := c.runner(id)
	if err != nil {
		return "", err
	}
	if err := ar.ensureDirs(); err != nil {
		return "", err
	}
	return ar.dir.Root, nil
}

// AllocLogDir is the directory of the allocation's task logs, built
// first when no task needed it yet.
func (c *Client) AllocLogDir(id string) (string, error) {
	ar, err := c.runner(id)
	if err != nil {
		return "", err
	}
	if err := ar.ensureDirs(); err != nil {
		return "", err
	}
	return ar.dir.LogDir(), nil
}

// AllocStats measures the allocation's running tasks, by task name, as
// GET /v1/client/allocation/:alloc_id/stats serves them; the HTTP layer
// adds the allocation's sum.
func (c *Client) AllocStats(id string) (*state.AllocResourceUsage, error) {
	ar, err := c.runner(id)
	if err != nil {
		return nil, err
	}
	mhz := perCoreMHz(c.nodeSnapshot())
	out := &state.AllocResourceUsage{Tasks: map[string]*state.TaskResourceUsage{}}
	for _, t := range ar.tasks {
		if t.drv == nil || t.taskState() != state.TaskStateRunning {
			continue
		}
		u, err := t.drv.Stats(t.id)
		if err != nil || u == nil {
			continue // it stopped meanwhile
		}
		if u.ResourceUsage != nil && u.ResourceUsage.CpuStats != nil {
			u.ResourceUsage.CpuStats.TotalTicks = u.ResourceUsage.CpuStats.Percent / 100 * mhz
		}
		out.Tasks[t.name] = u
	}
	return out, nil
}

// perCoreMHz is the node's CPU speed per core.
func perCoreMHz(n *state.Node) float64 {
	if n == nil || n.NodeResources == nil || n.NodeResources.Cores == 0 {
		return 1000
	}
	return float64(n.NodeResources.CPU) / float64(n.NodeResources.Cores)
}

func (c *Client) allocPath(id string) string { return filepath.Join(c.dir, "alloc", id) }

func (c *Client) now() time.Time { return c.cfg.Now() }

// jitter returns a number in [0, 1).
func (c *Client) jitter() float64 {
	c.randMu.Lock()
	defer c.randMu.Unlock()
	return c.cfg.Rand.Float64()
}

// sleep waits d; it returns false early when ctx ends or stop closes.
func (c *Client) sleep(ctx context.Context, d time.Duration, stop <-chan struct{}) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
}

// needRegister asks the heartbeat loop to register again (the servers
// no longer know the node, or the node changed).
func (c *Client) needRegister() {
	select {
	case c.reregister <- struct{}{}:
	default:
	}
}

// checkRegistered asks the heartbeat loop to heartbeat at once, after a
// stale read answered 404 for the node: a follower that has not applied
// the node's registration yet (just after it, through another server)
// answers so too. The heartbeat goes to the leader, and only its 404 (the
// servers did lose the node) registers the node again.
func (c *Client) checkRegistered() {
	select {
	case c.beatNow <- struct{}{}:
	default:
	}
}

// Registrations counts the node's successful registrations.
func (c *Client) Registrations() uint64 { return c.registration.Load() }

// HeartbeatStats returns how many heartbeats the servers answered and how
// many failed (no server reachable, or an error answer) since the start.
func (c *Client) HeartbeatStats() (ok, failed uint64) {
	return c.heartbeatsOK.Load(), c.heartbeatsFailed.Load()
}

// BatchesSent counts the allocation status batches sent to the servers.
func (c *Client) BatchesSent() int { return c.updater.requests() }

// CurrentServer is the address of the server the client talks to.
func (c *Client) CurrentServer() string {
	return c.servers.current().Address()
}
