package store

import (
	"errors"
)

// ErrUnknownCommand is returned by Apply for a log entry whose type this
// server does not know and that does not carry IgnoreUnknownTypeFlag. The
// FSM must treat it as fatal: skipping it would make this server's state
// diverge from the others'.
var ErrUnknownCommand = errors.New("unknown command type")

// Apply applies one committed log entry at Raft index index and returns the
// command's response (e.g. *JobRegisterResponse; nil for commands without
// one) or an error.
//
// Apply is deterministic: it reads no clock, draws no random numbers and
// does no I/O, so every server that applies the same log ends with the same
// state. A command either writes everything or, when it returns an error,
// nothing. Every object written gets ModifyIndex = index (and CreateIndex =
// index when new), and the index row of every table written is set to
// index.
//
// Apply must be called from one goroutine at a time (the Raft FSM's).
func (s *Store) Apply(index uint64, data []byte) any {
	return s.ApplyEntry(Entry{Index: index, Data: data})
}

// ApplyEntry is Apply of an entry, which on the server that proposed it
// carries the command Prepare decoded (Entry.Prepared).
func (s *Store) ApplyEntry(e Entry) any {
	index, data := e.Index, e.Data
	t, req, err := decodeEntry(e)
	if err != nil {
		if errors.Is(err, ErrUnknownCommand) && MessageType(data[0])&IgnoreUnknownTypeFlag != 0 {
			return nil
		}
		return err
	}
	if err := check(req); err != nil { // the very checks Prepare made before proposing
		return err
	}
	cmd, _ := lookupCommand(t)
	txn := s.writeTxn(index)
	defer txn.Abort()
	var written []written
	txn.written = &written
	resp, err := cmd.apply(txn, req)
	if err != nil {
		s.events.publish(index, nil)
		return err
	}
	if err := refreshJobStatuses(txn); err != nil {
		s.events.publish(index, nil)
		return err
	}
	if err := txn.commit(); err != nil {
		return err
	}
	s.allocs.notify(written)
	s.events.publish(index, eventsOf(index, written))
	return resp
}

// command is how Apply decodes and applies one command type.
type command struct {
	newReq func() any
	apply  func(t *writeTxn, req any) (any, error)
}

// handler adapts a typed apply function to a command.
func handler[R any](fn func(*writeTxn, *R) (any, error)) command {
	return command{
		newReq: func() any { return new(R) },
		apply:  func(t *writeTxn, req any) (any, error) { return fn(t, req.(*R)) },
	}
}

// lookupCommand returns the command for type t (without the ignore flag).
func lookupCommand(t MessageType) (command, bool) {
	switch t {
	case JobRegisterRequestType:
		return handler(applyJobRegister), true
	case JobDeregisterRequestType:
		return handler(applyJobDeregister), true
	case NamespaceUpsertRequestType:
		return handler(applyNamespaceUpsert), true
	case NamespaceDeleteRequestType:
		return handler(applyNamespaceDelete), true
	case EvalUpdateRequestType:
		return handler(applyEvalUpdate), true
	case EvalDeleteRequestType:
		return handler(applyEvalDelete), true
	case AllocUpdateRequestType:
		return handler(applyAllocUpdate), true
	case AllocClientUpdateRequestType:
		return handler(applyAllocClientUpdate), true
	case NodeRegisterRequestType:
		return handler(applyNodeRegister), true
	case NodeDeregisterRequestType:
		return handler(applyNodeDeregister), true
	case NodeUpdateStatusRequestType:
		return handler(applyNodeUpdateStatus), true
	case DeploymentUpsertRequestType:
		return handler(applyDeploymentUpsert), true
	case ServiceUpsertRequestType:
		return handler(applyServiceUpsert), true
	case ServiceDeleteRequestType:
		return handler(applyServiceDelete), true
	case NodePoolUpsertRequestType:
		return handler(applyNodePoolUpsert), true
	case NodePoolDeleteRequestType:
		return handler(applyNodePoolDelete), true
	case JobSummaryUpsertRequestType:
		return handler(applyJobSummaryUpsert), true
	case JobDispatchRequestType:
		return handler(applyJobDispatch), true
	case PeriodicLaunchRequestType:
		return handler(applyPeriodicLaunch), true
	}
	// Each later area keeps its commands in its own file, with its own
	// reserved range of type numbers (see commands.go).
	for _, area := range []func(MessageType) (command, bool){
		planCommand, nodeCommand, aclCommand, clusterCommand, managementCommand, deploymentCommand, quotaCommand,
	} {
		if c, ok := area(t); ok {
			return c, true
		}
	}
	return command{}, false
}
