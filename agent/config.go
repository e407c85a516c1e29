package agent

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsimple"

	"github.com/schedhq/sched/http/mgmt"
	"github.com/schedhq/sched/scheduler/leader"
	"github.com/schedhq/sched/state"
)

// Config is an agent's resolved configuration: defaults, then -dev, then
// each -config file in order, then flags. Every field's zero value is
// replaced by a default in Finish, so a Config built in code needs only the
// fields it cares about.
type Config struct {
	// Name is the server's name and raft ID. Default: the hostname.
	Name string
	// DataDir holds raft's log, stable store and snapshots under
	// server/raft, and the client's node ID, state and allocation
	// directories under client/.
	// Required unless DevMode, which uses a temporary directory.
	DataDir string
	// BindAddr is the address every listener binds to. Default 127.0.0.1.
	BindAddr string
	// Region and Datacenter of this agent. Defaults global and dc1.
	Region     string
	Datacenter string
	Ports      Ports
	// Advertise are the addresses other servers and clients reach this
	// agent at, when they differ from the bind address (NAT, containers,
	// bind_addr = "0.0.0.0").
	Advertise Advertise
	// LogLevel is one of trace, debug, info, warn, error. Default info.
	LogLevel string
	// EnableDebug serves the runtime profiles at /v1/agent/pprof/ without
	// ACLs (with ACLs on, agent:write tokens get them either way). -dev
	// turns it on.
	EnableDebug bool
	// LogFormat is "text" (key=value lines) or "json" (one object per
	// line), for every log line of the agent: its own, raft's and
	// gossip's. Default text.
	LogFormat string
	Server    ServerConfig
	Client    ClientConfig
	ACL       ACLConfig
	// ManagementAPI configures the management API (/api/v2).
	ManagementAPI ManagementAPIConfig
	// Limits bounds what HTTP clients may hold (limits_config.go).
	Limits LimitsConfig
	// TLS secures the raft port (tls_config.go).
	TLS TLSConfig
	// DevMode runs a single bootstrapped server and a client on a
	// temporary data dir.
	DevMode bool
}

// Ports are the agent's listening ports.
type Ports struct {
	// HTTP serves both APIs. Default 4646.
	HTTP int
	// Raft is raft's TCP transport. Default 4647.
	Raft int
	// Gossip is memberlist's TCP and UDP port. Default 4648.
	Gossip int
}

// Advertise holds advertised addresses: "host" or "host:port", the port
// defaulting to the matching entry of Ports. Empty means the bind address,
// or, when that is a wildcard (0.0.0.0 or ::), the machine's first private
// IPv4 address.
type Advertise struct {
	HTTP   string
	Raft   string
	Gossip string
}

