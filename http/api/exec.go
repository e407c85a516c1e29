package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/schedhq/sched/state"
)

// ExecStreams are the local ends of an exec or action session.
type ExecStreams struct {
	// Stdin is sent to the command until it ends (EOF closes the
	// command's input). Nil sends nothing and leaves the input open. It
	// is read by a goroutine that ends at the first read after the
	// session did: a Stdin that blocks forever (a terminal nobody types
	// in) keeps that goroutine until the process exits.
	Stdin io.Reader
	// Stdout and Stderr receive the output (with TTY, all of it on
	// Stdout). Nil discards.
	Stdout, Stderr io.Writer
	// Resize carries the local terminal's new sizes (TTY); nil is fine.
	Resize <-chan state.TerminalSize
}

// ExecOptions is a command to run inside a running task.
type ExecOptions struct {
	Task    string
	Command []string
	// TTY runs the command on a pseudo terminal of Size.
	TTY  bool
	Size state.TerminalSize
	ExecStreams
}

// ActionOptions names a job action to run (GET /v1/job/:job_id/action).
type ActionOptions struct {
	AllocID string
	Task    string
	Action  string
	TTY     bool
	Size    state.TerminalSize
	ExecStreams
}

// ExecCloseError is how a session ended when the server closed it with
// an error (a command that could not start, a task that stopped): Code is
// 4000 plus the HTTP status of the same failure, or a WebSocket close code.
type ExecCloseError struct {
	Code   int
	Reason string
}

func (e *ExecCloseError) Error() string {
	return fmt.Sprintf("exec session closed (%d): %s", e.Code, e.Reason)
}

// Exec runs a command inside a task of allocation allocID and returns its
// exit code once it has exited and its output has been written. Ending
// ctx closes the session, which kills the command.
func (a *Allocations) Exec(ctx context.Context, allocID string, o *ExecOptions, q *QueryOptions) (int, error) {
	if o == nil || o.Task == "" || len(o.Command) == 0 {
		return 0, errors.New("api: exec: a task and a command are required")
	}
	cmd, err := json.Marshal(o.Command)
	if err != nil {
		return 0, err
	}
	params := url.Values{"task": {o.Task}, "command": {string(cmd)}}
	if o.TTY {
		params.Set("tty", "true")
	}
	return a.c.execSession(ctx, PathOf("v1", "client", "allocation", allocID, "exec"), params, q, o.TTY, o.Size, &o.ExecStreams)
}

// Actions lists the actions of a job's tasks.
func (j *Jobs) Actions(ctx context.Context, jobID string, q *QueryOptions) ([]*state.JobAction, *QueryMeta, error) {
	return get[[]*state.JobAction](ctx, j.c, PathOf("v1", "job", jobID, "actions"), nil, q)
}

// RunAction runs an action of a job's task in one of its allocations and
// returns the exit code, as Exec does.
func (j *Jobs) RunAction(ctx context.Context, jobID string, o *ActionOptions, q *QueryOptions) (int, error) {
	if o == nil || o.AllocID == "" || o.Task == "" || o.Action == "" {
		return 0, errors.New("api: action: an allocation, a task and an action are required")
	}
	params := url.Values{"alloc_id": {o.AllocID}, "task": {o.Task}, "action": {o.Action}}
	if o.TTY {
		params.Set("tty", "true")
	}
	return j.c.execSession(ctx, PathOf("v1", "job", jobID, "action"), params, q, o.TTY, o.Size, &o.ExecStreams)
}

// execSession dials the exec socket at path and runs the session (frames
// in docs/exec.md).
func (c *Client) execSession(ctx context.Context, path string, params url.Values, q *QueryOptions, tty bool, size state.TerminalSize, s *ExecStreams) (int, error) {
	token := q.apply(c.cfg, params)
	u, err := url.Parse(c.base + path + "?" + params.Encode())
	if err != nil {
		return 0, err
	}
	if u.Scheme == "https" {
		u.Scheme = "wss"
	} else {
		u.Scheme = "ws"
	}
	d := websocket.Dialer{HandshakeTimeout: 30 * time.Second, ReadBufferSize: 32 << 10, WriteBufferSize: 32 << 10}
	if tr, ok := c.http.Transport.(*http.Transport); ok && tr.TLSClientConfig != nil {
		d.TLSClientConfig = tr.TLSClientConfig.Clone()
	}
	h := http.Header{}
	if token != "" {
		h.Set(HeaderToken, token)
	}
	conn, resp, err := d.DialContext(ctx, u.String(), h)
	if err != nil {
		if resp != nil {
			defer resp.Body.Close()
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
			return 0, &StatusError{Code: resp.StatusCode, Body: strings.TrimSpace(string(msg))}
		}
		return 0, fmt.Errorf("api: exec %s: %w", path, err)
	}
	sess := &execSess{conn: conn}
	return sess.run(ctx, tty, size, s)
}

// execSess is the caller's side of one session.
type execSess struct {
	conn *websocket.Conn
	wmu  sync.Mutex
}

func (s *execSess) send(f *state.ExecInputFrame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.conn.WriteMessage(websocket.TextMessage, b)
}

