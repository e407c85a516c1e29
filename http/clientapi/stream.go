package clientapi

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// The exec stream's WebSocket (docs/exec.md): the caller sends
// state.ExecInputFrame text frames, the server answers with
// state.ExecOutputFrame frames, the last of which says exited with the
// exit code, then closes the socket normally. A failure after the upgrade
// (a command that cannot start, a task that stopped, a refused handshake
// token) is a close frame whose code is 4000 plus the HTTP status the
// same failure would have had before the upgrade (4404, 4409, 4403, ...)
// and whose reason is the message.

// Timing of exec sessions.
const (
	// DefaultExecIdleTimeout ends a session in which nothing moved (no
	// frame from the caller, no output) for this long.
	DefaultExecIdleTimeout = 30 * time.Minute
	// execPingInterval is how often the server pings both ends of a
	// session; a peer that answers nothing (no pong, no frame) for
	// execPongWait is gone, and the session ends.
	execPingInterval = 20 * time.Second
	execPongWait     = 60 * time.Second
	// execWriteWait bounds writing one frame.
	execWriteWait = 10 * time.Second
	// execHandshakeWait bounds the wait for the token frame of a
	// ws_handshake session.
	execHandshakeWait = 10 * time.Second
	// execCloseCodeBase plus an HTTP status is the close code of a
	// failure after the upgrade.
	execCloseCodeBase = 4000
)

// execUpgrader upgrades exec and action requests. A browser page of
// another site must not drive a session with the user's credentials: a
// request with an Origin header must come from the host it is sent to.
var execUpgrader = websocket.Upgrader{
	ReadBufferSize:  32 << 10,
	WriteBufferSize: 32 << 10,
	CheckOrigin: func(r *http.Request) bool {
		origin := r.Header.Get("Origin")
		if origin == "" {
			return true
		}
		u, err := url.Parse(origin)
		return err == nil && strings.EqualFold(u.Host, r.Host)
	},
}

// IsWebSocket reports whether r asks for a WebSocket upgrade.
func IsWebSocket(r *http.Request) bool {
	return websocket.IsWebSocketUpgrade(r)
}

// Timings are a session's clocks.
type Timings struct {
	// Idle ends a session in which nothing moved for this long; 0: never.
	Idle time.Duration
	// Ping is how often both ends are pinged; a peer that answers nothing
	// (no pong, no frame) for Pong is gone.
	Ping, Pong time.Duration
}

// DefaultTimings are the timings of a session with idle timeout idle
// (0: DefaultExecIdleTimeout).
func DefaultTimings(idle time.Duration) Timings {
	if idle <= 0 {
		idle = DefaultExecIdleTimeout
	}
	return Timings{Idle: idle, Ping: execPingInterval, Pong: execPongWait}
}

// Conn is one side of an exec session: frames are written by several
// goroutines (stdout, stderr, pings), under one lock.
type Conn struct {
	c   *websocket.Conn
	t   Timings
	wmu sync.Mutex
	// last is when something last moved (UnixNano), for the idle timeout.
	last atomic.Int64
}

func newConn(c *websocket.Conn, t Timings) *Conn {
	w := &Conn{c: c, t: t}
	w.touch()
	c.SetReadLimit(state.MaxExecFrameBytes)
	return w
}

func (w *Conn) touch() { w.last.Store(time.Now().UnixNano()) }

// writeJSON writes v as one text frame.
func (w *Conn) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.writeMessage(websocket.TextMessage, b)
}

func (w *Conn) writeMessage(kind int, b []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	_ = w.c.SetWriteDeadline(time.Now().Add(execWriteWait))
	w.touch()
	return w.c.WriteMessage(kind, b)
}

// closeWith sends a close frame with code and reason (cut to what a
// control frame holds), then closes the connection.
func (w *Conn) closeWith(code int, reason string) {
	if len(reason) > 120 {
		reason = reason[:120]
	}
	w.wmu.Lock()
	_ = w.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(execWriteWait))
	w.wmu.Unlock()
	_ = w.c.Close()
}

// CloseWithError closes the session for err: 4000 + its HTTP status.
func (w *Conn) CloseWithError(err error) {
	w.closeWith(execCloseCodeBase+codec.StatusOf(err), err.Error())
}

// armPong makes a pong extend the read deadline (see readFrame). Call it
// before reading.
func (w *Conn) armPong() {
	w.c.SetPongHandler(func(string) error {
		return w.c.SetReadDeadline(time.Now().Add(w.t.Pong))
	})
}