// ServerConfig configures the server role.
type ServerConfig struct {
	Enabled bool
	// BootstrapExpect is how many servers must meet through gossip before
	// the cluster bootstraps. 0 or 1 (and dev mode) bootstrap a single
	// server at once. A server added to a running cluster sets the
	// cluster's value: it finds servers that already have Raft state, so
	// it waits to be added by the leader instead. A server with Raft state
	// never bootstraps again.
	BootstrapExpect int
	// RetryJoin lists gossip addresses ("host" or "host:port", port 4648 by
	// default) of other servers, tried at start and every RetryInterval
	// until one answers.
	RetryJoin []string
	// RetryInterval is the wait between join attempts. Default 30s.
	RetryInterval time.Duration
	// RetryMax is how many join attempts are made before giving up (with
	// an error in the log; the server keeps running and can still be
	// joined with `sched server join`). 0, the default, retries for ever.
	RetryMax int
	// Encrypt is the base64 gossip encryption key (16, 24 or 32 bytes,
	// e.g. `openssl rand -base64 32`); every server needs the same one.
	// Empty means gossip travels in clear.
	Encrypt string
	// FailedServerGrace is how long a server must have failed in gossip
	// before the leader removes it from the Raft configuration (and only
	// while quorum stays safe). Default 5m.
	FailedServerGrace time.Duration
	// LeaveOnTerminate makes SIGINT/SIGTERM leave the cluster gracefully
	// (the leader then removes this server from the Raft configuration)
	// instead of just stopping. Default false: a stopped server is
	// expected back.
	LeaveOnTerminate bool
	// JobTrackedVersions is how many versions of each job are kept.
	// Default 6.
	JobTrackedVersions int
	// EventBufferSize is how many applied log entries' events the event
	// stream keeps for subscribers resuming with index=N; 0 means
	// store.DefaultEventBufferSize. The kept objects stay in memory.
	EventBufferSize int
	// MaxGroupCount bounds a task group's count, MaxJobCount the sum of a
	// job's group counts (the allocations one evaluation may place), and
	// MaxJobSize a job's JSON encoding in bytes. Zero means the defaults:
	// 10,000, 100,000 and 4 MiB (state.JobLimits).
	MaxGroupCount int
	MaxJobCount   int
	MaxJobSize    int
	// RaftSnapshotThreshold is how many log entries trigger a snapshot.
	// Default 8192.
	RaftSnapshotThreshold int
	// RaftTrailingLogs is how many entries stay in the log after a
	// snapshot. Default 10240.
	RaftTrailingLogs int
	// RaftSnapshotInterval is how often the snapshot threshold is checked.
	// Default 2m.
	RaftSnapshotInterval time.Duration
	// RaftMultiplier scales Raft's timing (heartbeat, election and leader
	// lease timeouts; 500ms, 500ms and 250ms at 1) for slow or lossy
	// networks, trading failover time for fewer needless elections. 1 to
	// 10, default 1.
	RaftMultiplier int

	// The scheduler's tuning, used while this server leads; the keys
	// are named as in Nomad.

	// NumSchedulers is the number of scheduling workers, 0 to 128. 0, the
	// default, means three per CPU core, at least 6 and at most 64
	// (leader.DefaultWorkers).
	NumSchedulers int
	// NumSmallSchedulers is the number of further workers that take only
	// the evaluations of small jobs (service and batch jobs of at most
	// leader.SmallJobAllocs allocations), 0 to 512: such an evaluation's
	// worker mostly waits for its plan's Raft commit, and more of them
	// at once share each disk write. nil, the default, means thirteen per
	// CPU core, at least 26 and at most 256 (leader.DefaultSmallWorkers);
	// 0 means none. Not in Nomad.
	NumSmallSchedulers *int
	// HeartbeatGrace is added to a node's heartbeat TTL before the leader
	// marks the node down, for network and client delays. Default 10s
	// (scheduler.DefaultHeartbeatGrace).
	HeartbeatGrace time.Duration
	// MinHeartbeatTTL is the least heartbeat TTL handed to a node.
	// Default 10s (scheduler.DefaultMinHeartbeatTTL).
	MinHeartbeatTTL time.Duration
	// MaxHeartbeatsPerSecond caps the heartbeats of all nodes together:
	// TTLs grow with the number of nodes to stay under it. Greater than 0;
	// default 50 (scheduler.DefaultMaxHeartbeatsPerSecond).
	MaxHeartbeatsPerSecond float64
	// FailoverHeartbeatTTL is the TTL every node gets when a server becomes
	// leader, time to find the new leader before being marked down.
	// Default 5m (scheduler.DefaultFailoverHeartbeatTTL).
	FailoverHeartbeatTTL time.Duration
	// EvalNackTimeout is how long a worker may hold an evaluation without
	// acking or nacking it before the broker takes it back and delivers it
	// again. Default 60s (scheduler.DefaultUnackedTimeout).
	EvalNackTimeout time.Duration
	// EvalDeliveryLimit is how many times an evaluation is delivered
	// before it is marked failed. At least 1; default 3
	// (scheduler.DefaultDeliveryLimit).
	EvalDeliveryLimit int
	// JobGCInterval is the time between two garbage collections (of jobs,
	// evaluations, nodes and deployments alike). Default 5m
	// (scheduler.DefaultGCInterval).
	JobGCInterval time.Duration
	// JobGCThreshold is the age after which a dead job is purged.
	// Default 4h (scheduler.DefaultJobGCThreshold).
	JobGCThreshold time.Duration
	// EvalGCThreshold is the age after which a terminal evaluation of a
	// service or system job is collected with its allocations. Default 1h
	// (scheduler.DefaultEvalGCThreshold).
	EvalGCThreshold time.Duration
	// BatchEvalGCThreshold is the same for batch and sysbatch jobs.
	// Default 4h (scheduler.DefaultBatchEvalGCThreshold).
	BatchEvalGCThreshold time.Duration
	// NodeGCThreshold is how long a node stays down before it is deleted.
	// Default 24h (scheduler.DefaultNodeGCThreshold).
	NodeGCThreshold time.Duration
	// DeploymentGCThreshold is the age after which a finished deployment
	// is deleted. Default 1h (scheduler.DefaultDeploymentGCThreshold).
	DeploymentGCThreshold time.Duration
	// ACLTokenGCThreshold is how long an expired ACL token is kept before
	// it is deleted. Default 1h (scheduler.DefaultACLTokenGCThreshold).
	ACLTokenGCThreshold time.Duration
}

