package state

// AgentMember is one server of GET /v1/agent/members (and the "member" of
// /v1/agent/self), in the shape Nomad's clients read.
type AgentMember struct {
	// Name is "<name>.<region>", as Nomad names servers.
	Name string
	// Addr and Port are the member's gossip address.
	Addr string
	Port uint16
	// Tags carry the server's metadata: id (its Raft ID), raft_addr,
	// http_addr, region, dc, expect (bootstrap_expect), build, role.
	Tags map[string]string
	// Status is alive, failed or left.
	Status      string
	ProtocolMin uint8
	ProtocolMax uint8
	ProtocolCur uint8
}

// ServerMembers is the answer of GET /v1/agent/members.
type ServerMembers struct {
	ServerName   string
	ServerRegion string
	ServerDC     string
	Members      []*AgentMember
}

// AgentSelf is the answer of GET /v1/agent/self. The lower-case keys are
// Nomad's.
type AgentSelf struct {
	// Config is a summary of the agent's configuration; secrets (the
	// gossip key) are never included.
	Config map[string]any `json:"config"`
	// Member is this server as gossip presents it.
	Member *AgentMember `json:"member"`
	// Stats groups counters: "raft" (hashicorp/raft's own), "serf"
	// (gossip member counts), "runtime" (Go runtime).
	Stats map[string]map[string]string `json:"stats"`
	// Security lists what the agent's configuration leaves open
	// (wire_security.go); absent from agents older than the field.
	Security *AgentSecurity `json:"security,omitempty"`
}

// AgentHealth is one role's health.
type AgentHealth struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// AgentHealthResponse is the answer of GET /v1/agent/health. Client is
// absent until client agents exist.
type AgentHealthResponse struct {
	Server *AgentHealth `json:"server,omitempty"`
	Client *AgentHealth `json:"client,omitempty"`
}

// JoinResponse is the answer of PUT /v1/agent/join.
type JoinResponse struct {
	NumJoined int    `json:"num_joined"`
	Error     string `json:"error"`
}

// RaftServer is one server of the Raft configuration.
type RaftServer struct {
	// ID is the server's Raft ID; Node its name, from gossip (empty when
	// gossip does not know it).
	ID      string
	Node    string
	Address string
	Leader  bool
	Voter   bool
	// RaftProtocol is the Raft protocol version the server speaks.
	RaftProtocol string
}

// RaftConfiguration is the answer of GET /v1/operator/raft/configuration.
type RaftConfiguration struct {
	Servers []*RaftServer
	// Index is the log index of the configuration entry.
	Index uint64
}

// KeyringRequest is the body of POST /v1/agent/keyring/install, /use and
// /remove: a gossip key, base64 as in server.encrypt.
type KeyringRequest struct {
	Key string
}

// KeyringResponse answers the keyring endpoints: across the servers that
// were asked, how many hold each key (Keys) and send with it
// (PrimaryKeys), and an error message per server that failed.
type KeyringResponse struct {
	Messages    map[string]string
	Keys        map[string]int
	PrimaryKeys map[string]int
	NumNodes    int
}
