package http

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/schedhq/sched/http/codec"
)

// HeaderForwardedBy is the hop guard: a follower that proxies a request to
// the leader sets it to its own server ID. A server that receives a request
// carrying it and is not the leader (leadership moved while the request was
// in flight) answers 503 instead of forwarding again, so a request crosses
// at most one hop and never loops.
const HeaderForwardedBy = "X-Sched-Forwarded-By"

// ReadIndexPath is the internal endpoint a follower calls on the leader at
// the start of a consistent read. It is not part of the public API: it
// answers only on the leader (503 elsewhere), with a ReadIndexResponse,
// and clients have no use for it.
const ReadIndexPath = "/v1/internal/read-index"

const readIndexPath = ReadIndexPath

// ReadIndexResponse is the answer of ReadIndexPath.
type ReadIndexResponse struct {
	// Index is the leader's applied index after it confirmed with a quorum
	// that it still leads: a follower that has applied it holds every
	// write acknowledged before the request.
	Index uint64
}

// Forwarding limits.
const (
	// forwardLeaderWait bounds how long a request waits for a leader (or
	// for a new one, after the known leader could not be reached) before
	// it is answered 503.
	forwardLeaderWait = 5 * time.Second
	// forwardDialTimeout bounds connecting to the leader. On a LAN a live
	// leader accepts in microseconds; a partitioned one never does.
	forwardDialTimeout = 2 * time.Second
	// maxReplayBody is the largest body kept in memory so the request can
	// be sent again when the leader could not be reached (nothing was
	// sent, so a retry cannot apply a write twice). Larger or chunked
	// bodies stream through once.
	maxReplayBody = 4 << 20
)

// needsLeader reports whether r must be answered by the leader: every
// write, except agent-local ones, the two that only compute (parse and
// validate) and search (a read sent as POST), and the reads that only the leader answers consistently
// (a snapshot and the Raft configuration) unless ?stale is given. Agent,
// status and internal endpoints are always answered where they arrive.
func needsLeader(r *http.Request) bool {
	p := r.URL.Path
	for _, prefix := range []string{"/v1/agent/", "/v1/status/", "/v1/internal/"} {
		if strings.HasPrefix(p, prefix) {
			return false
		}
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		if p != "/v1/operator/snapshot" && p != "/v1/operator/raft/configuration" {
			return false
		}
		_, stale := r.URL.Query()["stale"]
		return !stale
	}
	return p != "/v1/jobs/parse" && p != "/v1/validate/job" && p != "/v1/search"
}

// withForwarding puts forwarding in front of next when a Forwarder is
// configured: requests that need the leader are answered here by proxying
// them to it, unless this server is the leader.
func (s *Server) withForwarding(next http.Handler) http.Handler {
	fwd := s.cfg.Forwarder
	if fwd == nil {
		return next
	}
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         dialMarked(&net.Dialer{Timeout: forwardDialTimeout, KeepAlive: 30 * time.Second}),
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		TLSClientConfig:     s.cfg.ForwardTLS,
	}
	scheme := "http"
	if s.cfg.ForwardTLS != nil {
		scheme = "https"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isSnapshotRestore(r) {
			// The restore handler reads the unlimited body from here; the
			// general body limit of the wrapper does not suit backups.
			r = r.WithContext(context.WithValue(r.Context(), rawBodyKey{}, r.Body))
		}
		if !needsLeader(r) || fwd.IsLeader() {
			next.ServeHTTP(w, r)
			return
		}
		if by := r.Header.Get(HeaderForwardedBy); by != "" {
			codec.WriteError(w, &CodedError{Code: http.StatusServiceUnavailable, Message: fmt.Sprintf(
				"request forwarded by server %s as to the leader, but this server is not the leader (leadership is changing); retry", by)})
			return
		}
		s.forward(w, r, next, transport, scheme)
	})
}

// forward proxies r to the leader and relays its answer: status, headers
// and body, streamed (FlushInterval -1), so long polls, streams and
// WebSocket upgrades work through it too. When the leader cannot be
// reached at all, the request waits for another leader and is sent again,
// provided its body could be kept.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, local http.Handler, transport http.RoundTripper, scheme string) {
	fwd := s.cfg.Forwarder
	body, replayable, err := bufferBody(r)
	if err != nil {
		codec.WriteError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), forwardLeaderWait)
	defer cancel()
	avoid := ""
	for {
		addr, self, err := fwd.LeaderHTTPAddr(ctx, avoid)
		if err != nil {
			if r.Context().Err() != nil {
				return // the client went away
			}
			msg := "no cluster leader"
			if avoid != "" {
				msg = fmt.Sprintf("no cluster leader: the leader at %s cannot be reached and no other has been elected", avoid)
			}
			codec.WriteError(w, &CodedError{Code: http.StatusServiceUnavailable, Message: msg, Err: err})
			return
		}
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		if self {
			local.ServeHTTP(w, r)
			return
		}
		if !s.proxyOnce(w, r, scheme, addr, transport, replayable) {
			return
		}
		s.log.Warn("leader unreachable, waiting for another", "leader", addr, "path", r.URL.Path)
		avoid = addr
	}
}

