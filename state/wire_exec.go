package state

import "time"

// The exec stream: the JSON text frames of the WebSocket behind GET
// /v1/client/allocation/:alloc_id/exec and GET /v1/job/:job_id/action, in
// the shape Nomad's exec stream uses (docs/exec.md). Byte payloads are
// []byte, which encoding/json writes as standard base64.

// ExecIOFrame is one direction's operation in a frame: data, or the end
// of the stream (close).
type ExecIOFrame struct {
	Data  []byte `json:"data,omitempty"`
	Close bool   `json:"close,omitempty"`
}

// TerminalSize is a terminal's size in character cells.
type TerminalSize struct {
	Height int `json:"height"`
	Width  int `json:"width"`
}

// ExecInputFrame is a frame from the caller: standard input, a window
// size, or (first frame of a ws_handshake session) the caller's token.
type ExecInputFrame struct {
	Stdin   *ExecIOFrame  `json:"stdin,omitempty"`
	TTYSize *TerminalSize `json:"tty_size,omitempty"`
	// Version and AuthToken are the handshake frame's fields.
	Version   int    `json:"version,omitempty"`
	AuthToken string `json:"auth_token,omitempty"`
}

// ExecOutputFrame is a frame to the caller: output, or the exit.
type ExecOutputFrame struct {
	Stdout *ExecIOFrame `json:"stdout,omitempty"`
	Stderr *ExecIOFrame `json:"stderr,omitempty"`
	Exited bool         `json:"exited,omitempty"`
	Result *ExecResult  `json:"result,omitempty"`
}

// ExecResult is how an exec'ed command ended.
type ExecResult struct {
	ExitCode int `json:"exit_code"`
}

// Exec limits, checked before anything runs.
const (
	// MaxExecCommandArgs bounds the words of an exec'ed command.
	MaxExecCommandArgs = 256
	// MaxExecCommandBytes bounds the bytes of an exec'ed command, all
	// words together.
	MaxExecCommandBytes = 64 << 10
	// MaxExecFrameBytes bounds one frame from the caller (its JSON text).
	MaxExecFrameBytes = 1 << 20
	// MaxTerminalCells bounds each side of a tty_size frame.
	MaxTerminalCells = 10000
)

// AllocFileInfo describes one file of an allocation directory, as GET
// /v1/client/fs/ls|stat/:alloc_id serve it.
type AllocFileInfo struct {
	Name        string
	IsDir       bool
	Size        int64
	FileMode    string
	ModTime     time.Time
	ContentType string `json:",omitempty"`
}

// AllocSignalRequest is the body of POST
// /v1/client/allocation/:alloc_id/signal: the signal (default SIGKILL, as
// Nomad) to one task, or to every running task when Task is empty.
type AllocSignalRequest struct {
	Signal string
	Task   string
}

// AllocRestartRequest is the body of POST
// /v1/client/allocation/:alloc_id/restart: one task, or (empty TaskName
// and AllTasks false) the running tasks, or with AllTasks every task.
type AllocRestartRequest struct {
	TaskName string
	AllTasks bool
}

// AllocStopResponse answers POST /v1/allocation/:alloc_id/stop.
type AllocStopResponse struct {
	EvalID string
	Index  uint64
}
