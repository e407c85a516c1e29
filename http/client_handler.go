package http

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/state"
)

// clientStats serves GET /v1/client/allocation/:alloc_id/stats: the
// allocation's CPU and memory use per running task and in total. Served
// here when the local client runs the allocation, proxied to its node
// otherwise.
func (s *Server) clientStats(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("alloc_id")
	local, err := s.clientFor(w, r, id)
	if err != nil || local == nil {
		return alreadyWrittenOr(err)
	}
	return allocStats(r, local, id)
}

// allocStats asks c for the allocation's use and fills in the total.
func allocStats(r *http.Request, c ClientAPI, allocID string) (*state.AllocResourceUsage, error) {
	u, err := c.AllocStats(r.Context(), allocID)
	if err != nil {
		return nil, err
	}
	if u == nil {
		u = &state.AllocResourceUsage{}
	}
	if u.Tasks == nil {
		u.Tasks = map[string]*state.TaskResourceUsage{}
	}
	if u.ResourceUsage == nil {
		u.ResourceUsage = SumResourceUsage(u.Tasks)
	}
	if u.Timestamp == 0 {
		for _, t := range u.Tasks {
			u.Timestamp = max(u.Timestamp, t.Timestamp)
		}
	}
	return u, nil
}

// SumResourceUsage adds up the tasks' use: RSS, CPU percent, MHz and CPU
// time. A field is Measured in the total when some task measured it.
func SumResourceUsage(tasks map[string]*state.TaskResourceUsage) *state.ResourceUsage {
	sum := &state.ResourceUsage{MemoryStats: &state.MemoryStats{Measured: []string{}}, CpuStats: &state.CpuStats{Measured: []string{}}}
	for _, name := range slices.Sorted(maps.Keys(tasks)) {
		t := tasks[name]
		if t == nil || t.ResourceUsage == nil {
			continue
		}
		if m := t.ResourceUsage.MemoryStats; m != nil {
			sum.MemoryStats.RSS += m.RSS
			sum.MemoryStats.Measured = mergeMeasured(sum.MemoryStats.Measured, m.Measured)
		}
		if c := t.ResourceUsage.CpuStats; c != nil {
			sum.CpuStats.Percent += c.Percent
			sum.CpuStats.TotalTicks += c.TotalTicks
			sum.CpuStats.TotalTime += c.TotalTime
			sum.CpuStats.Measured = mergeMeasured(sum.CpuStats.Measured, c.Measured)
		}
	}
	return sum
}

func mergeMeasured(into, more []string) []string {
	for _, m := range more {
		found := false
		for _, have := range into {
			found = found || have == m
		}
		if !found {
			into = append(into, m)
		}
	}
	return into
}

// withClientStats adds the local client's node ID to a server's
// /v1/agent/self under stats.client.node_id (dev mode), where `sched node
// status -self` looks for it. self is the Forwarder's fresh answer.
func withClientStats(self *state.AgentSelf, c ClientAPI) *state.AgentSelf {
	if self == nil || c == nil || c.NodeID() == "" {
		return self
	}
	if self.Stats == nil {
		self.Stats = map[string]map[string]string{}
	}
	self.Stats["client"] = map[string]string{"node_id": c.NodeID()}
	return self
}

// ClientAgentSelf is GET /v1/agent/self on a client-only agent: the
// client's node ID under stats.client.node_id, where Nomad's CLI looks
// for it (`sched node status -self`).
type ClientAgentSelf struct {
	Config map[string]any               `json:"config"`
	Stats  map[string]map[string]string `json:"stats"`
	// Security is as in state.AgentSelf.
	Security *state.AgentSecurity `json:"security,omitempty"`
}

// NewClientHandler serves the node-local endpoints of a client-only agent
// (one that runs no server): GET /v1/client/fs/logs/:alloc_id, GET
// /v1/client/allocation/:alloc_id/stats, the exec socket, restart and
// signal, and /v1/client/fs/{ls,stat,cat,readat} (servers proxy or relay
// them here), and GET
// /v1/agent/self and /v1/agent/health for the local node. When c also
// implements ClientServerFollower, every other /v1 request is proxied to
// the client's current server.
//
// It resolves no token itself: a /v1/client request must carry the
// signature of a server that checked the caller's token (client_sign.go,
// when c implements ClientSigner); one without is proxied to the server,
// which checks the token and sends it back signed, so the port enforces
// the servers' ACL rules. /v1/agent/self (the node's ID) and
// /v1/agent/health are open, as they are on servers.
func NewClientHandler(c ClientAPI, logger *slog.Logger) http.Handler {
	return NewClientHandlerWith(c, logger, ClientHandlerConfig{})
}