func (s *execSess) run(ctx context.Context, tty bool, size state.TerminalSize, st *ExecStreams) (int, error) {
	defer s.conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.conn.Close() })
	defer stop()
	done := make(chan struct{})
	defer close(done)
	if tty && size.Height > 0 && size.Width > 0 {
		if err := s.send(&state.ExecInputFrame{TTYSize: &size}); err != nil {
			return 0, err
		}
	}
	if st.Stdin != nil {
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := st.Stdin.Read(buf)
				if n > 0 {
					if s.send(&state.ExecInputFrame{Stdin: &state.ExecIOFrame{Data: buf[:n]}}) != nil {
						return
					}
				}
				if err != nil {
					if err == io.EOF {
						_ = s.send(&state.ExecInputFrame{Stdin: &state.ExecIOFrame{Close: true}})
					}
					return
				}
			}
		}()
	}
	if st.Resize != nil {
		go func() {
			for {
				select {
				case sz, ok := <-st.Resize:
					if !ok {
						return
					}
					if s.send(&state.ExecInputFrame{TTYSize: &sz}) != nil {
						return
					}
				case <-done:
					return
				}
			}
		}()
	}
	out, errw := st.Stdout, st.Stderr
	if out == nil {
		out = io.Discard
	}
	if errw == nil {
		errw = io.Discard
	}
	for {
		_, b, err := s.conn.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return 0, &ExecCloseError{Code: ce.Code, Reason: ce.Text}
			}
			return 0, fmt.Errorf("api: exec session: %w", err)
		}
		if data, stderr, ok := state.ParseDataFrame(b); ok {
			w := out
			if stderr {
				w = errw
			}
			if _, err := w.Write(data); err != nil {
				return 0, err
			}
			continue
		}
		var f state.ExecOutputFrame
		if err := json.Unmarshal(b, &f); err != nil {
			return 0, fmt.Errorf("api: exec frame: %w", err)
		}
		if f.Stdout != nil && len(f.Stdout.Data) > 0 {
			if _, err := out.Write(f.Stdout.Data); err != nil {
				return 0, err
			}
		}
		if f.Stderr != nil && len(f.Stderr.Data) > 0 {
			if _, err := errw.Write(f.Stderr.Data); err != nil {
				return 0, err
			}
		}
		if f.Exited {
			code := 0
			if f.Result != nil {
				code = f.Result.ExitCode
			}
			s.wmu.Lock()
			_ = s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			s.wmu.Unlock()
			return code, nil
		}
	}
}

// Stop stops allocation id: the servers mark it to migrate and create an
// evaluation that replaces it. It returns that evaluation's ID.
func (a *Allocations) Stop(ctx context.Context, id string, w *WriteOptions) (*state.AllocStopResponse, error) {
	out, _, err := send[*state.AllocStopResponse](ctx, a.c, http.MethodPost, PathOf("v1", "allocation", id, "stop"), nil, w, nil)
	return out, err
}

// Restart restarts one task of allocation id, or its running tasks when
// task is empty (every task with all).
func (a *Allocations) Restart(ctx context.Context, id, task string, all bool, w *WriteOptions) error {
	_, err := a.c.write(ctx, http.MethodPost, PathOf("v1", "client", "allocation", id, "restart"), nil, w,
		&state.AllocRestartRequest{TaskName: task, AllTasks: all}, nil)
	return err
}

// Signal sends signal (empty: SIGKILL) to one task of allocation id, or
// to every running task when task is empty.
func (a *Allocations) Signal(ctx context.Context, id, task, signal string, w *WriteOptions) error {
	_, err := a.c.write(ctx, http.MethodPost, PathOf("v1", "client", "allocation", id, "signal"), nil, w,
		&state.AllocSignalRequest{Task: task, Signal: signal}, nil)
	return err
}

// List lists a directory of allocation allocID ("/" is its root).
func (f *AllocFS) List(ctx context.Context, allocID, path string, q *QueryOptions) ([]*state.AllocFileInfo, error) {
	out, _, err := get[[]*state.AllocFileInfo](ctx, f.c, PathOf("v1", "client", "fs", "ls", allocID), url.Values{"path": {path}}, q)
	return out, err
}

// Stat describes one file of allocation allocID.
func (f *AllocFS) Stat(ctx context.Context, allocID, path string, q *QueryOptions) (*state.AllocFileInfo, error) {
	out, _, err := get[*state.AllocFileInfo](ctx, f.c, PathOf("v1", "client", "fs", "stat", allocID), url.Values{"path": {path}}, q)
	return out, err
}

// Cat opens a file of allocation allocID. Close it when done.
func (f *AllocFS) Cat(ctx context.Context, allocID, path string, q *QueryOptions) (io.ReadCloser, error) {
	params := url.Values{"path": {path}}
	token := q.apply(f.c.cfg, params)
	resp, err := f.c.stream(ctx, http.MethodGet, PathOf("v1", "client", "fs", "cat", allocID), params, token, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// ReadAt opens limit bytes (0: to the end) of a file of allocation
// allocID from offset.
func (f *AllocFS) ReadAt(ctx context.Context, allocID, path string, offset, limit int64, q *QueryOptions) (io.ReadCloser, error) {
	params := url.Values{"path": {path}, "offset": {fmt.Sprint(offset)}, "limit": {fmt.Sprint(limit)}}
	token := q.apply(f.c.cfg, params)
	resp, err := f.c.stream(ctx, http.MethodGet, PathOf("v1", "client", "fs", "readat", allocID), params, token, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
