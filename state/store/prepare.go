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
// never proposed. The leader's writers call it for every write, through
// Store.Prepare, which also hands the decoded command to the store's Apply.
//
// Requests built from the state alone (builtFromState: a plan's results) are the exception to the round
// trip: the leader builds them from the state alone (the job as stored,
// allocations of the scheduler's making), every value of which was judged
// by Prepare when it was written, so decoding them again could only repeat
// that verdict, at the cost of decoding every allocation twice. They are
// still Checked.
func Prepare(t MessageType, req any) ([]byte, error) {
	data, _, err := prepare(t, req)
	return data, err
}

// prepare is Prepare, also returning the command it decoded from the
// entry (nil for a request built from the state, which it does not
// decode).
func prepare(t MessageType, req any) ([]byte, any, error) {
	data, err := Encode(t, req)
	if err != nil {
		return nil, nil, state.Invalidf("", "the request cannot be encoded for the log: %v", err)
	}
	if _, ok := req.(builtFromState); ok {
		if err := check(req); err != nil {
			return nil, nil, err
		}
		return data, nil, nil
	}
	_, decoded, err := DecodeCommand(data)
	if err != nil {
		return nil, nil, state.Invalidf("", "the request cannot be carried by the log: %v", err)
	}
	if err := check(decoded); err != nil {
		return nil, nil, err
	}
	return data, decoded, nil
}

// Prepare is the package's Prepare that also hands the command it decoded
// from the entry to this store's Apply of that very entry: on the leader
// raft gives the state machine the bytes it was given, and the store
// then applies the decoded command instead of decoding the bytes again
// (it decodes them as every other server does when it has none: the
// command is exactly what decoding them gives, and nothing else holds
// it). release, to call once the entry is applied or abandoned, forgets
// the command if no Apply took it.
func (s *Store) Prepare(t MessageType, req any) (data []byte, release func(), err error) {
	data, decoded, err := prepare(t, req)
	if err != nil {
		return nil, nil, err
	}
	if decoded == nil {
		return data, func() {}, nil
	}
	key := &data[0]
	s.prepared.Store(key, decoded)
	return data, func() { s.prepared.Delete(key) }, nil
}

// decodeEntry decodes the command of an entry, or takes the one Prepare
// decoded from these very bytes (Store.Prepare); a taken command is not
// given out twice.
func (s *Store) decodeEntry(data []byte) (MessageType, any, error) {
	if len(data) > 0 {
		if req, ok := s.prepared.LoadAndDelete(&data[0]); ok {
			return MessageType(data[0]) &^ IgnoreUnknownTypeFlag, req, nil
		}
	}
	return DecodeCommand(data)
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