// maxNumSchedulers bounds server.num_schedulers, as Nomad does.
const maxNumSchedulers = 128

// maxNumSmallSchedulers bounds server.num_small_schedulers.
const maxNumSmallSchedulers = 512

// ManagementAPIConfig configures the management API (/api/v2).
type ManagementAPIConfig struct {
	// RateLimit is the requests per second admitted per token (per client
	// address without one), on each server. Default 30
	// (http/mgmt DefaultRateLimit); negative (-1) disables the limit.
	RateLimit float64
	// MaxStateBytes bounds one Terraform state file (and one JSON state)
	// of a state version; 0 means 16 MiB, at most 24 MiB.
	MaxStateBytes int
}

// ACLConfig configures enforcement of ACLs on /v1 (the identity issue).
type ACLConfig struct {
	Enabled bool
}

// JobLimits are the server block's bounds on jobs.
func (s *ServerConfig) JobLimits() state.JobLimits {
	return state.JobLimits{MaxGroupCount: s.MaxGroupCount, MaxJobCount: s.MaxJobCount, MaxJobBytes: s.MaxJobSize}.WithDefaults()
}

// DefaultConfig returns the defaults of a production agent.
func DefaultConfig() *Config {
	return &Config{
		BindAddr:   "127.0.0.1",
		Region:     "global",
		Datacenter: "dc1",
		Ports:      Ports{HTTP: 4646, Raft: 4647, Gossip: 4648},
		LogLevel:   "info",
		LogFormat:  "text",
		Server: ServerConfig{
			JobTrackedVersions:    6,
			RaftSnapshotThreshold: 8192,
			RaftTrailingLogs:      10240,
			RaftSnapshotInterval:  2 * time.Minute,
			RetryInterval:         30 * time.Second,
			FailedServerGrace:     5 * time.Minute,
			RaftMultiplier:        1,

			HeartbeatGrace:         leader.DefaultHeartbeatGrace,
			MinHeartbeatTTL:        leader.DefaultMinHeartbeatTTL,
			MaxHeartbeatsPerSecond: leader.DefaultMaxHeartbeatsPerSecond,
			FailoverHeartbeatTTL:   leader.DefaultFailoverHeartbeatTTL,
			EvalNackTimeout:        leader.DefaultUnackedTimeout,
			EvalDeliveryLimit:      leader.DefaultDeliveryLimit,
			JobGCInterval:          leader.DefaultGCInterval,
			JobGCThreshold:         leader.DefaultJobGCThreshold,
			EvalGCThreshold:        leader.DefaultEvalGCThreshold,
			BatchEvalGCThreshold:   leader.DefaultBatchEvalGCThreshold,
			NodeGCThreshold:        leader.DefaultNodeGCThreshold,
			DeploymentGCThreshold:  leader.DefaultDeploymentGCThreshold,
			ACLTokenGCThreshold:    leader.DefaultACLTokenGCThreshold,
		},
		ManagementAPI: ManagementAPIConfig{RateLimit: mgmt.DefaultRateLimit},
	}
}

// applyDev turns c into a dev agent: one bootstrapped server on loopback.
func (c *Config) applyDev() {
	c.DevMode = true
	c.Server.Enabled = true
	c.Server.BootstrapExpect = 1
	c.Client.Enabled = true
	c.Client.RawExec = devRawExec() // client_config.go; a config file may still turn it off
	c.Client.Users = devUsers()     // client_config.go: tasks run as the agent's user
	c.EnableDebug = true
}

