package clientapi

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// Exec sessions on a node's agent: the query of an exec request and the
// socket a client-only agent serves (the framing is in stream.go).

// ParseExecQuery reads the query q of an exec request: task (required:
// the caller passes it, as a server's core resolved it), command (a JSON
// array of strings, required, bounded), tty.
func ParseExecQuery(q url.Values, task string) (ExecRequest, error) {
	var v state.ValidationError
	req := ExecRequest{Task: task}
	if req.Task == "" {
		v.Add("task", "required query parameter")
	}
	raw := q.Get("command")
	switch {
	case raw == "":
		v.Add("command", `required query parameter: a JSON array of strings, e.g. ["/bin/sh"]`)
	case len(raw) > state.MaxExecCommandBytes:
		v.Add("command", "%d bytes; at most %d", len(raw), state.MaxExecCommandBytes)
	default:
		if err := json.Unmarshal([]byte(raw), &req.Command); err != nil {
			v.Add("command", `not a JSON array of strings (e.g. ["/bin/sh", "-c", "ls"]): %v`, err)
		} else if len(req.Command) == 0 || req.Command[0] == "" {
			v.Add("command", "names no program")
		} else if len(req.Command) > state.MaxExecCommandArgs {
			v.Add("command", "%d words; at most %d", len(req.Command), state.MaxExecCommandArgs)
		}
	}
	tty, err := codec.BoolParam(q, "tty")
	if err != nil {
		v.Add("tty", "%v", err)
	}
	req.TTY = tty
	return req, v.Err()
}

// serveExec serves the exec socket on a client-only agent (servers relay
// sessions here). A ws_handshake frame, sent by a caller that reaches the
// agent directly, is read and dropped: the agent checks no token
// (NewHandler).
func serveExec(c Client, w http.ResponseWriter, r *http.Request, allocID string) error {
	q := r.URL.Query()
	req, err := ParseExecQuery(q, q.Get("task"))
	if err != nil {
		return err
	}
	if !IsWebSocket(r) {
		return codec.BadRequest("a WebSocket upgrade is required (Connection: Upgrade, Upgrade: websocket)")
	}
	if err := hasAlloc(r, c, allocID); err != nil {
		return err
	}
	caller, err := Upgrade(w, r, DefaultTimings(0))
	if err != nil {
		return nil // Upgrade answered
	}
	if hs, _ := codec.BoolParam(q, "ws_handshake"); hs {
		if _, err := caller.ReadHandshake(); err != nil {
			caller.CloseWithError(err)
			return nil
		}
	}
	RunLocalExec(r.Context(), caller, c, allocID, req)
	return nil
}
