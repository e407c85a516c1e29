package store

import (
	"fmt"

	"github.com/schedhq/sched/state"
)

// Checker is a command whose request can be judged on its own, without
// the state: Apply runs Check first and refuses the command when it
// fails, and Prepare runs the very same Check before the command is
// proposed. Only checks that can never change their verdict between
// servers or versions belong here; what depends on the state (a
// check-and-set, a node's secret) is checked by the leader before it
// proposes and again by Apply.
type Checker interface {
	Check() error
}

// Prepare returns the log entry of a command, having judged it exactly as
// every server's Apply will before touching the state: the entry must
// decode with the log's codec (which refuses values nested deeper than it
// can carry), and the decoded command must pass its Check. A command
// Prepare accepts is never refused by Apply for what it is, only for what
// the state has become; one it refuses answers ErrInvalid (a 400) and is
// never proposed. The leader's writers call PrepareCommand, which is
// Prepare keeping the decoded command for the entry's Apply.
//
// Requests built from the state alone (builtFromState: a plan's results) are the exception to the round
// trip: the leader builds them from the state alone (the job as stored,
// allocations of the scheduler's making), every value of which was judged
// by Prepare when it was written, so decoding them again could only repeat
// that verdict, at the cost of decoding every allocation twice. They are
// still Checked.
func Prepare(t MessageType, req any) ([]byte, error) {
	p, err := PrepareCommand(t, req)
	if err != nil {
		return nil, err
	}
	return p.Data, nil
}

// Prepared is a command Prepare judged: its log entry, and the command it
// decoded from the entry, which the proposer hands to the Apply of that
// very entry on its own server (Entry.Prepared), so that the state
// machine's serial path does not decode again what Prepare just decoded.
// Every other server, a replay, and a copy of the bytes decode Data as
// before: the command is exactly what decoding Data gives.
type Prepared struct {
	// Data is the log entry to propose. Nothing may change it.
	Data []byte
	// t and cmd are the entry's type and decoded command; cmd is nil for
	// a request built from the state (not decoded) and once Apply took
	// it.
	t   MessageType
	cmd any
}

// PrepareCommand is Prepare, also returning the command it decoded from
// the entry, for the entry's Apply on this server.
func PrepareCommand(t MessageType, req any) (*Prepared, error) {
	data, err := Encode(t, req)
	if err != nil {
		return nil, state.Invalidf("", "the request cannot be encoded for the log: %v", err)
	}
	if _, ok := req.(builtFromState); ok {
		if err := check(req); err != nil {
			return nil, err
		}
		return &Prepared{Data: data}, nil
	}
	mt, decoded, err := DecodeCommand(data)
	if err != nil {
		return nil, state.Invalidf("", "the request cannot be carried by the log: %v", err)
	}
	if err := check(decoded); err != nil {
		return nil, err
	}
	return &Prepared{Data: data, t: mt, cmd: decoded}, nil
}

// take returns the command decoded from data, once: a failed batch
// applies its entries again from their bytes, since the first attempt may
// have changed the commands it took. It takes nothing for other bytes
// than Data itself (a copy is decoded, as on any other server).
func (p *Prepared) take(data []byte) (MessageType, any, bool) {
	if p == nil || p.cmd == nil || len(data) == 0 || len(data) != len(p.Data) || &data[0] != &p.Data[0] {
		return 0, nil, false
	}
	cmd := p.cmd
	p.cmd = nil
	return p.t, cmd, true
}

// decodeEntry decodes the command of an entry, or takes the one its
// Prepared holds.
func decodeEntry(e Entry) (MessageType, any, error) {
	if t, cmd, ok := e.Prepared.take(e.Data); ok {
		return t, cmd, nil
	}
	return DecodeCommand(e.Data)
}

// check runs req's Check when it has one.
func check(req any) error {
	if c, ok := req.(Checker); ok {
		return c.Check()
	}
	return nil
}

// Check implements Checker: the job must be there with an ID and a
// namespace.
func (req *JobRegisterRequest) Check() error {
	switch job := req.Job; {
	case job == nil:
		return state.Invalidf("Job", "missing job")
	case job.ID == "":
		return state.Invalidf("Job.ID", "missing job ID")
	case job.Namespace == "":
		return state.Invalidf("Job.Namespace", "missing namespace")
	}
	// Apply walks the groups and tasks: a null one would crash every
	// server applying the command (before this check, such a command
	// could never be applied, so refusing it changes no verdict of an
	// older log).
	for i, tg := range req.Job.TaskGroups {
		if tg == nil {
			return state.Invalidf(fmt.Sprintf("Job.TaskGroups[%d]", i), "task group is null")
		}
		for k, t := range tg.Tasks {
			if t == nil {
				return state.Invalidf(fmt.Sprintf("Job.TaskGroups[%d].Tasks[%d]", i, k), "task is null")
			}
		}
	}
	return nil
}

// Check implements Checker: the node must be there with an ID, outside
// the built-in "all" pool.
func (req *NodeRegisterRequest) Check() error { return checkNode(req.Node) }

// Check implements Checker, as NodeRegisterRequest's.
func (req *NodeUpsertRequest) Check() error { return checkNode(req.Node) }

func checkNode(n *state.Node) error {
	switch {
	case n == nil || n.ID == "":
		return state.Invalidf("Node.ID", "missing node ID")
	case n.NodePool == state.NodePoolAll:
		return state.Invalidf("Node.NodePool", "nodes cannot join the %q node pool", state.NodePoolAll)
	}
	return nil
}

// builtFromState marks a request the leader builds from the state alone,
// whose values were judged by Prepare when they were written: Prepare
// only Checks it, without the decoding round trip.
type builtFromState interface{ builtFromState() }

// builtFromState implements builtFromState: the plan applier builds it
// from the stored job and the scheduler's allocations.
func (*PlanApplyRequest) builtFromState() {}