// Finish fills what is still unset and checks the result.
func (c *Config) Finish() error {
	d := DefaultConfig()
	if c.Name == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "sched"
		}
		c.Name = h
	}
	if c.BindAddr == "" {
		c.BindAddr = d.BindAddr
	}
	if c.Region == "" {
		c.Region = d.Region
	}
	if c.Datacenter == "" {
		c.Datacenter = d.Datacenter
	}
	if c.Ports.HTTP == 0 {
		c.Ports.HTTP = d.Ports.HTTP
	}
	if c.Ports.Raft == 0 {
		c.Ports.Raft = d.Ports.Raft
	}
	if c.Ports.Gossip == 0 {
		c.Ports.Gossip = d.Ports.Gossip
	}
	if c.LogLevel == "" {
		c.LogLevel = d.LogLevel
	}
	if c.LogFormat == "" {
		c.LogFormat = d.LogFormat
	}
	if c.Server.JobTrackedVersions == 0 {
		c.Server.JobTrackedVersions = d.Server.JobTrackedVersions
	}
	if c.Server.RaftSnapshotThreshold == 0 {
		c.Server.RaftSnapshotThreshold = d.Server.RaftSnapshotThreshold
	}
	if c.Server.RaftTrailingLogs == 0 {
		c.Server.RaftTrailingLogs = d.Server.RaftTrailingLogs
	}
	for _, k := range serverDurations {
		if v := k.field(&c.Server); *v == 0 {
			*v = *k.field(&d.Server)
		}
	}
	if c.Server.RaftMultiplier == 0 {
		c.Server.RaftMultiplier = d.Server.RaftMultiplier
	}
	// NumSchedulers stays 0 when unset: the scheduler runs three workers
	// per CPU core, at least 6.
	if c.Server.MaxHeartbeatsPerSecond == 0 {
		c.Server.MaxHeartbeatsPerSecond = d.Server.MaxHeartbeatsPerSecond
	}
	if c.Server.EvalDeliveryLimit == 0 {
		c.Server.EvalDeliveryLimit = d.Server.EvalDeliveryLimit
	}
	if c.ManagementAPI.RateLimit == 0 {
		c.ManagementAPI.RateLimit = d.ManagementAPI.RateLimit
	}

	var errs []error
	if !c.Server.Enabled && !c.Client.Enabled {
		errs = append(errs, errors.New("neither server nor client is enabled: set server { enabled = true } or use -dev"))
	}
	if c.DataDir == "" && !c.DevMode {
		errs = append(errs, errors.New("data_dir is required (or use -dev)"))
	}
	if net.ParseIP(c.BindAddr) == nil {
		errs = append(errs, fmt.Errorf("bind_addr: %q is not an IP address", c.BindAddr))
	}
	for name, p := range map[string]int{"http": c.Ports.HTTP, "raft": c.Ports.Raft, "gossip": c.Ports.Gossip} {
		if p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("ports.%s: %d is not a port number", name, p))
		}
	}
	switch c.LogLevel {
	case "trace", "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log_level: %q is not one of trace, debug, info, warn, error", c.LogLevel))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("log_format: %q is not one of text, json", c.LogFormat))
	}
	if c.Server.BootstrapExpect < 0 {
		errs = append(errs, fmt.Errorf("server.bootstrap_expect: must not be negative"))
	}
	if c.Server.BootstrapExpect > 1 && c.DevMode {
		errs = append(errs, fmt.Errorf("server.bootstrap_expect = %d: dev mode runs a single server; use 1 or drop -dev", c.Server.BootstrapExpect))
	}
	if _, err := c.EncryptKey(); err != nil {
		errs = append(errs, err)
	}
	for _, k := range serverDurations {
		if *k.field(&c.Server) < 0 {
			errs = append(errs, fmt.Errorf("server.%s: must not be negative", k.name))
		}
	}
	if n := c.Server.NumSchedulers; n < 0 || n > maxNumSchedulers {
		errs = append(errs, fmt.Errorf("server.num_schedulers: %d is not between 0 and %d", n, maxNumSchedulers))
	}
	if p := c.Server.NumSmallSchedulers; p != nil && (*p < 0 || *p > maxNumSmallSchedulers) {
		errs = append(errs, fmt.Errorf("server.num_small_schedulers: %d is not between 0 and %d", *p, maxNumSmallSchedulers))
	}
	if r := c.Server.MaxHeartbeatsPerSecond; !(r > 0) || math.IsInf(r, 1) { // NaN fails r > 0
		errs = append(errs, fmt.Errorf("server.max_heartbeats_per_second: %v is not a number greater than 0", r))
	}
	if c.Server.EvalDeliveryLimit < 1 {
		errs = append(errs, fmt.Errorf("server.eval_delivery_limit: %d is less than 1", c.Server.EvalDeliveryLimit))
	}
	if r := c.ManagementAPI.RateLimit; math.IsNaN(r) || math.IsInf(r, 0) {
		errs = append(errs, fmt.Errorf("management_api.rate_limit: %v is not a finite number", r))
	}
	if m := c.Server.RaftMultiplier; m < 1 || m > 10 {
		errs = append(errs, fmt.Errorf("server.raft_multiplier: %d is not between 1 and 10", m))
	}
	if c.Server.RetryMax < 0 {
		errs = append(errs, errors.New("server.retry_max: must not be negative"))
	}
	for i, j := range c.Server.RetryJoin {
		if strings.TrimSpace(j) == "" {
			errs = append(errs, fmt.Errorf("server.retry_join[%d]: empty address", i))
		}
	}
	errs = append(errs, c.resolveAdvertise()...)
	if c.Server.EventBufferSize < 0 || c.Server.EventBufferSize > 65536 {
		errs = append(errs, fmt.Errorf("server.event_buffer_size: %d is not within 0..65536", c.Server.EventBufferSize))
	}
	if c.Server.JobTrackedVersions < 1 {
		errs = append(errs, fmt.Errorf("server.job_tracked_versions: must be at least 1"))
	}
	for _, k := range []struct {
		name string
		v    int
	}{{"max_group_count", c.Server.MaxGroupCount}, {"max_job_count", c.Server.MaxJobCount}, {"max_job_size", c.Server.MaxJobSize}} {
		if k.v < 0 {
			errs = append(errs, fmt.Errorf("server.%s: must not be negative (0 means the default)", k.name))
		}
	}
	errs = append(errs, c.Client.finish(c.Server.Enabled)...) // client_config.go
	if err := c.Limits.finish(c.DevMode); err != nil {        // limits_config.go
		errs = append(errs, err)
	}
	if err := c.TLS.finish(); err != nil { // tls_config.go
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// serverDurations are the server block's duration keys: one table for
// parsing, defaults and validation, so a new key cannot miss one of them.
var serverDurations = []struct {
	name  string
	field func(*ServerConfig) *time.Duration
	file  func(*fileServer) *string
}{
	{"raft_snapshot_interval", func(c *ServerConfig) *time.Duration { return &c.RaftSnapshotInterval }, func(f *fileServer) *string { return f.RaftSnapshotInterval }},
	{"retry_interval", func(c *ServerConfig) *time.Duration { return &c.RetryInterval }, func(f *fileServer) *string { return f.RetryInterval }},
	{"failed_server_grace", func(c *ServerConfig) *time.Duration { return &c.FailedServerGrace }, func(f *fileServer) *string { return f.FailedServerGrace }},
	{"heartbeat_grace", func(c *ServerConfig) *time.Duration { return &c.HeartbeatGrace }, func(f *fileServer) *string { return f.HeartbeatGrace }},
	{"min_heartbeat_ttl", func(c *ServerConfig) *time.Duration { return &c.MinHeartbeatTTL }, func(f *fileServer) *string { return f.MinHeartbeatTTL }},
	{"failover_heartbeat_ttl", func(c *ServerConfig) *time.Duration { return &c.FailoverHeartbeatTTL }, func(f *fileServer) *string { return f.FailoverHeartbeatTTL }},
	{"eval_nack_timeout", func(c *ServerConfig) *time.Duration { return &c.EvalNackTimeout }, func(f *fileServer) *string { return f.EvalNackTimeout }},
	{"job_gc_interval", func(c *ServerConfig) *time.Duration { return &c.JobGCInterval }, func(f *fileServer) *string { return f.JobGCInterval }},
	{"job_gc_threshold", func(c *ServerConfig) *time.Duration { return &c.JobGCThreshold }, func(f *fileServer) *string { return f.JobGCThreshold }},
	{"eval_gc_threshold", func(c *ServerConfig) *time.Duration { return &c.EvalGCThreshold }, func(f *fileServer) *string { return f.EvalGCThreshold }},
	{"batch_eval_gc_threshold", func(c *ServerConfig) *time.Duration { return &c.BatchEvalGCThreshold }, func(f *fileServer) *string { return f.BatchEvalGCThreshold }},
	{"node_gc_threshold", func(c *ServerConfig) *time.Duration { return &c.NodeGCThreshold }, func(f *fileServer) *string { return f.NodeGCThreshold }},
	{"deployment_gc_threshold", func(c *ServerConfig) *time.Duration { return &c.DeploymentGCThreshold }, func(f *fileServer) *string { return f.DeploymentGCThreshold }},
	{"acl_token_gc_threshold", func(c *ServerConfig) *time.Duration { return &c.ACLTokenGCThreshold }, func(f *fileServer) *string { return f.ACLTokenGCThreshold }},
}

// HTTPAddr is the HTTP listener's address.
func (c *Config) HTTPAddr() string {
	return net.JoinHostPort(c.BindAddr, strconv.Itoa(c.Ports.HTTP))
}

// RaftAddr is raft's transport address.
func (c *Config) RaftAddr() string {
	return net.JoinHostPort(c.BindAddr, strconv.Itoa(c.Ports.Raft))
}

// GossipAddr is the gossip (memberlist) listener's address, TCP and UDP.
func (c *Config) GossipAddr() string {
	return net.JoinHostPort(c.BindAddr, strconv.Itoa(c.Ports.Gossip))
}

// EncryptKey decodes server.encrypt; nil when gossip encryption is off.
func (c *Config) EncryptKey() ([]byte, error) {
	if c.Server.Encrypt == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(c.Server.Encrypt)
	if err != nil {
		return nil, fmt.Errorf("server.encrypt: not valid base64: %v", err)
	}
	switch len(key) {
	case 16, 24, 32:
		return key, nil
	}
	return nil, fmt.Errorf("server.encrypt: the key is %d bytes; it must be 16, 24 or 32 (try `openssl rand -base64 32`)", len(key))
}

// resolveAdvertise turns each advertised address into host:port, filling
// the defaults documented on Advertise, and reports what cannot work.
func (c *Config) resolveAdvertise() []error {
	var errs []error
	bind := net.ParseIP(c.BindAddr)
	var detected string
	if bind != nil && bind.IsUnspecified() {
		detected = privateIP()
	}
	for _, a := range []struct {
		name string
		dst  *string
		port int
	}{
		{"http", &c.Advertise.HTTP, c.Ports.HTTP},
		{"raft", &c.Advertise.Raft, c.Ports.Raft},
		{"gossip", &c.Advertise.Gossip, c.Ports.Gossip},
	} {
		v := strings.TrimSpace(*a.dst)
		if v == "" {
			switch {
			case bind == nil:
				continue // bind_addr is already reported
			case !bind.IsUnspecified():
				v = c.BindAddr
			case detected != "":
				v = detected
			default:
				errs = append(errs, fmt.Errorf("advertise.%s: bind_addr %s is a wildcard and no private IPv4 address was found to advertise; set advertise { %s = \"<ip>\" }", a.name, c.BindAddr, a.name))
				continue
			}
		}
		host, port, err := net.SplitHostPort(v)
		if err != nil {
			host, port = strings.Trim(v, "[]"), strconv.Itoa(a.port)
		}
		if host == "" {
			errs = append(errs, fmt.Errorf("advertise.%s: %q has no host", a.name, *a.dst))
			continue
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			errs = append(errs, fmt.Errorf("advertise.%s: %q is a wildcard address; others cannot reach it", a.name, *a.dst))
			continue
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("advertise.%s: %q has a bad port", a.name, *a.dst))
			continue
		}
		*a.dst = net.JoinHostPort(host, port)
	}
	return errs
}

