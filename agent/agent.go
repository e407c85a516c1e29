// Package agent wires a sched agent together: it resolves configuration
// (HCL files and flags), opens the state store and raft on the data dir,
// serves the HTTP APIs, and stops everything cleanly. It is the only package
// that knows every other one.
package agent

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/schedhq/sched/client"
	schedhttp "github.com/schedhq/sched/http"
	"github.com/schedhq/sched/http/jobs"
	mgmthttp "github.com/schedhq/sched/http/mgmt"
	"github.com/schedhq/sched/http/ui"
	"github.com/schedhq/sched/raft"
	"github.com/schedhq/sched/scheduler/leader"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// Agent is a running sched agent.
type Agent struct {
	cfg   *Config
	log   *slog.Logger
	store *store.Store
	node  *raft.Node
	// jobsLocal serves the agent's own client without HTTP (client.go).
	jobsLocal *jobs.Local
	http      *http.Server
	lis       net.Listener
	tmpDir    string // removed on shutdown in dev mode
	// localIntro introduces this agent's client to its own server with
	// ACLs on; empty when the agent is not both.
	localIntro string
	// raftTLS is the raft transport's TLS config, nil when tls.rpc is off;
	// the leader also vets joining servers with it (cluster.go).
	raftTLS *tls.Config
	// httpServeTLS and httpDialTLS are the HTTP port's TLS configs (the
	// listener's, and for this agent's own requests to servers), nil when
	// tls.http is off.
	httpServeTLS, httpDialTLS *tls.Config
	// tlsKeys holds the tls block's files as read now (nil without TLS);
	// every config above reads them per handshake, ReloadTLS rereads them.
	tlsKeys *tlsKeys
	leader  *leadership
	// sched holds the scheduler's leader services (agent/scheduler.go).
	sched *schedulerHooks
	// cluster is gossip, forwarding and the operator API (agent/cluster.go).
	cluster clusterState
	// client is the client role (agent/client.go), nil when it is off;
	// clientAPI is what the HTTP layer reaches of it.
	client    *client.Client
	clientAPI clientAPI
	// dockerDriver is the client's docker driver, shut down (detached
	// from its containers) after the client.
	dockerDriver interface{ Shutdown() }
	// execDriver is the client's exec driver, shut down after the client
	// (its tasks keep running; its empty cgroup parent goes).
	execDriver interface{ Shutdown() }
	// metrics is the agent's metrics registry (agent/metrics.go).
	metrics *agentMetrics
	// foreground counts the API's writes in flight; the scheduling
	// workers give way to them (leader.Foreground).
	foreground *leader.Foreground
	// cancelReqs ends the context of every in-flight request.
	cancelReqs context.CancelFunc
	// started is set by Start; Shutdown stops only what Start began.
	started bool
	// stopMemory ends the memory releaser (agent/memory.go).
	stopMemory context.CancelFunc
	// security is what the configuration leaves open (agent/exposure.go):
	// logged by Start outside -dev, served in /v1/agent/self.
	security *state.AgentSecurity

	shutdownOnce sync.Once
	shutdownErr  error
	serveDone    chan struct{}
}

