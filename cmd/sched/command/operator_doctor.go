package command

import (
	"fmt"
	"strings"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// Exit codes of `sched operator doctor`.
const (
	doctorClean      = 0 // every agent asked reports no open door
	doctorUnanswered = 1 // an agent could not be asked (and none reports a door)
	doctorOpenDoors  = 2 // some agent reports an open door
)

// doctorAgent is one agent's answer, as -json prints it.
type doctorAgent struct {
	// Name is the server's gossip name, or the node's ID for a
	// client-only agent.
	Name    string
	Address string
	// Roles are "server" and/or "client".
	Roles   []string
	DevMode bool
	// Findings are the agent's open doors; null when it did not answer
	// or is too old to report them (Error says which).
	Findings []state.SecurityFinding
	Error    string `json:",omitempty"`
}

// operatorDoctor is `sched operator doctor`: the "security" findings of
// /v1/agent/self of the addressed agent and of every other live server
// gossip knows, each with its fix.
func (c *operatorCLI) operatorDoctor(args []string) int {
	fs, m := c.flagSet("operator doctor", "[options]", `
Check the agent at -address, and every other live server it knows through
gossip, for doors their configuration leaves open to whoever reaches their
ports: raft without mutual TLS, gossip without a key, ACLs off, plain HTTP,
raw_exec, and the rest of the production checklist of docs/security.md.
Each open door is printed with its fix.

Other servers are asked at their advertised HTTP address, with the same
token and TLS options; over HTTPS, a certificate must carry
server.<region>.sched unless -tls-server-name says otherwise.

Exit code: 0 when no agent reports an open door, 2 when one does, 1 when
an agent could not be asked (and none reports an open door).`)
	selfOnly := fs.Bool("self", false, "check only the agent at -address, not the other servers")
	asJSON := c.outputFlags(fs, "print each agent's findings as JSON")
	client, code := c.parseClient(fs, m, args, 0, 0)
	if client == nil {
		return code
	}
	self, err := client.Agent().Self(c.ctx)
	if err != nil {
		return c.fail("reading the agent's self", err)
	}
	agents := []doctorAgent{doctorAgentOf(client.Address(), self)}
	unanswered := agents[0].Findings == nil
	if !*selfOnly {
		others, failed := c.doctorOtherServers(client, m, self)
		agents = append(agents, others...)
		unanswered = unanswered || failed
	}
	doors := 0
	for _, a := range agents {
		doors += len(a.Findings)
		if a.Error != "" {
			unanswered = true
		}
	}
	code = doctorClean
	switch {
	case doors > 0:
		code = doctorOpenDoors
	case unanswered:
		code = doctorUnanswered
	}
	if *asJSON {
		if rc := c.printJSON(agents); rc != 0 {
			return rc
		}
		return code
	}
	c.printDoctor(agents, doors)
	return code
}

// doctorOtherServers asks every live server the members list names, but
// the one self is, for its findings. failed reports that the list itself
// could not be read.
func (c *operatorCLI) doctorOtherServers(client *api.Client, m *meta, self *state.AgentSelf) (agents []doctorAgent, failed bool) {
	members, err := client.Agent().Members(c.ctx)
	if err != nil {
		fmt.Fprintf(c.stderr, "Error listing the other servers (only %s was checked): %v\n", client.Address(), err)
		return nil, true
	}
	selfID := ""
	if self.Member != nil {
		selfID = self.Member.Tags["id"]
	}
	https := strings.HasPrefix(client.Address(), "https://")
	for _, mem := range members.Members {
		addr := mem.Tags["http_addr"]
		if mem.Status != "alive" || addr == "" || (selfID != "" && mem.Tags["id"] == selfID) {
			continue
		}
		other := *m
		other.address = "http://" + addr
		if https {
			other.address = "https://" + addr
			if other.tls.ServerName == "" && mem.Tags["region"] != "" {
				other.tls.ServerName = "server." + mem.Tags["region"] + ".sched"
			}
		}
		a := doctorAgent{Name: mem.Name, Address: other.address, Roles: []string{"server"}}
		oc, err := other.client()
		if err == nil {
			var s *state.AgentSelf
			if s, err = oc.Agent().Self(c.ctx); err == nil {
				a = doctorAgentOf(oc.Address(), s)
			}
		}
		if err != nil {
			a.Error = err.Error()
		}
		agents = append(agents, a)
	}
	return agents, false
}

// doctorAgentOf summarizes one agent's /v1/agent/self.
func doctorAgentOf(addr string, self *state.AgentSelf) doctorAgent {
	a := doctorAgent{Address: addr}
	if srv, _ := self.Config["Server"].(map[string]any); srv != nil && srv["Enabled"] == true {
		a.Roles = append(a.Roles, "server")
	}
	nodeID := self.Stats["client"]["node_id"]
	if _, ok := self.Stats["client"]; ok {
		a.Roles = append(a.Roles, "client")
	}
	switch {
	case self.Member != nil && self.Member.Name != "":
		a.Name = self.Member.Name
	case nodeID != "":
		a.Name = "node " + nodeID
	default:
		a.Name = addr
	}
	if self.Security == nil {
		a.Error = "the agent does not report its security findings (a version older than sched operator doctor)"
		return a
	}
	a.DevMode = self.Security.DevMode
	a.Findings = self.Security.Findings
	if a.Findings == nil {
		a.Findings = []state.SecurityFinding{}
	}
	return a
}

// printDoctor prints each agent's open doors with their fixes, then a
// summary line.
func (c *operatorCLI) printDoctor(agents []doctorAgent, doors int) {
	withDoors := 0
	for i, a := range agents {
		if i > 0 {
			fmt.Fprintln(c.stdout)
		}
		head := a.Name + " (" + strings.Join(append(append([]string{}, a.Roles...), a.Address), ", ") + ")"
		if a.DevMode {
			head += " [dev mode]"
		}
		switch {
		case a.Error != "":
			fmt.Fprintf(c.stdout, "%s: not checked: %s\n", head, a.Error)
			continue
		case len(a.Findings) == 0:
			fmt.Fprintf(c.stdout, "%s: no open doors\n", head)
			continue
		}
		withDoors++
		fmt.Fprintf(c.stdout, "%s: %s\n", head, plural(len(a.Findings), "open door"))
		for _, f := range a.Findings {
			fmt.Fprintf(c.stdout, "  %-6s  %s: %s\n", f.Severity, f.ID, f.Message)
			fmt.Fprintf(c.stdout, "          fix: %s\n", f.Fix)
		}
	}
	fmt.Fprintln(c.stdout)
	if doors == 0 {
		fmt.Fprintf(c.stdout, "No open doors on %s checked.\n", plural(len(agents), "agent"))
		return
	}
	fmt.Fprintf(c.stdout, "%s on %d of %s checked; the production checklist is in docs/security.md.\n",
		plural(doors, "open door"), withDoors, plural(len(agents), "agent"))
}

// plural is "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