// privateIP returns the first private IPv4 address of an up, non-loopback
// interface, or "".
func privateIP() string {
	ifaces, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsPrivate() {
				return n.IP.String()
			}
		}
	}
	return ""
}

// fileConfig is the HCL shape of a config file. Pointers tell "set to the
// zero value" from "not set", so a later file overrides only what it sets.
type fileConfig struct {
	Name          *string            `hcl:"name,optional"`
	DataDir       *string            `hcl:"data_dir,optional"`
	BindAddr      *string            `hcl:"bind_addr,optional"`
	Region        *string            `hcl:"region,optional"`
	Datacenter    *string            `hcl:"datacenter,optional"`
	LogLevel      *string            `hcl:"log_level,optional"`
	EnableDebug   *bool              `hcl:"enable_debug,optional"`
	LogFormat     *string            `hcl:"log_format,optional"`
	Ports         *filePorts         `hcl:"ports,block"`
	Advertise     *fileAdv           `hcl:"advertise,block"`
	Server        *fileServer        `hcl:"server,block"`
	Client        *fileClient        `hcl:"client,block"`
	ACL           *fileACL           `hcl:"acl,block"`
	ManagementAPI *fileManagementAPI `hcl:"management_api,block"`
	Limits        *fileLimits        `hcl:"limits,block"`
	TLS           *fileTLS           `hcl:"tls,block"`
	// Plugins are Nomad's plugin "NAME" { config { ... } } blocks, read
	// as the client block keys they stand for (plugin_config.go).
	Plugins []filePlugin `hcl:"plugin,block"`
}