// errLeaderChanged cancels a forwarded request whose leader is no longer
// the leader as this server knows it: a leader cut off by a partition never
// answers, and a request must not hang on it.
var errLeaderChanged = errors.New("the leader changed while the request was forwarded")

// proxyOnce sends r to the leader at scheme://addr. It returns true, having written
// nothing, when the connection could not be made and r may be sent again.
func (s *Server) proxyOnce(w http.ResponseWriter, r *http.Request, scheme, addr string, transport http.RoundTripper, replayable bool) (retry bool) {
	fwd := s.cfg.Forwarder
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	changed := fwd.LeaderChanged()
	go func() {
		for {
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
			// A wake-up is not always a new leader: one queued before
			// the request was sent can arrive after it. Abandon the
			// request only when the leader really is another now.
			changed = fwd.LeaderChanged()
			if !stillLeader(fwd, addr) {
				cancel(errLeaderChanged)
				return
			}
		}
	}()
	target := &url.URL{Scheme: scheme, Host: addr}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Header.Set(HeaderForwardedBy, fwd.LocalID())
		},
		Transport:     transport,
		FlushInterval: -1,
		BufferPool:    proxyBuffers,
		ErrorHandler: func(w http.ResponseWriter, pr *http.Request, err error) {
			var de *dialError
			switch {
			case errors.As(err, &de) && replayable:
				retry = true
			case r.Context().Err() != nil:
				// The client went away; nobody reads an answer.
			case errors.As(err, &de):
				codec.WriteError(w, &CodedError{Code: http.StatusServiceUnavailable,
					Message: fmt.Sprintf("cannot reach the leader at %s: %v", addr, de.err), Err: err})
			case errors.Is(context.Cause(ctx), errLeaderChanged):
				codec.WriteError(w, &CodedError{Code: http.StatusServiceUnavailable,
					Message: fmt.Sprintf("the leader at %s lost leadership while the request was forwarded to it; it may or may not have been applied", addr), Err: err})
			default:
				s.log.Warn("forwarding to the leader failed", "leader", addr, "path", r.URL.Path, "error", err)
				codec.WriteError(w, &CodedError{Code: http.StatusBadGateway,
					Message: fmt.Sprintf("forwarding to the leader at %s failed, the request may or may not have been applied: %v", addr, err), Err: err})
			}
		},
	}
	rp.ServeHTTP(w, r.WithContext(ctx))
	return retry && r.Context().Err() == nil
}

// proxyBuffers lends the forwarding proxy its copy buffers: without a
// pool httputil.ReverseProxy makes a 32 KiB buffer for every request it
// relays, most of a forwarded write's garbage (BenchmarkForwardedWrite:
// 50 KB a request).
var proxyBuffers = &bufferPool{pool: sync.Pool{New: func() any { return new([proxyBufferSize]byte) }}}

// proxyBufferSize is the size of the proxy's copy buffers, the size
// httputil.ReverseProxy makes without a pool.
const proxyBufferSize = 32 << 10

// bufferPool is an httputil.BufferPool over a sync.Pool of arrays.
type bufferPool struct{ pool sync.Pool }

// Get lends a buffer.
func (p *bufferPool) Get() []byte { return p.pool.Get().(*[proxyBufferSize]byte)[:] }

// Put takes back a buffer Get lent; any other is dropped.
func (p *bufferPool) Put(b []byte) {
	if cap(b) == proxyBufferSize {
		p.pool.Put((*[proxyBufferSize]byte)(b[:proxyBufferSize]))
	}
}

// stillLeader reports whether the server at the HTTP address addr is the
// leader this server knows right now, without waiting for one.
func stillLeader(fwd Forwarder, addr string) bool {
	now, cancel := context.WithCancel(context.Background())
	cancel()
	cur, self, err := fwd.LeaderHTTPAddr(now, "")
	return err == nil && !self && cur == addr
}

// bufferBody reads a small body of known length into memory so the request
// can be replayed. A larger or chunked body is left to stream once.
func bufferBody(r *http.Request) (body []byte, replayable bool, err error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil, true, nil
	}
	if r.ContentLength < 0 || r.ContentLength > maxReplayBody {
		return nil, false, nil
	}
	body, err = io.ReadAll(io.LimitReader(r.Body, r.ContentLength+1))
	if err != nil {
		return nil, false, codec.BadRequest("read request body: %v", err)
	}
	return body, true, nil
}

// dialError marks a failure to connect: nothing of the request was sent.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// dialMarked wraps a dialer so its failures are dialErrors.
func dialMarked(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, &dialError{err: err}
		}
		return c, nil
	}
}

// internalReadIndex serves ReadIndexPath on the leader.
func (s *Server) internalReadIndex(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	if !s.cfg.Forwarder.IsLeader() {
		return nil, &CodedError{Code: http.StatusServiceUnavailable, Message: "this server is not the leader"}
	}
	index, err := s.cfg.Forwarder.ReadIndex(r.Context())
	if err != nil {
		return nil, err
	}
	return ReadIndexResponse{Index: index}, nil
}

// rawBodyKey keys the request body as it arrived, before the general size
// limit, in the context of a snapshot restore.
type rawBodyKey struct{}

func isSnapshotRestore(r *http.Request) bool {
	return r.URL.Path == "/v1/operator/snapshot" && (r.Method == http.MethodPut || r.Method == http.MethodPost)
}
