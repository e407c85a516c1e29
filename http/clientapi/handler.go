package clientapi

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/agentops"
	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/http/router"
	"github.com/schedhq/sched/state"
)

// AgentSelf is GET /v1/agent/self on a client-only agent: the
// client's node ID under stats.client.node_id, where Nomad's CLI looks
// for it (`sched node status -self`).
type AgentSelf struct {
	Config map[string]any               `json:"config"`
	Stats  map[string]map[string]string `json:"stats"`
	// Security is as in state.AgentSelf.
	Security *state.AgentSecurity `json:"security,omitempty"`
}

// NewHandler serves the node-local endpoints of a client-only agent
// (one that runs no server): GET /v1/client/fs/logs/:alloc_id, GET
// /v1/client/allocation/:alloc_id/stats, the exec socket, restart and
// signal, and /v1/client/fs/{ls,stat,cat,readat} (servers proxy or relay
// them here), and GET
// /v1/agent/self and /v1/agent/health for the local node. When c also
// implements ServerFollower, every other /v1 request is proxied to
// the client's current server.
//
// It resolves no token itself: a /v1/client request must carry the
// signature of a server that checked the caller's token (sign.go,
// when c implements Signer); one without is proxied to the server,
// which checks the token and sends it back signed, so the port enforces
// the servers' ACL rules. /v1/agent/self (the node's ID and the
// agent's security findings) needs agent:read, which the agent asks its
// server about (agent_self.go); /v1/agent/health is open, as on servers.
func NewHandler(c Client, logger *slog.Logger) http.Handler {
	return NewHandlerWith(c, logger, HandlerConfig{})
}

// HandlerConfig is what a client-only agent serves of its own
// beside the node-local endpoints.
type HandlerConfig struct {
	// Metrics serves GET /v1/metrics (open, as on servers): the client
	// agent's runtime, its allocations, its heartbeats. Nil: the request
	// goes to the server, like any /v1 request the client does not serve.
	Metrics agentops.MetricsSource
	// Monitor serves GET /v1/agent/monitor: the client agent's own log
	// lines. It needs agent:read, which only a server can check: a
	// request without a server's signature goes to the server with
	// node_id set to this node, and the server, having checked the
	// caller's token, sends it back signed (sign.go). Nil: the
	// request goes to the server unchanged.
	Monitor agentops.LogMonitor
	// Security is what the agent's configuration leaves open, served in
	// /v1/agent/self; nil leaves it out.
	Security *state.AgentSecurity
}

