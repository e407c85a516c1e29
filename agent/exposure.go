package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/schedhq/sched/state"
)

// An agent's exposure is what its configuration leaves open to whoever
// reaches its ports: the production checklist of docs/security.md turned
// around. A production agent logs one warning per open door at start and
// still starts, as Nomad does; -dev logs none. Both report them under
// "security" in GET /v1/agent/self, which `sched operator doctor` reads.

// hostFacts are what securityFindings needs beyond the configuration.
type hostFacts struct {
	// SavedKeyring: a keyring rotation saved its keys in the data dir;
	// gossip starts encrypted with them even without server.encrypt.
	SavedKeyring bool
	// Root: the agent runs as uid 0, so raw_exec tasks may run as any
	// user its policy lets through.
	Root bool
}

// currentHostFacts reads hostFacts for cfg on this machine.
func currentHostFacts(cfg *Config) hostFacts {
	h := hostFacts{Root: os.Geteuid() == 0}
	if cfg.DataDir != "" {
		_, err := os.Stat(filepath.Join(cfg.DataDir, "server", keyringFile))
		h.SavedKeyring = err == nil
	}
	return h
}

// securityReport is the "security" object of /v1/agent/self for cfg.
func securityReport(cfg *Config, h hostFacts) *state.AgentSecurity {
	return &state.AgentSecurity{DevMode: cfg.DevMode, Findings: securityFindings(cfg, h)}
}

// securityFindings lists the doors cfg leaves open, most severe first
// (the order below within a severity), never nil. It is pure: the same
// config and facts give the same findings, in -dev as in production.
func securityFindings(cfg *Config, h hostFacts) []state.SecurityFinding {
	out := []state.SecurityFinding{}
	add := func(id, severity, msg, fix string) {
		out = append(out, state.SecurityFinding{ID: id, Severity: severity, Message: msg, Fix: fix})
	}
	srv, cl, tlsc := cfg.Server, cfg.Client, cfg.TLS
	if srv.Enabled {
		if !tlsc.RPC {
			add("raft-tls", state.SeverityHigh,
				fmt.Sprintf("the raft port (%s) takes any TCP peer: whoever reaches it can stall every write by claiming a higher term, and the leader makes a server that gossip finds a voter, receiving the whole state, without asking for a certificate", cfg.RaftAddr()),
				`tls { rpc = true, ca_file = "…", cert_file = "…", key_file = "…" } on every server, with certificates carrying server.`+cfg.Region+`.sched (sched tls ca create; sched tls cert create -server)`)
		}
		// -dev does not gossip.
		if !cfg.DevMode && srv.Encrypt == "" && !h.SavedKeyring {
			msg := fmt.Sprintf("gossip (port %d) is neither encrypted nor authenticated: whoever reaches it can join the server pool", cfg.Ports.Gossip)
			if !tlsc.RPC {
				msg += " and, without raft TLS, be added as a voter"
			}
			add("gossip-key", state.SeverityHigh, msg,
				`server { encrypt = "<key>" }, the same key on every server (sched operator gossip keyring generate); turning it on takes a restart of every server`)
		}
		if !cfg.ACL.Enabled {
			add("acl-disabled", state.SeverityHigh,
				fmt.Sprintf("ACLs are off: every /v1 endpoint (jobs, allocations, exec, nodes, snapshots, raft peers) answers anyone who reaches the HTTP port (%s)", cfg.HTTPAddr()),
				"acl { enabled = true } on every server, then sched acl bootstrap once; hand out namespace-scoped tokens")
		}
	}
	if cl.Enabled && cl.RawExec.Enabled && h.Root && !slices.Contains(cl.RawExec.DeniedUsers, "root") {
		add("raw-exec-root", state.SeverityHigh,
			"raw_exec may run tasks as root: the agent runs as root and client.raw_exec.denied_users does not list root, so a job that names user root owns the node",
			`client { raw_exec { default_user = "nobody", denied_users = ["root"] } } (the defaults outside -dev)`)
	}
	if !tlsc.HTTP {
		msg := fmt.Sprintf("the HTTP port (%s) serves plain HTTP: tokens, node secrets and jobs (their env and templates) cross the network in clear", cfg.HTTPAddr())
		if !srv.Enabled {
			msg = fmt.Sprintf("the HTTP port (%s) serves plain HTTP: this node's secret, its allocations and the logs, files and exec sessions servers relay to it cross the network in clear", cfg.HTTPAddr())
		}
		add("http-tls", state.SeverityMedium, msg,
			`tls { http = true, ca_file = "…", cert_file = "…", key_file = "…" } on every agent, servers and clients (sched tls cert create -server | -client)`)
	}
	if (tlsc.RPC || tlsc.HTTP) && !tlsc.verifyHostname() {
		add("verify-server-hostname", state.SeverityMedium,
			"tls.verify_server_hostname = false: any certificate of the CA, a client agent's included, is taken for a server's on raft, forwarding and the servers' HTTPS",
			"drop verify_server_hostname = false (the default is true) and give servers certificates carrying server."+cfg.Region+".sched")
	}
	if cl.Enabled && cl.RawExec.Enabled {
		who := "as the agent's user"
		if h.Root {
			who = "as any user a task names that client.raw_exec.denied_users does not list"
		}
		add("raw-exec", state.SeverityMedium,
			"raw_exec is on: whoever may submit a job runs code on this node without isolation, "+who,
			"client { raw_exec { enabled = false } } unless job submitters are trusted with code on the nodes")
	}
	if cl.Enabled && cl.RawExec.Enabled && h.Root && !cl.Users.Dynamic {
		add("shared-workload-user", state.SeverityMedium,
			"client.users.dynamic = false: every raw_exec task that names no user runs as "+cl.RawExec.DefaultUser+", so one allocation's tasks may signal another's processes and read what they leave readable",
			"client { users { dynamic = true } } (the default outside -dev): each allocation runs as a uid of its own")
	}
	if srv.Enabled && cfg.EnableDebug && !cfg.ACL.Enabled {
		add("enable-debug", state.SeverityLow,
			"enable_debug with ACLs off: /v1/agent/pprof serves CPU profiles and execution traces, up to 300 s of work each, to anyone who reaches the HTTP port",
			"drop enable_debug (with ACLs on, tokens with agent:write get profiles without it)")
	}
	if srv.Enabled && tlsc.HTTP && !tlsc.VerifyHTTPSClient {
		add("verify-https-client", state.SeverityLow,
			"tls.verify_https_client is off: callers without a certificate of the CA reach the API over HTTPS (tokens still apply)",
			"tls { verify_https_client = true } on every server; the CLI then presents -client-cert/-client-key (sched tls cert create -cli)")
	}
	slices.SortStableFunc(out, func(a, b state.SecurityFinding) int { return severityRank(a.Severity) - severityRank(b.Severity) })
	return out
}

// severityRank orders severities, most severe first.
func severityRank(s string) int {
	switch s {
	case state.SeverityHigh:
		return 0
	case state.SeverityMedium:
		return 1
	}
	return 2
}

// logExposure logs one warning per open door, each with its fix; -dev
// logs none (its findings still show in /v1/agent/self).
func (a *Agent) logExposure() {
	if a.security == nil || a.security.DevMode {
		return
	}
	for _, f := range a.security.Findings {
		a.log.Warn("open door: "+f.Message, "finding", f.ID, "severity", f.Severity, "fix", f.Fix)
	}
}
