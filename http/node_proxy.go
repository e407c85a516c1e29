package http

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/schedhq/sched/http/clientapi"
	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// clientProxyDialTimeout bounds connecting to a node.
const clientProxyDialTimeout = 5 * time.Second

// relay serves the endpoints a server answers by relaying the request to
// another agent: an allocation's node-local endpoints (node_local.go),
// exec and the lifecycle the client runs (alloc_exec.go,
// alloc_lifecycle.go), another agent's log lines (ops.go). Each is served
// locally instead when the agent asked for is this one (the client of its
// own process, dev mode).
type relay struct{ *Server }

// clientFor finds who serves the client endpoints of allocID. When the
// local client (dev mode) runs it, it returns that client. Otherwise it
// proxies the request to the node that runs it, writing the answer, and
// returns nil with a nil error. An allocation unknown here or outside the
// request's namespace is a 404.
func (s relay) clientFor(w http.ResponseWriter, r *http.Request, allocID string) (clientapi.Client, error) {
	loc, err := s.locateAlloc(r, allocID)
	if err != nil || loc.local != nil {
		return loc.local, err
	}
	proxyToNode(w, r, loc.node, s.log.Warn)
	return nil, nil
}

// allocLocation is where an allocation's client endpoints are served:
// by the local client, or by the agent of its node.
type allocLocation struct {
	local clientapi.Client
	alloc *state.Allocation // as the servers hold it; nil when only the local client has it
	node  nodeTarget
}

// locateAlloc finds who serves allocID's client endpoints (see clientFor).
func (s relay) locateAlloc(r *http.Request, allocID string) (allocLocation, error) {
	ns := namespaceOf(r)
	alloc, err := s.store.AllocByID(nil, allocID)
	if err != nil {
		return allocLocation{}, err
	}
	local := s.cfg.Client
	if alloc == nil && local != nil {
		// Collected on the servers, but its directory may still be here.
		if a, err := local.Alloc(allocID); err == nil && a != nil && codec.InNamespace(ns, a.Namespace) {
			return allocLocation{local: local}, nil
		}
	}
	if alloc == nil || !codec.InNamespace(ns, alloc.Namespace) {
		return allocLocation{}, state.NotFoundf("allocation %q", allocID)
	}
	if local != nil && alloc.NodeID == local.NodeID() {
		return allocLocation{local: local, alloc: alloc}, nil
	}
	if r.Header.Get(clientapi.HeaderProxied) != "" {
		return allocLocation{}, state.NotFoundf("allocation %q is not on this agent's client", allocID)
	}
	node, err := s.store.NodeByID(nil, alloc.NodeID)
	if err != nil {
		return allocLocation{}, err
	}
	if node == nil {
		return allocLocation{}, state.NotFoundf("node %q of allocation %q", alloc.NodeID, allocID)
	}
	nt, err := s.nodeTargetOf(node)
	if err != nil {
		return allocLocation{}, err
	}
	return allocLocation{alloc: alloc, node: nt}, nil
}

// nodeTargetOf is the agent of node, to proxy a request to (signed).
func (s relay) nodeTargetOf(node *state.Node) (nodeTarget, error) {
	if node.HTTPAddr == "" {
		return nodeTarget{}, &CodedError{Code: http.StatusBadGateway, Message: fmt.Sprintf("node %s has no HTTP address", node.ID)}
	}
	target, err := clientapi.AgentURL(node.HTTPAddr)
	if err != nil {
		return nodeTarget{}, &CodedError{Code: http.StatusBadGateway, Message: fmt.Sprintf("node %s: %v", node.ID, err)}
	}
	if s.cfg.NodeTLS != nil && target.Scheme == "http" {
		target.Scheme = "https" // with tls.http every agent serves HTTPS
	}
	return nodeTarget{url: target, id: node.ID, secretHash: node.SecretHash, tls: s.cfg.NodeTLS, now: s.Now}, nil
}

// nodeTarget is the node agent a request is proxied to.
type nodeTarget struct {
	url        *url.URL
	id         string
	secretHash string      // the node's, to sign the request with
	tls        *tls.Config // nil: plain HTTP
	now        func() time.Time
}

// proxyToNode relays r to the agent at target and streams its answer back
// (FlushInterval -1: a followed log flows as it is written). The caller's
// token header travels with the request: the node's agent sees the same
// caller. The connection is not kept: these requests are rare, and a
// transport per request must not leave idle connections behind.
func proxyToNode(w http.ResponseWriter, r *http.Request, nt nodeTarget, warn func(string, ...any)) {
	target, nodeID := nt.url, nt.id
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Header.Set(clientapi.HeaderProxied, clientapi.Sign(nt.secretHash, pr.Out.Method, pr.Out.URL.RequestURI(), nt.now()))
		},
		Transport: &http.Transport{
			Proxy:             nil,
			DialContext:       (&net.Dialer{Timeout: clientProxyDialTimeout}).DialContext,
			TLSClientConfig:   nt.tls,
			DisableKeepAlives: true,
		},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, pr *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the caller went away
			}
			warn("proxying to a client node failed", "node", nodeID, "path", r.URL.Path, "error", err)
			codec.WriteError(w, &CodedError{Code: http.StatusBadGateway,
				Message: fmt.Sprintf("cannot reach node %s at %s: %v", nodeID, target.Host, err), Err: err})
		},
	}
	if r.Header.Get(clientapi.HeaderProxied) == "" {
		// The follow stream must not end at the agent's write timeout.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	}
	rp.ServeHTTP(w, r)
}

// alreadyWrittenOr is a handler's answer after clientFor: the error, or,
// when the request was proxied, nothing more to write.
func alreadyWrittenOr(err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return codec.AlreadyWritten{}, nil
}

// dialNodeExec opens the exec socket of the node nt for the request's
// path and query, signed, with the caller's token.
func dialNodeExec(ctx context.Context, r *http.Request, nt nodeTarget, path string, query url.Values, t clientapi.Timings) (*clientapi.Conn, error) {
	u := *nt.url
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	u.Path, u.RawQuery = path, query.Encode()
	h := http.Header{}
	h.Set(clientapi.HeaderProxied, clientapi.Sign(nt.secretHash, http.MethodGet, u.RequestURI(), nt.now()))
	if t := tokenOf(r); t != "" {
		h.Set(HeaderToken, t)
	}
	return clientapi.DialExec(ctx, &u, h, nt.tls, t)
}
