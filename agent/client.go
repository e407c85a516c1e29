package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/schedhq/sched/client"
	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/client/driver/docker"
	schedhttp "github.com/schedhq/sched/http"
	"github.com/schedhq/sched/http/clientapi"
	"github.com/schedhq/sched/http/clientapi/allocfs"
	"github.com/schedhq/sched/http/jobs"
	"github.com/schedhq/sched/raft"
	"github.com/schedhq/sched/state"
)

// newClient builds the agent's client from the client block. It is
// called once the HTTP listener is bound: the node advertises that
// address for /v1/client/*, and an agent that is also a server (-dev)
// sends the client to it.
func (a *Agent) newClient() error {
	cc := a.cfg.Client
	servers := a.clientServers()
	advertise := a.cfg.Advertise.HTTP
	if advertise == "" {
		advertise = a.HTTPAddr()
	}
	ip, _, err := net.SplitHostPort(advertise)
	if err != nil {
		return fmt.Errorf("client: advertised HTTP address %q: %w", advertise, err)
	}
	hostNets := make(map[string]*state.HostNetwork, len(cc.HostNetworks))
	for name, hn := range cc.HostNetworks {
		hostNets[name] = &state.HostNetwork{Name: name, CIDR: hn.CIDR, Interface: hn.Interface, ReservedPorts: hn.ReservedPorts}
	}
	logger := a.log.With("component", "client")
	rawExec := driver.NewRawExec(logger)
	rawExec.Policy = driver.RawExecPolicy{Disabled: !cc.RawExec.Enabled, DefaultUser: cc.RawExec.DefaultUser, DeniedUsers: cc.RawExec.DeniedUsers}
	if cc.RawExec.Enabled && cc.RawExec.DefaultUser != "" && os.Geteuid() == 0 {
		// Tasks run as another user: let it through the data dir to its
		// allocation (traverse, not list; server/ and client/state stay
		// private).
		for _, d := range []string{a.cfg.DataDir, filepath.Join(a.cfg.DataDir, "client"), filepath.Join(a.cfg.DataDir, "client", "alloc")} {
			if err := os.MkdirAll(d, 0o711); err != nil {
				return fmt.Errorf("client: data dir: %w", err)
			}
			if err := os.Chmod(d, 0o711); err != nil {
				return fmt.Errorf("client: data dir: %w", err)
			}
		}
	}
	dcfg := cc.Docker.driverConfig()
	dcfg.Logger = logger
	dockerDriver, err := docker.New(dcfg)
	if err != nil {
		return fmt.Errorf("client.docker: %w", err)
	}
	a.dockerDriver = dockerDriver
	execDriver := cc.Exec.driver(driver.NewExec(logger))
	a.execDriver = execDriver
	c, err := client.New(client.Config{
		DataDir: a.cfg.DataDir, Servers: servers, ServersTLS: a.httpDialTLS, Local: a.localServer(),
		NodeName: a.cfg.Name, Region: a.cfg.Region, Datacenter: a.cfg.Datacenter,
		NodeClass: cc.NodeClass, NodePool: cc.NodePool, Meta: cc.Meta,
		Reserved: state.NodeReservedResources{
			CPU: cc.Reserved.CPU, MemoryMB: cc.Reserved.MemoryMB, DiskMB: cc.Reserved.DiskMB,
			ReservedPorts: cc.Reserved.ReservedPorts,
		},
		HostNetworks:     hostNets,
		HostVolumes:      hostVolumes(cc.HostVolumes),
		NetworkInterface: cc.NetworkInterface,
		AdvertiseIP:      ip,
		HTTPAddr:         advertise,
		IntroToken:       introToken(cc.IntroToken, a.localIntro),
		Drivers:          driver.NewCatalog(rawExec, driver.NewMock(), execDriver, dockerDriver).List(),
		MaxKillTimeout:   cc.MaxKillTimeout,
		GCInterval:       cc.GCInterval,
		GCMaxAllocs:      cc.GCMaxAllocs,
		GCAllocAge:       cc.GCAllocAge,
		WorkloadUsers:    cc.Users.Range(),
		Bridge:           client.BridgeConfig{Name: cc.BridgeNetworkName, Subnet: cc.BridgeNetworkSubnet},
		// Zero: the client's default.
		DriverFingerprintInterval: cc.DriverFingerprintInterval,
		ServerRebalanceInterval:   cc.ServerRebalanceInterval,
		// A temporary data dir is removed on exit: nothing could find
		// the tasks again, so they go with the agent.
		DestroyOnShutdown: a.tmpDir != "",
		BeforeRegister:    a.clusterReady, // client_start.go
		Logger:            a.log,
	})
	if err != nil {
		return err
	}
	a.client = c
	a.clientAPI.serverTLS = a.httpDialTLS
	a.clientAPI.fsGate.Limits = allocfs.Limits{PerAlloc: cc.FSMaxReadsPerAlloc, PerAgent: cc.FSMaxReads}
	a.clientAPI.c.Store(c)
	return nil
}