// New opens the agent's store and raft node and binds its HTTP listener.
// cfg must have been through Finish. Nothing is served until Start.
func New(cfg *Config, logger *slog.Logger) (a *Agent, err error) {
	if logger == nil {
		logger = slog.Default()
	}
	// Every line the agent logs also reaches /v1/agent/monitor.
	logs := newLogHub()
	logger = slog.New(logs.wrap(logger.Handler()))
	a = &Agent{cfg: cfg, log: logger, serveDone: make(chan struct{}), metrics: newAgentMetrics(), foreground: leader.NewForeground()}
	// The agent being built: a failing return sets a to nil before this
	// deferred cleanup runs.
	self := a
	defer func() {
		if err != nil {
			self.Shutdown()
		}
	}()
	if cfg.DataDir == "" {
		dir, err := os.MkdirTemp("", "sched-dev-")
		if err != nil {
			return nil, fmt.Errorf("create dev data dir: %w", err)
		}
		a.tmpDir, cfg.DataDir = dir, dir
	}
	a.security = securityReport(cfg, currentHostFacts(cfg)) // exposure.go
	if !cfg.Server.Enabled {
		if err := a.newClientOnly(logs); err != nil { // agent/client.go
			return nil, err
		}
		return a, nil
	}
	if err := os.MkdirAll(filepath.Join(cfg.DataDir, "server"), 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	id, err := serverID(cfg.DataDir)
	if err != nil {
		return nil, err
	}

	a.store, err = store.NewStore(store.Config{JobVersionsRetained: cfg.Server.JobTrackedVersions, EventBufferSize: cfg.Server.EventBufferSize})
	if err != nil {
		return nil, err
	}
	rc := a.raftConfig(id)
	if a.tlsKeys, err = newTLSKeys(&cfg.TLS); err != nil {
		return nil, err
	}
	if a.tlsKeys != nil {
		rc.TLS = cfg.TLS.raftTLS(a.tlsKeys, cfg.Region)
		a.httpServeTLS, a.httpDialTLS = cfg.TLS.httpTLS(a.tlsKeys, cfg.Region)
	}
	a.raftTLS = rc.TLS
	a.node, err = raft.New(rc, &fsm{store: a.store})
	if err != nil {
		return nil, fmt.Errorf("start raft: %w", err)
	}

	w := a.newWriter()
	hcfg := schedhttp.Config{Store: a.store, Writer: w, Cluster: w, Logger: logger,
		ForwardTLS: a.httpDialTLS, NodeTLS: a.nodeTLS(), EnableDebug: cfg.EnableDebug, Monitor: logs, Metrics: a.metrics,
		MaxBlockingQueries: cfg.Limits.MaxBlockingQueries}
	jcfg := jobs.Config{JobLimits: cfg.Server.JobLimits()}
	a.configureHTTPScheduler(&jcfg)
	a.configureHTTPACL(&hcfg)
	a.configureHTTPCluster(&hcfg)
	if cfg.Client.Enabled {
		hcfg.Client = &a.clientAPI
		// This agent's own client, talking to this server only, is
		// introduced by a secret that never leaves the host
		// (docs/security.md); intro_token, when set, still serves
		// registers that reach another leader.
		if len(cfg.Client.Servers) == 0 {
			a.localIntro = state.NewID()
			hcfg.LocalIntroSecret = a.localIntro
		}
	}
	// The jobs API serves the cluster's status, agent and operator
	// endpoints, and names the local client in /v1/agent/self.
	if hcfg.Forwarder != nil {
		jcfg.Cluster = hcfg.Forwarder
	}
	if hcfg.Client != nil {
		jcfg.Client = hcfg.Client
	}
	srv, err := schedhttp.New(hcfg)
	if err != nil {
		return nil, err
	}
	a.metrics.reg.MustRegister(srv.Collectors()...)
	var rt *leader.Runtime
	if a.sched != nil {
		rt = a.sched.rt
	}
	a.registerServerMetrics(a.metrics, rt)
	// The jobs API (/v1) and the management API (/api/v2) mount on the
	// HTTP core; none of the three imports another.
	a.jobsLocal = jobs.Mount(srv, jcfg)
	mgmthttp.New(srv, mgmthttp.Config{RateLimit: cfg.ManagementAPI.RateLimit, MaxStateBytes: cfg.ManagementAPI.MaxStateBytes})
	// Leader duties, started in this order on gaining leadership and
	// stopped in reverse on losing it. Later issues append here.
	a.leader = newLeadership(a, append(append(a.clusterServices(), a.schedulerServices()...), a.runServices()...))

	a.lis, err = net.Listen("tcp", cfg.HTTPAddr())
	if err != nil {
		return nil, fmt.Errorf("http listener: %w", err)
	}
	// Requests run under a context that Shutdown cancels first, so parked
	// blocking queries return at once instead of holding the drain open.
	reqCtx, cancelReqs := context.WithCancel(context.Background())
	a.cancelReqs = cancelReqs
	lim := cfg.Limits
	a.lis = schedhttp.LimitConnsPerClient(a.lis, lim.HTTPMaxConnsPerClient)
	a.lis = a.serveTLS(a.lis)
	a.http = &http.Server{
		Handler:           schedhttp.WithTimeouts(ui.Wrap(srv.Handler()), schedhttp.Timeouts{Read: lim.HTTPReadTimeout, Write: lim.HTTPWriteTimeout}),
		ReadHeaderTimeout: lim.HTTPReadHeaderTimeout,
		IdleTimeout:       lim.HTTPIdleTimeout,
		MaxHeaderBytes:    lim.HTTPMaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return reqCtx }, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	if cfg.Client.Enabled {
		if err := a.newClient(); err != nil {
			return nil, err
		}
	}
	if err := a.startGossip(); err != nil {
		return nil, err
	}
	return a, nil
}

// Start serves HTTP, follows leadership in the background and starts the
// client.
func (a *Agent) Start() {
	a.started = true
	a.logExposure() // exposure.go: one warning per open door, none in -dev
	memCtx, stopMemory := context.WithCancel(context.Background())
	a.stopMemory = stopMemory
	go releaseMemory(memCtx, memoryReleaseInterval, a.log)
	if a.leader != nil {
		go a.leader.run()
	}
	a.startCluster()
	go func() {
		defer close(a.serveDone)
		if err := a.http.Serve(a.lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("http server stopped", "error", err)
		}
	}()
	if a.client != nil {
		if err := a.client.Start(); err != nil {
			a.log.Error("client did not start", "error", err)
		}
	}
}

// HTTPAddr is the address the HTTP API listens on.
func (a *Agent) HTTPAddr() string { return a.lis.Addr().String() }

// HTTPURL is the base URL of the HTTP API: https:// when it serves TLS
// (tls.http on, servers and client-only agents alike).
func (a *Agent) HTTPURL() string {
	if a.httpServeTLS != nil {
		return "https://" + a.HTTPAddr()
	}
	return "http://" + a.HTTPAddr()
}

// serversScheme is the scheme of the servers' HTTP ports.
func (a *Agent) serversScheme() string {
	if a.cfg.TLS.HTTP {
		return "https"
	}
	return "http"
}

// serveTLS wraps the HTTP listener in TLS when tls.http is on. The
// per-client connection cap below it counts TCP connections, before any
// handshake; http.Server bounds the handshake by its header timeout.
func (a *Agent) serveTLS(lis net.Listener) net.Listener {
	if a.httpServeTLS == nil {
		return lis
	}
	return tls.NewListener(lis, a.httpServeTLS)
}

// nodeTLS is the config for proxying to nodes' agents over HTTPS, nil
// without tls.http.
func (a *Agent) nodeTLS() *tls.Config {
	if a.tlsKeys == nil {
		return nil
	}
	return a.cfg.TLS.nodeTLS(a.tlsKeys, a.cfg.Region)
}

// ReloadTLS reads the tls block's certificate, key and CA files again
// (sched agent does on SIGHUP). New connections of every kind — raft,
// HTTPS served and dialed — use them; open connections keep theirs. On an
// error the files in use stay in use. Without TLS it does nothing.
func (a *Agent) ReloadTLS() error {
	if a.tlsKeys == nil {
		return nil
	}
	if err := a.tlsKeys.Reload(); err != nil {
		return err
	}
	if leaf, err := a.tlsKeys.Leaf(); err == nil {
		a.log.Info("TLS certificates reloaded", "subject", leaf.Subject.CommonName, "not_after", leaf.NotAfter)
	}
	return nil
}

// Store is the agent's state store (for tests and in-process tools).
func (a *Agent) Store() *store.Store { return a.store }

// WaitForLeader blocks until the agent's raft node knows a leader. A
// client-only agent has none to wait for.
func (a *Agent) WaitForLeader(ctx context.Context) error {
	if a.node == nil {
		return nil
	}
	return a.node.WaitForLeader(ctx)
}

// Shutdown stops the client (which sends its last status updates while
// the server still serves), then stops serving (letting in-flight
// requests finish for a few seconds), then stops raft, which flushes and
// closes the data dir. It is safe to call more than once.
func (a *Agent) Shutdown() error {
	a.shutdownOnce.Do(func() {
		var errs []error
		if a.stopMemory != nil {
			a.stopMemory()
		}
		if a.client != nil {
			if err := a.client.Shutdown(); err != nil {
				errs = append(errs, fmt.Errorf("client shutdown: %w", err))
			}
			if a.dockerDriver != nil {
				a.dockerDriver.Shutdown()
			}
			if a.execDriver != nil {
				a.execDriver.Shutdown()
			}
		}
		if a.cancelReqs != nil {
			a.cancelReqs()
		}
		if a.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := a.http.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("http shutdown: %w", err))
			}
			cancel()
		}
		if a.started {
			<-a.serveDone
		} else if a.lis != nil {
			a.lis.Close()
		}
		if a.started && a.leader != nil {
			a.leader.stop()
		}
		a.stopCluster()
		if a.node != nil && a.started {
			// A restart then restores this snapshot rather than replaying
			// the log since the last one (a crash still replays it).
			if err := a.node.SnapshotIfBehind(shutdownSnapshotEntries); err != nil {
				a.log.Warn("no snapshot at shutdown: the next start replays the log", "error", err)
			}
		}
		if a.node != nil {
			if err := a.node.Shutdown(); err != nil {
				errs = append(errs, fmt.Errorf("raft shutdown: %w", err))
			}
		}
		if a.tmpDir != "" {
			os.RemoveAll(a.tmpDir)
		}
		a.shutdownErr = errors.Join(errs...)
	})
	return a.shutdownErr
}

// shutdownSnapshotEntries is how many entries applied since the last
// snapshot make a graceful shutdown take one (raft_snapshot_threshold
// lets up to 8,192 accumulate). A replayed entry is decoded and applied
// again, a plan's placements one by one, where a snapshot restores the
// same allocations from compact records; fewer entries than this replay
// in about a second at most, not worth a snapshot's write.
const shutdownSnapshotEntries = 1024

// serverID returns the server's raft ID, made once and kept in the data dir
// so that a restart is the same server.
func serverID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, "server", "node-id")
	if b, err := os.ReadFile(path); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read server ID: %w", err)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	id := hex.EncodeToString(b[:])
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write server ID: %w", err)
	}
	return id, nil
}