// keepAlive pings the peer every t.Ping until ctx ends, and ends the
// session (cancel) when nothing moved for t.Idle (0: never). Call armPong
// first.
func (w *Conn) keepAlive(ctx context.Context, cancel context.CancelCauseFunc) {
	every := w.t.Ping
	if w.t.Idle > 0 {
		every = min(every, max(w.t.Idle/4, 10*time.Millisecond))
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if w.t.Idle > 0 && time.Since(time.Unix(0, w.last.Load())) > w.t.Idle {
			cancel(errExecIdle)
			return
		}
		w.wmu.Lock()
		err := w.c.WriteControl(websocket.PingMessage, nil, time.Now().Add(execWriteWait))
		w.wmu.Unlock()
		if err != nil {
			cancel(fmt.Errorf("ping: %w", err))
			return
		}
	}
}

// errExecIdle ends a session in which nothing moved for the idle timeout.
var errExecIdle = errors.New("exec session idle for too long")

// readFrame reads one message from the peer, which has execPongWait to
// send it or a pong. The deadline starts here, not at the last frame: a
// reader that was held up (stdin the command does not read) must not find
// it passed.
func (w *Conn) readFrame() (int, []byte, error) {
	_ = w.c.SetReadDeadline(time.Now().Add(w.t.Pong))
	kind, b, err := w.c.ReadMessage()
	if err == nil {
		w.touch()
	}
	return kind, b, err
}

// copyFrame streams the next message of w to to, without holding it whole.
func (w *Conn) copyFrame(to *Conn) error {
	_ = w.c.SetReadDeadline(time.Now().Add(w.t.Pong))
	kind, r, err := w.c.NextReader()
	if err != nil {
		return err
	}
	w.touch()
	to.wmu.Lock()
	defer to.wmu.Unlock()
	_ = to.c.SetWriteDeadline(time.Now().Add(execWriteWait))
	to.touch()
	wr, err := to.c.NextWriter(kind)
	if err != nil {
		return err
	}
	if _, err := io.Copy(wr, r); err != nil {
		_ = wr.Close()
		return err
	}
	return wr.Close()
}

// decodeInputFrame parses a caller's frame. Unknown fields are ignored
// (a newer caller may send more), anything that is not a JSON object is
// refused.
func decodeInputFrame(b []byte) (*state.ExecInputFrame, error) {
	var f state.ExecInputFrame
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("exec frame: %w", err)
	}
	if s := f.TTYSize; s != nil && (s.Height < 0 || s.Width < 0 || s.Height > state.MaxTerminalCells || s.Width > state.MaxTerminalCells) {
		return nil, fmt.Errorf("exec frame: tty_size %dx%d: each side must be within 0..%d", s.Height, s.Width, state.MaxTerminalCells)
	}
	return &f, nil
}

// outputWriter turns writes into stdout or stderr frames. Each stream
// has one writing goroutine, so its frame buffer is reused.
type outputWriter struct {
	w      *Conn
	stderr bool
	buf    []byte
}

func (o *outputWriter) Write(p []byte) (int, error) {
	o.buf = state.AppendOutputFrame(o.buf[:0], o.stderr, p)
	if err := o.w.writeMessage(websocket.TextMessage, o.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// RunLocalExec bridges an upgraded caller to a command run by the local
// client c: frames in become stdin and resizes, output becomes frames, and
// the exit is the last frame. The command is killed when the caller goes
// away, the server shuts down (ctx) or the session is idle for idle.
func RunLocalExec(ctx context.Context, w *Conn, c Client, allocID string, req ExecRequest) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	resize := make(chan state.TerminalSize, 1)
	req.Stdin, req.Resize = stdinR, resize
	req.Stdout = &outputWriter{w: w}
	req.Stderr = &outputWriter{w: w, stderr: true}
	if req.TTY {
		req.Stderr = req.Stdout
	}
	w.armPong()
	go w.keepAlive(ctx, cancel)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			_, b, err := w.readFrame()
			if err != nil {
				cancel(fmt.Errorf("caller: %w", err))
				_ = stdinW.CloseWithError(err)
				return
			}
			f, err := decodeInputFrame(b)
			if err != nil {
				cancel(state.Invalidf("frame", "%v", err))
				return
			}
			if f.TTYSize != nil {
				select { // keep only the latest size
				case <-resize:
				default:
				}
				resize <- *f.TTYSize
			}
			if f.Stdin != nil {
				if len(f.Stdin.Data) > 0 {
					if _, err := stdinW.Write(f.Stdin.Data); err != nil {
						continue // the command closed its input; keep reading for resizes
					}
				}
				if f.Stdin.Close {
					_ = stdinW.Close()
				}
			}
		}
	}()
	code, err := c.AllocExec(ctx, allocID, &req)
	_ = stdinW.Close()
	switch cause := context.Cause(ctx); {
	case err != nil:
		w.CloseWithError(err)
	case errors.Is(cause, errExecIdle):
		w.closeWith(websocket.ClosePolicyViolation, cause.Error())
	case errors.Is(cause, state.ErrInvalid):
		w.CloseWithError(cause)
	case cause != nil:
		_ = w.c.Close() // the caller is gone
	default:
		_ = w.writeJSON(state.ExecOutputFrame{Stdout: &state.ExecIOFrame{Close: true}})
		_ = w.writeJSON(state.ExecOutputFrame{Exited: true, Result: &state.ExecResult{ExitCode: code}})
		w.closeWith(websocket.CloseNormalClosure, "")
	}
	// The reader ends on the closed connection.
	_ = w.c.Close()
	<-readerDone
}