type filePorts struct {
	HTTP   *int `hcl:"http,optional"`
	Raft   *int `hcl:"raft,optional"`
	Gossip *int `hcl:"gossip,optional"`
}

type fileAdv struct {
	HTTP   *string `hcl:"http,optional"`
	Raft   *string `hcl:"raft,optional"`
	Gossip *string `hcl:"gossip,optional"`
}

type fileServer struct {
	Enabled               *bool     `hcl:"enabled,optional"`
	BootstrapExpect       *int      `hcl:"bootstrap_expect,optional"`
	RetryJoin             *[]string `hcl:"retry_join,optional"`
	JobTrackedVersions    *int      `hcl:"job_tracked_versions,optional"`
	EventBufferSize       *int      `hcl:"event_buffer_size,optional"`
	MaxGroupCount         *int      `hcl:"max_group_count,optional"`
	MaxJobCount           *int      `hcl:"max_job_count,optional"`
	MaxJobSize            *int      `hcl:"max_job_size,optional"`
	RaftSnapshotThreshold *int      `hcl:"raft_snapshot_threshold,optional"`
	RaftTrailingLogs      *int      `hcl:"raft_trailing_logs,optional"`
	RaftSnapshotInterval  *string   `hcl:"raft_snapshot_interval,optional"`
	RaftMultiplier        *int      `hcl:"raft_multiplier,optional"`
	RetryInterval         *string   `hcl:"retry_interval,optional"`
	RetryMax              *int      `hcl:"retry_max,optional"`
	Encrypt               *string   `hcl:"encrypt,optional"`
	FailedServerGrace     *string   `hcl:"failed_server_grace,optional"`
	LeaveOnTerminate      *bool     `hcl:"leave_on_terminate,optional"`

	NumSchedulers          *int     `hcl:"num_schedulers,optional"`
	NumSmallSchedulers     *int     `hcl:"num_small_schedulers,optional"`
	HeartbeatGrace         *string  `hcl:"heartbeat_grace,optional"`
	MinHeartbeatTTL        *string  `hcl:"min_heartbeat_ttl,optional"`
	MaxHeartbeatsPerSecond *float64 `hcl:"max_heartbeats_per_second,optional"`
	FailoverHeartbeatTTL   *string  `hcl:"failover_heartbeat_ttl,optional"`
	EvalNackTimeout        *string  `hcl:"eval_nack_timeout,optional"`
	EvalDeliveryLimit      *int     `hcl:"eval_delivery_limit,optional"`
	JobGCInterval          *string  `hcl:"job_gc_interval,optional"`
	JobGCThreshold         *string  `hcl:"job_gc_threshold,optional"`
	EvalGCThreshold        *string  `hcl:"eval_gc_threshold,optional"`
	BatchEvalGCThreshold   *string  `hcl:"batch_eval_gc_threshold,optional"`
	NodeGCThreshold        *string  `hcl:"node_gc_threshold,optional"`
	DeploymentGCThreshold  *string  `hcl:"deployment_gc_threshold,optional"`
	ACLTokenGCThreshold    *string  `hcl:"acl_token_gc_threshold,optional"`
}

