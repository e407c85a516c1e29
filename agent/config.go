package agent

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsimple"
)

// Config is an agent's resolved configuration: defaults, then -dev, then
// each -config file in order, then flags. Every field's zero value is
// replaced by a default in Finish, so a Config built in code needs only the
// fields it cares about.
type Config struct {
	// Name is the server's name and raft ID. Default: the hostname.
	Name string
	// DataDir holds raft's log, stable store and snapshots under
	// server/raft, and (later) allocation directories under client/.
	// Required unless DevMode, which uses a temporary directory.
	DataDir string
	// BindAddr is the address every listener binds to. Default 127.0.0.1.
	BindAddr string
	// Region and Datacenter of this agent. Defaults global and dc1.
	Region     string
	Datacenter string
	Ports      Ports
	// LogLevel is one of trace, debug, info, warn, error. Default info.
	LogLevel string
	Server   ServerConfig
	Client   ClientConfig
	ACL      ACLConfig
	// DevMode runs a single bootstrapped server (and, with the client
	// issue, a client) on a temporary data dir.
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

// ServerConfig configures the server role.
type ServerConfig struct {
	Enabled bool
	// BootstrapExpect is how many servers must meet before the cluster
	// bootstraps. 1 (or dev mode) bootstraps a single server at once.
	BootstrapExpect int
	// RetryJoin lists gossip addresses of other servers.
	RetryJoin []string
	// JobTrackedVersions is how many versions of each job are kept.
	// Default 6.
	JobTrackedVersions int
	// RaftSnapshotThreshold is how many log entries trigger a snapshot.
	// Default 8192.
	RaftSnapshotThreshold int
	// RaftTrailingLogs is how many entries stay in the log after a
	// snapshot. Default 10240.
	RaftTrailingLogs int
}

// ClientConfig configures the client role (the client-agents issue).
type ClientConfig struct {
	Enabled bool
	Servers []string
}

// ACLConfig configures enforcement of ACLs on /v1 (the identity issue).
type ACLConfig struct {
	Enabled bool
}

// DefaultConfig returns the defaults of a production agent.
func DefaultConfig() *Config {
	return &Config{
		BindAddr:   "127.0.0.1",
		Region:     "global",
		Datacenter: "dc1",
		Ports:      Ports{HTTP: 4646, Raft: 4647, Gossip: 4648},
		LogLevel:   "info",
		Server:     ServerConfig{JobTrackedVersions: 6, RaftSnapshotThreshold: 8192, RaftTrailingLogs: 10240},
	}
}

// applyDev turns c into a dev agent: one bootstrapped server on loopback.
func (c *Config) applyDev() {
	c.DevMode = true
	c.Server.Enabled = true
	c.Server.BootstrapExpect = 1
	c.Client.Enabled = true
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
	if c.Server.JobTrackedVersions == 0 {
		c.Server.JobTrackedVersions = d.Server.JobTrackedVersions
	}
	if c.Server.RaftSnapshotThreshold == 0 {
		c.Server.RaftSnapshotThreshold = d.Server.RaftSnapshotThreshold
	}
	if c.Server.RaftTrailingLogs == 0 {
		c.Server.RaftTrailingLogs = d.Server.RaftTrailingLogs
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
	if c.Server.BootstrapExpect < 0 {
		errs = append(errs, fmt.Errorf("server.bootstrap_expect: must not be negative"))
	}
	if c.Server.BootstrapExpect > 1 && !c.DevMode {
		// Gossip discovery arrives with the three-server cluster issue;
		// until then a server can only bootstrap alone.
		errs = append(errs, fmt.Errorf("server.bootstrap_expect = %d: multi-server clusters are not supported yet; use 1", c.Server.BootstrapExpect))
	}
	if c.Server.JobTrackedVersions < 1 {
		errs = append(errs, fmt.Errorf("server.job_tracked_versions: must be at least 1"))
	}
	return errors.Join(errs...)
}

// HTTPAddr is the HTTP listener's address.
func (c *Config) HTTPAddr() string {
	return net.JoinHostPort(c.BindAddr, strconv.Itoa(c.Ports.HTTP))
}

// RaftAddr is raft's transport address.
func (c *Config) RaftAddr() string {
	return net.JoinHostPort(c.BindAddr, strconv.Itoa(c.Ports.Raft))
}

// fileConfig is the HCL shape of a config file. Pointers tell "set to the
// zero value" from "not set", so a later file overrides only what it sets.
type fileConfig struct {
	Name       *string     `hcl:"name,optional"`
	DataDir    *string     `hcl:"data_dir,optional"`
	BindAddr   *string     `hcl:"bind_addr,optional"`
	Region     *string     `hcl:"region,optional"`
	Datacenter *string     `hcl:"datacenter,optional"`
	LogLevel   *string     `hcl:"log_level,optional"`
	Ports      *filePorts  `hcl:"ports,block"`
	Server     *fileServer `hcl:"server,block"`
	Client     *fileClient `hcl:"client,block"`
	ACL        *fileACL    `hcl:"acl,block"`
}

type filePorts struct {
	HTTP   *int `hcl:"http,optional"`
	Raft   *int `hcl:"raft,optional"`
	Gossip *int `hcl:"gossip,optional"`
}

type fileServer struct {
	Enabled               *bool     `hcl:"enabled,optional"`
	BootstrapExpect       *int      `hcl:"bootstrap_expect,optional"`
	RetryJoin             *[]string `hcl:"retry_join,optional"`
	JobTrackedVersions    *int      `hcl:"job_tracked_versions,optional"`
	RaftSnapshotThreshold *int      `hcl:"raft_snapshot_threshold,optional"`
	RaftTrailingLogs      *int      `hcl:"raft_trailing_logs,optional"`
}

type fileClient struct {
	Enabled *bool     `hcl:"enabled,optional"`
	Servers *[]string `hcl:"servers,optional"`
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

func (c *Config) loadHCL(filename string, src []byte) error {
	var f fileConfig
	if err := hclsimple.Decode(filename, src, nil, &f); err != nil {
		var diags hcl.Diagnostics
		if errors.As(err, &diags) {
			return fmt.Errorf("config %s: %s", filename, diags.Error())
		}
		return fmt.Errorf("config %s: %w", filename, err)
	}
	set(&c.Name, f.Name)
	set(&c.DataDir, f.DataDir)
	set(&c.BindAddr, f.BindAddr)
	set(&c.Region, f.Region)
	set(&c.Datacenter, f.Datacenter)
	set(&c.LogLevel, f.LogLevel)
	if p := f.Ports; p != nil {
		set(&c.Ports.HTTP, p.HTTP)
		set(&c.Ports.Raft, p.Raft)
		set(&c.Ports.Gossip, p.Gossip)
	}
	if s := f.Server; s != nil {
		set(&c.Server.Enabled, s.Enabled)
		set(&c.Server.BootstrapExpect, s.BootstrapExpect)
		set(&c.Server.RetryJoin, s.RetryJoin)
		set(&c.Server.JobTrackedVersions, s.JobTrackedVersions)
		set(&c.Server.RaftSnapshotThreshold, s.RaftSnapshotThreshold)
		set(&c.Server.RaftTrailingLogs, s.RaftTrailingLogs)
	}
	if cl := f.Client; cl != nil {
		set(&c.Client.Enabled, cl.Enabled)
		set(&c.Client.Servers, cl.Servers)
	}
	if a := f.ACL; a != nil {
		set(&c.ACL.Enabled, a.Enabled)
	}
	return nil
}

func set[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}