// ClientHandlerConfig is what a client-only agent serves of its own
// beside the node-local endpoints.
type ClientHandlerConfig struct {
	// Metrics serves GET /v1/metrics (open, as on servers): the client
	// agent's runtime, its allocations, its heartbeats. Nil: the request
	// goes to the server, like any /v1 request the client does not serve.
	Metrics MetricsSource
	// Monitor serves GET /v1/agent/monitor: the client agent's own log
	// lines. It needs agent:read, which only a server can check: a
	// request without a server's signature goes to the server with
	// node_id set to this node, and the server, having checked the
	// caller's token, sends it back signed (client_sign.go). Nil: the
	// request goes to the server unchanged.
	Monitor LogMonitor
	// Security is what the agent's configuration leaves open, served in
	// /v1/agent/self; nil leaves it out.
	Security *state.AgentSecurity
}

// NewClientHandlerWith is NewClientHandler serving also the agent's own
// metrics and log lines (cfg).
func NewClientHandlerWith(c ClientAPI, logger *slog.Logger, cfg ClientHandlerConfig) http.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	rt := newRouter()
	rt.RedirectTrailingSlash = false
	// toServer proxies r to the client's current server, when it has one.
	toServer := func(w http.ResponseWriter, r *http.Request) bool {
		f, ok := c.(ClientServerFollower)
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
		r.Header.Del(HeaderClientProxied)
		proxyToServer(w, r, target, tlsCfg, logger)
		return true
	}
	rt.NotFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if toServer(w, r) {
			return
		}
		writeError(w, &CodedError{Code: http.StatusNotFound, Message: "no such endpoint on a client agent: " + r.URL.Path})
	})
	rt.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &CodedError{Code: http.StatusMethodNotAllowed, Message: "method " + r.Method + " not allowed on " + r.URL.Path})
	})
	// Every /v1/client route serves a server-signed request only
	// (client_sign.go); an unsigned one goes to the server to be checked.
	h := func(fn handlerFunc) httprouter.Handle {
		serve := serveClientJSON(logger, fn)
		return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
			if checkClientSignature(w, r, c, toServer, time.Now) {
				serve(w, r, p)
			}
		}
	}
	open := func(fn handlerFunc) httprouter.Handle { return serveClientJSON(logger, fn) }
	rt.Handle(http.MethodGet, "/v1/client/fs/logs/:alloc_id", h(func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
		lr, err := parseLogRequest(r)
		if err != nil {
			return nil, err
		}
		id := p.ByName("alloc_id")
		if err := clientHasAlloc(r, c, id); err != nil {
			return nil, err
		}
		return serveLogs(w, r, c, id, lr)
	}))
	rt.Handle(http.MethodGet, "/v1/client/allocation/:alloc_id/stats", h(func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
		id := p.ByName("alloc_id")
		if err := clientHasAlloc(r, c, id); err != nil {
			return nil, err
		}
		return allocStats(r, c, id)
	}))
	rt.Handle(http.MethodGet, "/v1/client/allocation/:alloc_id/exec", func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		if !checkClientSignature(w, r, c, toServer, time.Now) {
			return
		}
		if err := clientAgentExec(c, w, r, p.ByName("alloc_id")); err != nil {
			writeError(w, err)
		}
	})
	for _, op := range []string{"ls", "stat", "cat", "readat"} {
		rt.Handle(http.MethodGet, "/v1/client/fs/"+op+"/:alloc_id", h(func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
			q, err := parseFSQuery(r, op)
			if err != nil {
				return nil, err
			}
			id := p.ByName("alloc_id")
			if err := clientHasAlloc(r, c, id); err != nil {
				return nil, err
			}
			return serveFS(w, r, c, id, op, q)
		}))
	}
	for _, m := range []string{http.MethodPost, http.MethodPut} {
		rt.Handle(m, "/v1/client/allocation/:alloc_id/restart", h(func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
			var req state.AllocRestartRequest
			if err := decodeKeptBody(r, &req); err != nil {
				return nil, err
			}
			id := p.ByName("alloc_id")
			if err := clientHasAlloc(r, c, id); err != nil {
				return nil, err
			}
			return struct{}{}, c.AllocRestart(r.Context(), id, req.TaskName, req.AllTasks)
		}))
		rt.Handle(m, "/v1/client/allocation/:alloc_id/signal", h(func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
			var req state.AllocSignalRequest
			if err := decodeKeptBody(r, &req); err != nil {
				return nil, err
			}
			id := p.ByName("alloc_id")
			if err := clientHasAlloc(r, c, id); err != nil {
				return nil, err
			}
			return struct{}{}, c.AllocSignal(r.Context(), id, req.Task, req.Signal)
		}))
	}
	rt.Handle(http.MethodGet, "/v1/agent/self", open(func(http.ResponseWriter, *http.Request, httprouter.Params) (any, error) {
		return &ClientAgentSelf{
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
			return writeMetrics(w, r, cfg.Metrics, time.Now(), logger)
		}))
	}
	if cfg.Monitor != nil {
		rt.Handle(http.MethodGet, "/v1/agent/monitor", open(func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
			mr, err := parseMonitorRequest(r)
			if err != nil {
				return nil, err
			}
			if mr.serverID != "" || (mr.nodeID != "" && mr.nodeID != c.NodeID()) {
				if toServer(w, r) { // another agent's lines: the server finds it
					return alreadyWritten{}, nil
				}
				return nil, &CodedError{Code: http.StatusBadGateway, Message: "this client agent has no server to ask for another agent's log lines"}
			}
			if r.Header.Get(HeaderClientProxied) == "" {
				if _, signs := c.(ClientSigner); signs {
					if c.NodeID() == "" {
						return nil, &CodedError{Code: http.StatusServiceUnavailable, Message: "this client agent has no node ID yet"}
					}
					// Unsigned: the server checks the caller's token and
					// sends the request back here signed.
					q := r.URL.Query()
					q.Set("node_id", c.NodeID())
					r.URL.RawQuery = q.Encode()
					r.RequestURI = r.URL.RequestURI()
				}
			}
			if !checkClientSignature(w, r, c, toServer, time.Now) {
				return alreadyWritten{}, nil
			}
			return streamMonitor(w, r, cfg.Monitor, mr)
		}))
	}
	return rt
}