// Relay copies frames both ways between an upgraded caller and the
// node's exec socket until either ends, then closes both. The node runs
// the session; the server enforces its own idle timeout and pings both
// ends, so that a caller or node that is gone ends the session.
func Relay(ctx context.Context, caller, node *Conn) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	caller.armPong()
	node.armPong()
	go caller.keepAlive(ctx, cancel)
	go node.keepAlive(ctx, cancel)
	var wg sync.WaitGroup
	wg.Add(2)
	pass := func(from, to *Conn, fromCaller bool) {
		defer wg.Done()
		for {
			if !fromCaller {
				// The node's frames go through as they are read: output
				// is most of the bytes and is not looked at.
				err := from.copyFrame(to)
				if err == nil {
					caller.touch()
					continue
				}
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					to.closeWith(ce.Code, ce.Text)
				}
				cancel(err)
				return
			}
			kind, b, err := from.readFrame()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					to.closeWith(ce.Code, ce.Text)
				}
				cancel(err)
				return
			}
			if fromCaller {
				if _, err := decodeInputFrame(b); err != nil {
					cancel(err)
					caller.CloseWithError(state.Invalidf("frame", "%v", err))
					return
				}
			}
			if err := to.writeMessage(kind, b); err != nil {
				cancel(err)
				return
			}
			node.touch()
		}
	}
	go pass(caller, node, true)
	go pass(node, caller, false)
	<-ctx.Done()
	if errors.Is(context.Cause(ctx), errExecIdle) {
		caller.closeWith(websocket.ClosePolicyViolation, errExecIdle.Error())
	}
	_ = caller.c.Close()
	_ = node.c.Close()
	wg.Wait()
}

// execDialTimeout bounds connecting to a node's exec socket.
const execDialTimeout = 5 * time.Second

// DialExec opens the exec socket at u (a ws:// or wss:// URL of a node's
// agent) with header h, which carries the server's signature (Sign). A
// node that refuses answers with its status and message, which become
// the error. The returned side keeps no idle clock: the caller's does.
func DialExec(ctx context.Context, u *url.URL, h http.Header, tlsCfg *tls.Config, t Timings) (*Conn, error) {
	d := websocket.Dialer{HandshakeTimeout: execDialTimeout, ReadBufferSize: 32 << 10, WriteBufferSize: 32 << 10, TLSClientConfig: tlsCfg}
	c, resp, err := d.DialContext(ctx, u.String(), h)
	if err != nil {
		if resp != nil {
			defer resp.Body.Close()
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			return nil, &codec.CodedError{Code: resp.StatusCode, Message: strings.TrimSpace(string(msg))}
		}
		return nil, &codec.CodedError{Code: http.StatusBadGateway, Message: fmt.Sprintf("cannot reach node at %s: %v", u.Host, err), Err: err}
	}
	t.Idle = 0 // the caller's side keeps the idle clock
	return newConn(c, t), nil
}

// Upgrade upgrades an exec or action request to its WebSocket. When it
// fails it has answered the caller.
func Upgrade(w http.ResponseWriter, r *http.Request, t Timings) (*Conn, error) {
	c, err := execUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return nil, err
	}
	return newConn(c, t), nil
}

// Close closes the connection without a close frame.
func (w *Conn) Close() error { return w.c.Close() }

// ReadHandshake reads the first frame of a ws_handshake session and
// returns the caller's token it carries.
func (w *Conn) ReadHandshake() (string, error) {
	_ = w.c.SetReadDeadline(time.Now().Add(execHandshakeWait))
	_, b, err := w.c.ReadMessage()
	if err != nil {
		return "", codec.BadRequest("no handshake frame: %v", err)
	}
	w.touch()
	f, err := decodeInputFrame(b)
	if err != nil {
		return "", codec.BadRequest("handshake frame: %v", err)
	}
	return f.AuthToken, nil
}