type fileManagementAPI struct {
	RateLimit     *float64 `hcl:"rate_limit,optional"`
	MaxStateBytes *int     `hcl:"max_state_bytes,optional"`
}

type fileACL struct {
	Enabled *bool `hcl:"enabled,optional"`
}

// LoadFile merges the HCL config file at path into c. Unknown keys are
// errors naming the key and its position.
func (c *Config) LoadFile(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	return c.loadHCL(path, src)
}

// loadHCL merges one config file into c. The server and management_api
// blocks are checked whole before anything is merged, so a file they
// refuse leaves c as it was.
func (c *Config) loadHCL(filename string, src []byte) error {
	// Before the parser recurses into it: a file nested too deep would
	// overflow the stack, killing the agent without a word.
	depthCheck := state.CheckHCLDepth
	if strings.HasSuffix(strings.ToLower(filename), ".json") {
		depthCheck = state.CheckHCLJSONDepth // hclsimple parses it as JSON
	}
	if err := depthCheck(filename, src, state.MaxHCLDepth); err != nil {
		return fmt.Errorf("config %w", err)
	}
	var f fileConfig
	if err := hclsimple.Decode(filename, src, nil, &f); err != nil {
		var diags hcl.Diagnostics
		if errors.As(err, &diags) {
			return fmt.Errorf("config %s: %s", filename, diags.Error())
		}
		return fmt.Errorf("config %s: %w", filename, err)
	}
	srv, err := f.Server.mergeInto(c.Server)
	if err != nil {
		return fmt.Errorf("config %s: %w", filename, err)
	}
	mgmt, err := f.ManagementAPI.mergeInto(c.ManagementAPI)
	if err != nil {
		return fmt.Errorf("config %s: %w", filename, err)
	}
	plugins, err := pluginClient(f.Plugins) // plugin_config.go
	if err != nil {
		return fmt.Errorf("config %s: %w", filename, err)
	}
	if plugins != nil {
		// Before the client block, whose own keys win.
		if err := c.Client.merge(plugins); err != nil {
			return fmt.Errorf("config %s: %w", filename, err)
		}
	}
	if cl := f.Client; cl != nil {
		if err := c.Client.merge(cl); err != nil {
			return fmt.Errorf("config %s: %w", filename, err)
		}
	}
	if err := c.Limits.merge(f.Limits); err != nil {
		return fmt.Errorf("config %s: %w", filename, err)
	}
	c.TLS.merge(f.TLS)
	c.Server, c.ManagementAPI = srv, mgmt
	set(&c.Name, f.Name)
	set(&c.DataDir, f.DataDir)
	set(&c.BindAddr, f.BindAddr)
	set(&c.Region, f.Region)
	set(&c.Datacenter, f.Datacenter)
	set(&c.LogLevel, f.LogLevel)
	set(&c.EnableDebug, f.EnableDebug)
	set(&c.LogFormat, f.LogFormat)
	if p := f.Ports; p != nil {
		set(&c.Ports.HTTP, p.HTTP)
		set(&c.Ports.Raft, p.Raft)
		set(&c.Ports.Gossip, p.Gossip)
	}
	if a := f.Advertise; a != nil {
		set(&c.Advertise.HTTP, a.HTTP)
		set(&c.Advertise.Raft, a.Raft)
		set(&c.Advertise.Gossip, a.Gossip)
	}
	if a := f.ACL; a != nil {
		set(&c.ACL.Enabled, a.Enabled)
	}
	return nil
}