// serverURL parses the base URL a client names its server by.
func serverURL(addr string) (*url.URL, error) {
	if addr == "" {
		return nil, errors.New("no server")
	}
	return nodeURL(addr)
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
			writeError(w, &CodedError{Code: http.StatusBadGateway,
				Message: fmt.Sprintf("cannot reach the client's server at %s: %v", target.Host, err), Err: err})
		},
	}
	rp.ServeHTTP(w, r)
}

// clientHasAlloc checks that the client holds allocID in the request's
// namespace: another namespace's allocation is a 404, as on servers.
func clientHasAlloc(r *http.Request, c ClientAPI, allocID string) error {
	a, err := c.Alloc(allocID)
	if err != nil {
		return err
	}
	if a == nil || !inNamespace(namespaceOf(r), a.Namespace) {
		return state.NotFoundf("allocation %q", allocID)
	}
	return nil
}

// serveClientJSON adapts a handlerFunc for the client handler: the value
// as JSON, or the error as its status.
func serveClientJSON(logger *slog.Logger, fn handlerFunc) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		v, err := fn(w, r, p)
		if err != nil {
			if clientGone(r, err) {
				logger.Debug("client went away", "path", r.URL.Path, "error", err)
				return
			}
			if statusOf(err) >= 500 {
				logger.Error("client request failed", "path", r.URL.Path, "error", err)
			}
			writeError(w, err)
			return
		}
		if _, done := v.(alreadyWritten); done {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(v); err != nil {
			logger.Warn("encode client response", "path", r.URL.Path, "error", err)
		}
	}
}