// NewHandlerWith is NewHandler serving also the agent's own
// metrics and log lines (cfg).
func NewHandlerWith(c Client, logger *slog.Logger, cfg HandlerConfig) http.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	rt := router.New()
	rt.RedirectTrailingSlash = false
	// toServer proxies r to the client's current server, when it has one.
	toServer := func(w http.ResponseWriter, r *http.Request) bool {
		f, ok := c.(ServerFollower)
		if !ok || !strings.HasPrefix(r.URL.Path, "/v1/") {
			return false
		}
		target, err := serverURL(f.CurrentServer())
		if err != nil {
			return false
		}
		var tlsCfg *tls.Config
		if t, ok := c.(interface{ ServerTLS() *tls.Config }); ok {
			tlsCfg = t.ServerTLS()
		}
		r.Header.Del(HeaderProxied)
		proxyToServer(w, r, target, tlsCfg, logger)
		return true
	}
	rt.NotFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if toServer(w, r) {
			return
		}
		codec.WriteError(w, &codec.CodedError{Code: http.StatusNotFound, Message: "no such endpoint on a client agent: " + r.URL.Path})
	})
	rt.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		codec.WriteError(w, &codec.CodedError{Code: http.StatusMethodNotAllowed, Message: "method " + r.Method + " not allowed on " + r.URL.Path})
	})
	// Every /v1/client route serves a server-signed request only
	// (sign.go); an unsigned one goes to the server to be checked.
	h := func(fn codec.Handler) httprouter.Handle {
		serve := serveJSON(logger, fn)
		return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
			if checkSignature(w, r, c, toServer, time.Now) {
				serve(w, r, p)
			}
		}
	}
	open := func(fn codec.Handler) httprouter.Handle { return serveJSON(logger, fn) }
	rt.Handle(http.MethodGet, "/v1/client/fs/logs/:alloc_id", h(func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
		lr, err := ParseLogRequest(r)
		if err != nil {
			return nil, err
		}
		id := p.ByName("alloc_id")
		if err := hasAlloc(r, c, id); err != nil {
			return nil, err
		}
		return ServeLogs(w, r, c, id, lr)
	}))
	rt.Handle(http.MethodGet, "/v1/client/allocation/:alloc_id/stats", h(func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
		id := p.ByName("alloc_id")
		if err := hasAlloc(r, c, id); err != nil {
			return nil, err
		}
		return Stats(r.Context(), c, id)
	}))
	rt.Handle(http.MethodGet, "/v1/client/allocation/:alloc_id/exec", func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		if !checkSignature(w, r, c, toServer, time.Now) {
			return
		}
		if err := serveExec(c, w, r, p.ByName("alloc_id")); err != nil {
			codec.WriteError(w, err)
		}
	})
	for _, op := range FSOps() {
		rt.Handle(http.MethodGet, "/v1/client/fs/"+op+"/:alloc_id", h(func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
			q, err := ParseFSQuery(r, op)
			if err != nil {
				return nil, err
			}
			id := p.ByName("alloc_id")
			if err := hasAlloc(r, c, id); err != nil {
				return nil, err
			}
			return ServeFS(w, r, c, id, op, q)
		}))
	}
	for _, m := range []string{http.MethodPost, http.MethodPut} {
		rt.Handle(m, "/v1/client/allocation/:alloc_id/restart", h(func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
			var req state.AllocRestartRequest
			if err := codec.DecodeKeptBody(r, &req); err != nil {
				return nil, err
			}
			id := p.ByName("alloc_id")
			if err := hasAlloc(r, c, id); err != nil {
				return nil, err
			}
			return struct{}{}, c.AllocRestart(r.Context(), id, req.TaskName, req.AllTasks)
		}))
		rt.Handle(m, "/v1/client/allocation/:alloc_id/signal", h(func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
			var req state.AllocSignalRequest
			if err := codec.DecodeKeptBody(r, &req); err != nil {
				return nil, err
			}
			id := p.ByName("alloc_id")
			if err := hasAlloc(r, c, id); err != nil {
				return nil, err
			}
			return struct{}{}, c.AllocSignal(r.Context(), id, req.Task, req.Signal)
		}))
	}
	rt.Handle(http.MethodGet, "/v1/agent/self", open(func(_ http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
		if err := checkAgentRead(r, c); err != nil {
			return nil, err
		}
		return &AgentSelf{
			Config:   map[string]any{"Client": map[string]any{"Enabled": true}, "Server": map[string]any{"Enabled": false}},
			Stats:    map[string]map[string]string{"client": {"node_id": c.NodeID()}},
			Security: cfg.Security,
		}, nil
	}))
	rt.Handle(http.MethodGet, "/v1/agent/health", open(func(http.ResponseWriter, *http.Request, httprouter.Params) (any, error) {
		return &state.AgentHealthResponse{Client: &state.AgentHealth{OK: true, Message: "ok"}}, nil
	}))
	if cfg.Metrics != nil {
		rt.Handle(http.MethodGet, "/v1/metrics", open(func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
			return agentops.WriteMetrics(w, r, cfg.Metrics, time.Now(), logger)
		}))
	}
	if cfg.Monitor != nil {
		rt.Handle(http.MethodGet, "/v1/agent/monitor", open(func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
			mr, err := agentops.ParseMonitorRequest(r)
			if err != nil {
				return nil, err
			}
			if mr.ServerID != "" || (mr.NodeID != "" && mr.NodeID != c.NodeID()) {
				if toServer(w, r) { // another agent's lines: the server finds it
					return codec.AlreadyWritten{}, nil
				}
				return nil, &codec.CodedError{Code: http.StatusBadGateway, Message: "this client agent has no server to ask for another agent's log lines"}
			}
			if r.Header.Get(HeaderProxied) == "" {
				if _, signs := c.(Signer); signs {
					if c.NodeID() == "" {
						return nil, &codec.CodedError{Code: http.StatusServiceUnavailable, Message: "this client agent has no node ID yet"}
					}
					// Unsigned: the server checks the caller's token and
					// sends the request back here signed.
					q := r.URL.Query()
					q.Set("node_id", c.NodeID())
					r.URL.RawQuery = q.Encode()
					r.RequestURI = r.URL.RequestURI()
				}
			}
			if !checkSignature(w, r, c, toServer, time.Now) {
				return codec.AlreadyWritten{}, nil
			}
			return agentops.StreamMonitor(w, r, cfg.Monitor, mr)
		}))
	}
	return rt
}