// mergeInto returns cur with the keys s sets replaced. Keys whose zero
// would silently mean the default are refused when set to it; the
// remaining range checks are Finish's, which also sees flags and code.
func (s *fileServer) mergeInto(cur ServerConfig) (ServerConfig, error) {
	if s == nil {
		return cur, nil
	}
	if v := s.MaxHeartbeatsPerSecond; v != nil && *v == 0 {
		return cur, errors.New("server.max_heartbeats_per_second: must be greater than 0")
	}
	if v := s.EvalDeliveryLimit; v != nil && *v == 0 {
		return cur, errors.New("server.eval_delivery_limit: must be at least 1")
	}
	for _, k := range serverDurations {
		src := k.file(s)
		if src == nil {
			continue
		}
		v, err := time.ParseDuration(*src)
		if err != nil {
			return cur, fmt.Errorf("server.%s: %q is not a duration with units, such as 30s or 5m", k.name, *src)
		}
		*k.field(&cur) = v
	}
	set(&cur.Enabled, s.Enabled)
	set(&cur.BootstrapExpect, s.BootstrapExpect)
	set(&cur.RetryJoin, s.RetryJoin)
	set(&cur.JobTrackedVersions, s.JobTrackedVersions)
	set(&cur.EventBufferSize, s.EventBufferSize)
	set(&cur.MaxGroupCount, s.MaxGroupCount)
	set(&cur.MaxJobCount, s.MaxJobCount)
	set(&cur.MaxJobSize, s.MaxJobSize)
	set(&cur.RaftSnapshotThreshold, s.RaftSnapshotThreshold)
	set(&cur.RaftTrailingLogs, s.RaftTrailingLogs)
	set(&cur.RetryMax, s.RetryMax)
	set(&cur.RaftMultiplier, s.RaftMultiplier)
	set(&cur.Encrypt, s.Encrypt)
	set(&cur.LeaveOnTerminate, s.LeaveOnTerminate)
	set(&cur.NumSchedulers, s.NumSchedulers)
	if s.NumSmallSchedulers != nil {
		n := *s.NumSmallSchedulers
		cur.NumSmallSchedulers = &n
	}
	set(&cur.MaxHeartbeatsPerSecond, s.MaxHeartbeatsPerSecond)
	set(&cur.EvalDeliveryLimit, s.EvalDeliveryLimit)
	return cur, nil
}

// mergeInto returns cur with the keys m sets replaced. A rate limit of 0
// is refused: it reads as "no requests" or as "no limit", and is neither.
func (m *fileManagementAPI) mergeInto(cur ManagementAPIConfig) (ManagementAPIConfig, error) {
	if m == nil {
		return cur, nil
	}
	if v := m.RateLimit; v != nil && *v == 0 {
		return cur, fmt.Errorf("management_api.rate_limit: 0 is not a limit; leave it unset for the default of %d requests per second per token, or set -1 to disable the limit", mgmt.DefaultRateLimit)
	}
	set(&cur.RateLimit, m.RateLimit)
	if v := m.MaxStateBytes; v != nil && (*v < 1 || *v > mgmt.MaxStateBytesLimit) {
		return cur, fmt.Errorf("management_api.max_state_bytes: %d is not between 1 and %d", *v, mgmt.MaxStateBytesLimit)
	}
	set(&cur.MaxStateBytes, m.MaxStateBytes)
	return cur, nil
}

func set[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}
