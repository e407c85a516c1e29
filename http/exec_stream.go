package http

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
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

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

// isWebSocket reports whether r asks for a WebSocket upgrade.
func isWebSocket(r *http.Request) bool {
	return websocket.IsWebSocketUpgrade(r)
}

// execTimings are a session's clocks: the idle timeout (0: none), the
// ping interval and how long a silent peer is waited for.
type execTimings struct {
	idle, ping, pong time.Duration
}

// defaultExecTimings are the timings of a session with idle timeout idle
// (0: DefaultExecIdleTimeout).
func defaultExecTimings(idle time.Duration) execTimings {
	if idle <= 0 {
		idle = DefaultExecIdleTimeout
	}
	return execTimings{idle: idle, ping: execPingInterval, pong: execPongWait}
}

// wsConn is one side of an exec session: frames are written by several
// goroutines (stdout, stderr, pings), under one lock.
type wsConn struct {
	c   *websocket.Conn
	t   execTimings
	wmu sync.Mutex
	// last is when something last moved (UnixNano), for the idle timeout.
	last atomic.Int64
}

func newWSConn(c *websocket.Conn, t execTimings) *wsConn {
	w := &wsConn{c: c, t: t}
	w.touch()
	c.SetReadLimit(state.MaxExecFrameBytes)
	return w
}

func (w *wsConn) touch() { w.last.Store(time.Now().UnixNano()) }

// writeJSON writes v as one text frame.
func (w *wsConn) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.writeMessage(websocket.TextMessage, b)
}

func (w *wsConn) writeMessage(kind int, b []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	_ = w.c.SetWriteDeadline(time.Now().Add(execWriteWait))
	w.touch()
	return w.c.WriteMessage(kind, b)
}

// closeWith sends a close frame with code and reason (cut to what a
// control frame holds), then closes the connection.
func (w *wsConn) closeWith(code int, reason string) {
	if len(reason) > 120 {
		reason = reason[:120]
	}
	w.wmu.Lock()
	_ = w.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(execWriteWait))
	w.wmu.Unlock()
	_ = w.c.Close()
}

// closeWithError closes the session for err: 4000 + its HTTP status.
func (w *wsConn) closeWithError(err error) {
	w.closeWith(execCloseCodeBase+statusOf(err), err.Error())
}

// armPong makes a pong extend the read deadline (see readFrame). Call it
// before reading.
func (w *wsConn) armPong() {
	w.c.SetPongHandler(func(string) error {
		return w.c.SetReadDeadline(time.Now().Add(w.t.pong))
	})
}

// keepAlive pings the peer every t.ping until ctx ends, and ends the
// session (cancel) when nothing moved for t.idle (0: never). Call armPong
// first.
func (w *wsConn) keepAlive(ctx context.Context, cancel context.CancelCauseFunc) {
	every := w.t.ping
	if w.t.idle > 0 {
		every = min(every, max(w.t.idle/4, 10*time.Millisecond))
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if w.t.idle > 0 && time.Since(time.Unix(0, w.last.Load())) > w.t.idle {
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
func (w *wsConn) readFrame() (int, []byte, error) {
	_ = w.c.SetReadDeadline(time.Now().Add(w.t.pong))
	kind, b, err := w.c.ReadMessage()
	if err == nil {
		w.touch()
	}
	return kind, b, err
}

// copyFrame streams the next message of w to to, without holding it whole.
func (w *wsConn) copyFrame(to *wsConn) error {
	_ = w.c.SetReadDeadline(time.Now().Add(w.t.pong))
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
	w      *wsConn
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

// runLocalExec bridges an upgraded caller to a command run by the local
// client c: frames in become stdin and resizes, output becomes frames, and
// the exit is the last frame. The command is killed when the caller goes
// away, the server shuts down (ctx) or the session is idle for idle.
func runLocalExec(ctx context.Context, w *wsConn, c ClientAPI, allocID string, req ExecRequest) {
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
		w.closeWithError(err)
	case errors.Is(cause, errExecIdle):
		w.closeWith(websocket.ClosePolicyViolation, cause.Error())
	case errors.Is(cause, state.ErrInvalid):
		w.closeWithError(cause)
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

// relayExec copies frames both ways between an upgraded caller and the
// node's exec socket until either ends, then closes both. The node runs
// the session; the server enforces its own idle timeout and pings both
// ends, so that a caller or node that is gone ends the session.
func relayExec(ctx context.Context, caller, node *wsConn) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	caller.armPong()
	node.armPong()
	go caller.keepAlive(ctx, cancel)
	go node.keepAlive(ctx, cancel)
	var wg sync.WaitGroup
	wg.Add(2)
	pass := func(from, to *wsConn, fromCaller bool) {
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
					caller.closeWithError(state.Invalidf("frame", "%v", err))
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

// dialNodeExec opens the exec socket of the node at target for the
// request's path and query. A node that refuses answers with its status
// and message, which become the error.
func dialNodeExec(ctx context.Context, r *http.Request, nt nodeTarget, path string, query url.Values, t execTimings) (*wsConn, error) {
	target := nt.url
	u := *target
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	u.Path, u.RawQuery = path, query.Encode()
	h := http.Header{}
	h.Set(HeaderClientProxied, signClientRequest(nt.secretHash, http.MethodGet, u.RequestURI(), nt.now()))
	if t := tokenOf(r); t != "" {
		h.Set(HeaderToken, t)
	}
	d := websocket.Dialer{HandshakeTimeout: clientProxyDialTimeout, ReadBufferSize: 32 << 10, WriteBufferSize: 32 << 10, TLSClientConfig: nt.tls}
	c, resp, err := d.DialContext(ctx, u.String(), h)
	if err != nil {
		if resp != nil {
			defer resp.Body.Close()
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			return nil, &CodedError{Code: resp.StatusCode, Message: strings.TrimSpace(string(msg))}
		}
		return nil, &CodedError{Code: http.StatusBadGateway, Message: fmt.Sprintf("cannot reach node at %s: %v", target.Host, err), Err: err}
	}
	t.idle = 0 // the caller's side keeps the idle clock
	return newWSConn(c, t), nil
}