// serverURL parses the base URL a client names its server by.
func serverURL(addr string) (*url.URL, error) {
	if addr == "" {
		return nil, errors.New("no server")
	}
	return AgentURL(addr)
}

// AgentURL turns an agent's HTTP address ("host:port", or a URL, as a
// node's HTTPAddr or a client's server) into its base URL.
func AgentURL(addr string) (*url.URL, error) {
	if !strings.Contains(addr, "://") {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("HTTP address %q is not host:port", addr)
		}
		return &url.URL{Scheme: "http", Host: addr}, nil
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("HTTP address %q is not an http(s) URL", addr)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// proxyToServer relays a request a client agent does not serve to its
// current server, streaming (blocking queries may wait minutes).
func proxyToServer(w http.ResponseWriter, r *http.Request, target *url.URL, tlsCfg *tls.Config, logger *slog.Logger) {
	var transport http.RoundTripper
	if tlsCfg != nil {
		transport = &http.Transport{TLSClientConfig: tlsCfg, DisableKeepAlives: true}
	}
	rp := &httputil.ReverseProxy{
		Transport: transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, pr *http.Request, err error) {
			if r.Context().Err() != nil {
				return
			}
			logger.Warn("proxying to the client's server failed", "server", target.Host, "path", r.URL.Path, "error", err)
			codec.WriteError(w, &codec.CodedError{Code: http.StatusBadGateway,
				Message: fmt.Sprintf("cannot reach the client's server at %s: %v", target.Host, err), Err: err})
		},
	}
	rp.ServeHTTP(w, r)
}

// hasAlloc checks that the client holds allocID in the request's
// namespace: another namespace's allocation is a 404, as on servers.
func hasAlloc(r *http.Request, c Client, allocID string) error {
	a, err := c.Alloc(allocID)
	if err != nil {
		return err
	}
	if ns := namespaceOf(r); a == nil || ns != "*" && ns != a.Namespace {
		return state.NotFoundf("allocation %q", allocID)
	}
	return nil
}

// serveJSON adapts a codec.Handler for the client handler: the value
// as JSON, or the error as its status.
func serveJSON(logger *slog.Logger, fn codec.Handler) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		v, err := fn(w, r, p)
		if err != nil {
			if codec.ClientGone(r, err) {
				logger.Debug("client went away", "path", r.URL.Path, "error", err)
				return
			}
			if codec.StatusOf(err) >= 500 {
				logger.Error("client request failed", "path", r.URL.Path, "error", err)
			}
			codec.WriteError(w, err)
			return
		}
		if _, done := v.(codec.AlreadyWritten); done {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(v); err != nil {
			logger.Warn("encode client response", "path", r.URL.Path, "error", err)
		}
	}
}

// namespaceOf is the namespace of a request a server signed, resolved from
// its query by the rules of the server's core (docs/identity.md, "The
// request's namespace"): empty or absent is "default"; namespace, task
// and alloc_id (or allocID) may repeat only with one value. A query that
// breaks a rule names no namespace that exists.
func namespaceOf(r *http.Request) string {
	q, err := codec.ResolveQuery(r.URL.RawQuery)
	switch {
	case err != nil:
		return unresolvedNamespace
	case q.Namespace == "":
		return state.DefaultNamespace
	}
	return q.Namespace
}

// unresolvedNamespace is the namespace of a request whose query does not
// resolve: no namespace is called so (a name cannot hold a NUL byte), so
// it matches no allocation.
const unresolvedNamespace = "\x00unresolved"
