package state

import (
	"bytes"
	"encoding/base64"
	"time"
)

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

// Output frames of data are most of an exec stream's bytes: these write
// and read them without encoding/json, in exactly the text json.Marshal
// writes for an ExecOutputFrame holding only Stdout or Stderr data.
var (
	stdoutFramePrefix = []byte(`{"stdout":{"data":"`)
	stderrFramePrefix = []byte(`{"stderr":{"data":"`)
	dataFrameSuffix   = []byte(`"}}`)
)

// AppendOutputFrame appends the frame carrying data on stdout (or stderr)
// to dst.
func AppendOutputFrame(dst []byte, stderr bool, data []byte) []byte {
	prefix := stdoutFramePrefix
	if stderr {
		prefix = stderrFramePrefix
	}
	dst = append(dst, prefix...)
	dst = base64.StdEncoding.AppendEncode(dst, data)
	return append(dst, dataFrameSuffix...)
}

// ParseDataFrame reads a frame written as AppendOutputFrame writes one. ok
// is false for any other frame, which the caller decodes with
// encoding/json.
func ParseDataFrame(frame []byte) (data []byte, stderr, ok bool) {
	var rest []byte
	switch {
	case bytes.HasPrefix(frame, stdoutFramePrefix):
		rest = frame[len(stdoutFramePrefix):]
	case bytes.HasPrefix(frame, stderrFramePrefix):
		rest, stderr = frame[len(stderrFramePrefix):], true
	default:
		return nil, false, false
	}
	if !bytes.HasSuffix(rest, dataFrameSuffix) {
		return nil, false, false
	}
	data, err := base64.StdEncoding.AppendDecode(nil, rest[:len(rest)-len(dataFrameSuffix)])
	if err != nil {
		return nil, false, false
	}
	return data, stderr, true
}
