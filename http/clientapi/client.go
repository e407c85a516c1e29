// Package clientapi is a client agent's own HTTP surface: what a node's
// agent serves of its allocations (task logs, the allocation directory,
// resource usage, exec sessions, restart and signal), the check that a
// server signed each such request, and GET /v1/agent/self, /health,
// /metrics and /monitor of a client-only agent (NewHandler). Servers
// proxy these requests here, signed (Sign), and serve them themselves for
// the client of their own process (dev mode) with the same functions:
// ServeLogs, ServeFS, Stats, RunLocalExec.
//
// It imports state's types and the shared codec, never the store: a
// client agent links no go-memdb through it.
package clientapi

import (
	"context"
	"io"

	"github.com/schedhq/sched/http/clientapi/allocfs"
	"github.com/schedhq/sched/state"
)

// Client is what the HTTP layer needs of a client agent to serve the
// node-local endpoints: an allocation's task logs and its resource usage.
// The client agent implements it; a server agent that runs a client in
// the same process (dev mode) sets its Config.Client to it, and a
// client-only agent serves it with NewHandler.
//
// Errors: an error wrapping state.ErrNotFound (the allocation is not on
// this client) is a 404; any other error is a 500.
type Client interface {
	// NodeID is the ID of the client's node. A server serves an
	// allocation's client endpoints itself only when the allocation's
	// NodeID is this; otherwise it proxies to the node's HTTPAddr.
	NodeID() string
	// Alloc returns the allocation as the client holds it (with its Job),
	// for an allocation it runs or ran and still has a directory for.
	Alloc(allocID string) (*state.Allocation, error)
	// AllocLogDir returns the directory holding the allocation's task
	// logs: <task>.stdout.N and <task>.stderr.N, N counting up from 0 as
	// the files rotate (older files may have been deleted).
	AllocLogDir(allocID string) (string, error)
	// AllocStats measures the allocation's running tasks. Tasks that are
	// not running are left out.
	AllocStats(ctx context.Context, allocID string) (*state.AllocResourceUsage, error)
	// AllocDir returns the allocation's directory, the root of what GET
	// /v1/client/fs/* may read (fs.go).
	AllocDir(allocID string) (string, error)
	// AllocExec runs a command inside a running task of the allocation
	// and returns its exit code (exec.go). Ending ctx kills it.
	// An unknown task is a 404, a task that does not run a 409.
	AllocExec(ctx context.Context, allocID string, req *ExecRequest) (int, error)
	// AllocRestart restarts one task, or the running tasks when task is
	// empty (every task with all).
	AllocRestart(ctx context.Context, allocID, task string, all bool) error
	// AllocSignal sends signal to one task, or to every running task when
	// task is empty.
	AllocSignal(ctx context.Context, allocID, task, signal string) error
	// FSGate caps the file system and log reads served at once for this
	// client (client.fs_max_reads_per_alloc, client.fs_max_reads): one
	// gate per client agent, whichever HTTP surface serves the read. Nil
	// admits every read.
	FSGate() *allocfs.Gate
}

// ExecRequest is a command to run inside a task (Client.AllocExec).
// Stdin is read until EOF or until AllocExec returns; Stdout and Stderr
// receive the output (with TTY, all of it on Stdout); Resize carries the
// terminal's new sizes.
type ExecRequest struct {
	Task    string
	Command []string
	TTY     bool
	Size    state.TerminalSize
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	Resize  <-chan state.TerminalSize
}

// ServerFollower is implemented by a Client that can name the server it
// currently talks to (a base URL such as "http://10.0.0.1:4646").
// NewHandler then proxies every request it
// does not serve itself to that server, so a client agent's address
// answers the whole API, as a Nomad client's does (the CLI's `node status
// -self` against a client agent needs it).
type ServerFollower interface {
	CurrentServer() string
}