// localServer is how the client reaches the server in the agent's own
// process: none for a client-only agent, which has only HTTP.
func (a *Agent) localServer() client.LocalServer {
	if a.jobsLocal == nil {
		return nil
	}
	return localServer{a.jobsLocal, a.node}
}

// localServer serves the client from the agent's own server (jobs.Local):
// its allocation reads (stale, as the client's reads are) while this
// server is in touch with its leader (inTouch), its reports while this
// server leads.
type localServer struct {
	jobs *jobs.Local
	node *raft.Node
}

func (l localServer) NodeAllocChanges(ctx context.Context, nodeID string, since, minIndex uint64, delta bool, wait time.Duration) (*state.NodeAllocChanges, uint64, bool, error) {
	if !l.inTouch() {
		return nil, 0, false, nil
	}
	ch, index, err := l.jobs.AllocChanges(ctx, nodeID, since, minIndex, delta, wait)
	return ch, index, true, err
}

// localReadLag is how long a follower may go without hearing from its
// leader and still serve its own client's reads: past it the follower
// may be cut off from the cluster, and the client reads from Servers,
// which it moves through when one fails, as a client agent elsewhere does.
const localReadLag = 2 * time.Second

// inTouch reports whether this server leads, or heard from its leader
// within localReadLag.
func (l localServer) inTouch() bool {
	if l.node.IsLeader() {
		return true
	}
	if addr, _ := l.node.Leader(); addr == "" {
		return false
	}
	last := l.node.LastContact()
	return !last.IsZero() && time.Since(last) <= localReadLag
}

func (l localServer) UpdateAllocs(ctx context.Context, nodeID string, ups []*state.AllocClientUpdate) (bool, error) {
	if !l.node.IsLeader() {
		return false, nil
	}
	_, err := l.jobs.UpdateAllocs(ctx, nodeID, ups)
	return true, err
}

// introToken is what the client presents to register a new node: the
// configured intro_token, or the agent's own local secret when it runs a
// server too and none is configured.
func introToken(configured, local string) string {
	if configured != "" {
		return configured
	}
	return local
}

// Client is the agent's client, nil when the client role is off.
func (a *Agent) Client() *client.Client { return a.client }

// clientAPI adapts the client to clientapi.Client. The HTTP
// server is built before the client exists (the client needs the bound
// listener's address), so the adapter starts empty and is filled in.
type clientAPI struct {
	c         atomic.Pointer[client.Client]
	serverTLS *tls.Config
	// fsGate caps the file system and log reads this agent serves; its
	// Limits are set before the client is stored in c.
	fsGate allocfs.Gate
}

var _ clientapi.Client = (*clientAPI)(nil)

// errNoClient answers /v1/client/* before the client is up.
var errNoClient = errors.New("the client is not running yet")

func (x *clientAPI) get() (*client.Client, error) {
	c := x.c.Load()
	if c == nil {
		return nil, errNoClient
	}
	return c, nil
}

// NodeID implements clientapi.Client.
func (x *clientAPI) NodeID() string {
	if c := x.c.Load(); c != nil {
		return c.NodeID()
	}
	return ""
}

// NodeSecretHash implements clientapi.Signer: the key servers sign
// the /v1/client requests they proxy here with.
func (x *clientAPI) NodeSecretHash() string {
	if c := x.c.Load(); c != nil {
		return state.HashSecret(c.SecretID())
	}
	return ""
}

// CurrentServer implements clientapi.ServerFollower: requests this
// agent does not serve (and unsigned /v1/client ones) go there.
func (x *clientAPI) CurrentServer() string {
	if c := x.c.Load(); c != nil {
		return c.CurrentServer()
	}
	return ""
}

// ServerTLS is the config for proxying to the servers over HTTPS (nil
// without tls.http).
func (x *clientAPI) ServerTLS() *tls.Config { return x.serverTLS }

// Alloc implements clientapi.Client.
func (x *clientAPI) Alloc(id string) (*state.Allocation, error) {
	c, err := x.get()
	if err != nil {
		return nil, err
	}
	a, err := c.Alloc(id)
	if errors.Is(err, client.ErrUnknownAlloc) {
		return nil, state.NotFoundf("allocation %q on this client", id)
	}
	return a, err
}

// AllocLogDir implements clientapi.Client.
func (x *clientAPI) AllocLogDir(id string) (string, error) {
	c, err := x.get()
	if err != nil {
		return "", err
	}
	dir, err := c.AllocLogDir(id)
	if errors.Is(err, client.ErrUnknownAlloc) {
		return "", state.NotFoundf("allocation %q on this client", id)
	}
	return dir, err
}

// AllocStats implements clientapi.Client.
func (x *clientAPI) AllocStats(_ context.Context, id string) (*state.AllocResourceUsage, error) {
	c, err := x.get()
	if err != nil {
		return nil, err
	}
	stats, err := c.AllocStats(id)
	if errors.Is(err, client.ErrUnknownAlloc) {
		return nil, state.NotFoundf("allocation %q on this client", id)
	}
	return stats, err
}

