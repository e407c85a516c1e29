package state

// AgentSecurity is the "security" object of GET /v1/agent/self: the doors
// the agent's configuration leaves open to whoever reaches its ports (raft
// without mutual TLS, gossip without a key, ACLs off, …), each with its
// fix. The agent logs one warning per finding at start, unless it runs in
// -dev; `sched operator doctor` prints them.
type AgentSecurity struct {
	// DevMode is true for a -dev agent, which reports its findings here
	// but does not log them: it is meant for a laptop.
	DevMode bool
	// Findings are the open doors, most severe first; empty (never null)
	// when there are none.
	Findings []SecurityFinding
}

// Severities of a SecurityFinding, most severe first.
const (
	// SeverityHigh: a stranger on the network can take or stall the
	// cluster, or read and change what it runs.
	SeverityHigh = "high"
	// SeverityMedium: secrets or code execution are exposed to callers
	// who can already reach or use part of the cluster.
	SeverityMedium = "medium"
	// SeverityLow: defence in depth the production checklist asks for.
	SeverityLow = "low"
)

// SecurityFinding is one open door of an agent's configuration.
type SecurityFinding struct {
	// ID names the finding, stable across versions (e.g. "raft-tls"), for
	// scripts and alerts.
	ID string
	// Severity is SeverityHigh, SeverityMedium or SeverityLow.
	Severity string
	// Message says what is open and to whom.
	Message string
	// Fix is the configuration (or command) that closes it.
	Fix string
}
