package http

import (
	"io"
	"net/http"
	"strings"
	"time"
)

// Timeouts bound how long one request may hold a connection. The agent
// sets the server-wide ones (ReadHeaderTimeout, IdleTimeout,
// MaxHeaderBytes) on its http.Server; WithTimeouts applies these per
// request, because a server-wide ReadTimeout or WriteTimeout would cut
// blocking queries (up to 10m), followed logs, snapshots and WebSockets.
type Timeouts struct {
	// Read bounds reading a request's body. Zero means none.
	Read time.Duration
	// Write bounds writing the answer of an ordinary request. Blocking
	// queries (?index=) get their longest wait on top; streaming answers
	// (followed logs, snapshots, WebSocket upgrades) get no bound. Zero
	// means none.
	Write time.Duration
}

// blockingAllowance is added to the write timeout of a blocking query:
// the longest wait (10m) plus its jitter (1/16) and a margin.
const blockingAllowance = 11 * time.Minute

// WithTimeouts puts t's per-request deadlines in front of next.
func WithTimeouts(next http.Handler, t Timeouts) http.Handler {
	if t.Read <= 0 && t.Write <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		stream := isStreaming(r)
		if t.Write > 0 && !stream {
			d := t.Write
			if r.URL.Query().Has("index") {
				d += blockingAllowance
			}
			_ = rc.SetWriteDeadline(time.Now().Add(d))
		}
		if t.Read > 0 && !stream && r.Body != nil && r.Body != http.NoBody {
			// The deadline covers the body only: once it is read, the
			// connection is only watched for the client going away, and
			// a deadline left in place would cancel a long poll.
			_ = rc.SetReadDeadline(time.Now().Add(t.Read))
			r.Body = &deadlineBody{ReadCloser: r.Body, done: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		}
		next.ServeHTTP(w, r)
	})
}

// isStreaming reports whether r's answer may rightly take longer than any
// fixed bound: a followed log, a snapshot, a WebSocket upgrade.
func isStreaming(r *http.Request) bool {
	switch {
	case strings.EqualFold(r.Header.Get("Upgrade"), "websocket"):
		return true
	case r.URL.Path == "/v1/operator/snapshot", r.URL.Path == "/v1/event/stream", r.URL.Path == "/v1/agent/monitor":
		return true
	case strings.HasPrefix(r.URL.Path, "/v1/client/fs/"):
		f := r.URL.Query().Get("follow")
		return f != "" && f != "false"
	}
	return false
}

// deadlineBody calls done when the body has been read to its end.
type deadlineBody struct {
	io.ReadCloser
	done   func()
	called bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.called {
		b.called = true
		b.done()
	}
	return n, err
}