// AllocDir implements clientapi.Client.
func (x *clientAPI) AllocDir(id string) (string, error) {
	c, err := x.get()
	if err != nil {
		return "", err
	}
	dir, err := c.AllocDir(id)
	return dir, clientError(err)
}

// FSGate implements clientapi.Client: nil (no cap) until the client
// runs, when no read gets as far as opening a file anyway.
func (x *clientAPI) FSGate() *allocfs.Gate {
	if x.c.Load() == nil {
		return nil
	}
	return &x.fsGate
}

// AllocExec implements clientapi.Client.
func (x *clientAPI) AllocExec(ctx context.Context, id string, req *clientapi.ExecRequest) (int, error) {
	c, err := x.get()
	if err != nil {
		return 0, err
	}
	code, err := c.ExecTask(ctx, id, &client.ExecOptions{
		Task: req.Task, Command: req.Command, TTY: req.TTY, Size: req.Size,
		Stdin: req.Stdin, Stdout: req.Stdout, Stderr: req.Stderr, Resize: req.Resize,
	})
	return code, clientError(err)
}

// AllocRestart implements clientapi.Client.
func (x *clientAPI) AllocRestart(ctx context.Context, id, task string, all bool) error {
	c, err := x.get()
	if err != nil {
		return err
	}
	return clientError(c.RestartAlloc(ctx, id, task, all))
}

// AllocSignal implements clientapi.Client.
func (x *clientAPI) AllocSignal(_ context.Context, id, task, signal string) error {
	c, err := x.get()
	if err != nil {
		return err
	}
	return clientError(c.SignalAlloc(id, task, signal))
}

// clientError maps the client's errors to the HTTP layer's: an unknown
// allocation or task is a 404, a task that does not run (or whose driver
// cannot exec) a 409, a bad argument a 400.
func clientError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, client.ErrUnknownAlloc), errors.Is(err, client.ErrUnknownTask):
		return &schedhttp.CodedError{Code: http.StatusNotFound, Message: err.Error(), Err: err}
	case errors.Is(err, client.ErrTaskNotRunning), errors.Is(err, client.ErrExecUnsupported):
		return &schedhttp.CodedError{Code: http.StatusConflict, Message: err.Error(), Err: err}
	case errors.Is(err, driver.ErrBadConfig):
		return &schedhttp.CodedError{Code: http.StatusBadRequest, Message: err.Error(), Err: err}
	}
	return err
}

// newClientOnly sets up an agent that runs no server: its HTTP port
// serves the node-local endpoints (/v1/client/*, /v1/agent/self and
// /v1/agent/health) for the servers to proxy to, and its own metrics and
// log lines (/v1/metrics, /v1/agent/monitor through logs).
func (a *Agent) newClientOnly(logs *logHub) error {
	if err := os.MkdirAll(a.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	var err error
	if a.tlsKeys, err = newTLSKeys(&a.cfg.TLS); err != nil {
		return err
	}
	if a.tlsKeys != nil {
		// The node's port serves HTTPS too: servers proxy /v1/client
		// requests (logs, stats) to it checking client.<region>.sched.
		a.httpServeTLS, a.httpDialTLS = a.cfg.TLS.httpTLS(a.tlsKeys, a.cfg.Region)
	}
	if a.lis, err = net.Listen("tcp", a.cfg.HTTPAddr()); err != nil {
		return fmt.Errorf("http listener: %w", err)
	}
	if err := a.newClient(); err != nil {
		return err
	}
	reqCtx, cancelReqs := context.WithCancel(context.Background())
	a.cancelReqs = cancelReqs
	lim := a.cfg.Limits
	a.lis = schedhttp.LimitConnsPerClient(a.lis, lim.HTTPMaxConnsPerClient)
	a.lis = a.serveTLS(a.lis)
	a.http = &http.Server{
		Handler: schedhttp.WithTimeouts(clientapi.NewHandlerWith(&a.clientAPI, a.log,
			clientapi.HandlerConfig{Metrics: a.newClientMetrics(), Monitor: logs, Security: a.security}), schedhttp.Timeouts{Read: lim.HTTPReadTimeout, Write: lim.HTTPWriteTimeout}),
		ReadHeaderTimeout: lim.HTTPReadHeaderTimeout,
		IdleTimeout:       lim.HTTPIdleTimeout,
		MaxHeaderBytes:    lim.HTTPMaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	return nil
}

// clientServers are the addresses the client talks to: client.servers,
// or this agent's own HTTP port. A bare host:port gets the servers' scheme
// (https:// with tls.http on).
func (a *Agent) clientServers() []string {
	if len(a.cfg.Client.Servers) == 0 {
		return []string{a.HTTPURL()}
	}
	out := make([]string, len(a.cfg.Client.Servers))
	for i, s := range a.cfg.Client.Servers {
		if !strings.Contains(s, "://") {
			s = a.serversScheme() + "://" + s
		}
		out[i] = s
	}
	return out
}
