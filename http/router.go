package http

import (
	"net/http"
	"slices"
	"strings"

	"github.com/julienschmidt/httprouter"
)

// router matches a request's method and path to a registered route. It
// keeps httprouter's handler signature, parameters (":name" segments) and
// error hooks, and adds the one thing the Nomad API needs and httprouter
// refuses: a static segment and a parameter at the same position, such as
// /v1/node/pools next to /v1/node/:node_id, or /v1/acl/token/self next to
// /v1/acl/token/:accessor_id. A static segment wins over a parameter; when
// the rest of the path does not match below it, the parameter is tried.
//
// Parameter values are taken from the decoded path (URL.Path), so an ID
// sent percent-encoded arrives as one segment only when it holds no
// slash, as with httprouter. A parameter never matches an empty segment.
type router struct {
	root *routeNode
	// RedirectTrailingSlash redirects /a/b/ to /a/b (and back) when only
	// the other form is registered. Off, such a path is a 404.
	RedirectTrailingSlash bool
	// HandleMethodNotAllowed answers a known path with an unregistered
	// method through MethodNotAllowed (with an Allow header); off, it is a
	// 404.
	HandleMethodNotAllowed bool
	NotFound               http.Handler
	MethodNotAllowed       http.Handler
}

// routeNode is one path segment of the route tree.
type routeNode struct {
	static    map[string]*routeNode
	param     *routeNode
	paramName string
	// handlers maps method to handler for the path ending here.
	handlers map[string]httprouter.Handle
}

func newRouter() *router {
	return &router{root: &routeNode{}, RedirectTrailingSlash: true, HandleMethodNotAllowed: true}
}

// Handle registers h for method and path. It panics on a malformed path,
// a duplicate route, or two parameters of different names at the same
// position, which are programming errors found at start-up.
func (rt *router) Handle(method, path string, h httprouter.Handle) {
	if !strings.HasPrefix(path, "/") {
		panic("router: path must begin with '/': " + path)
	}
	n := rt.root
	for _, seg := range splitPath(path) {
		if name, ok := strings.CutPrefix(seg, ":"); ok {
			if name == "" {
				panic("router: empty parameter name in " + path)
			}
			if n.param == nil {
				n.param = &routeNode{paramName: name}
			} else if n.param.paramName != name {
				panic("router: parameter :" + name + " conflicts with :" + n.param.paramName + " in " + path)
			}
			n = n.param
			continue
		}
		if strings.HasPrefix(seg, "*") {
			panic("router: catch-all parameters are not supported: " + path)
		}
		if n.static == nil {
			n.static = map[string]*routeNode{}
		}
		child := n.static[seg]
		if child == nil {
			child = &routeNode{}
			n.static[seg] = child
		}
		n = child
	}
	if n.handlers == nil {
		n.handlers = map[string]httprouter.Handle{}
	}
	if _, dup := n.handlers[method]; dup {
		panic("router: duplicate route " + method + " " + path)
	}
	n.handlers[method] = h
}

// splitPath splits "/a/b/" into ["a", "b", ""]: a trailing slash is a
// segment of its own, so /a/b/ and /a/b are different routes.
func splitPath(path string) []string {
	if path == "/" {
		return nil
	}
	return strings.Split(path[1:], "/")
}

// lookup finds the node for segs, static segments first, and collects the
// parameters on the way. It returns nil when no registered route has that
// shape.
func (n *routeNode) lookup(segs []string, ps httprouter.Params) (*routeNode, httprouter.Params) {
	if len(segs) == 0 {
		if n.handlers == nil {
			return nil, nil
		}
		return n, ps
	}
	seg, rest := segs[0], segs[1:]
	if child := n.static[seg]; child != nil {
		if found, out := child.lookup(rest, ps); found != nil {
			return found, out
		}
	}
	if n.param != nil && seg != "" {
		return n.param.lookup(rest, append(ps, httprouter.Param{Key: n.param.paramName, Value: seg}))
	}
	return nil, nil
}

// ServeHTTP dispatches r to its route, or to NotFound or MethodNotAllowed.
func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if path == "" || path[0] != '/' {
		path = "/" + path
	}
	if n, ps := rt.root.lookup(splitPath(path), nil); n != nil {
		if h := n.handlers[r.Method]; h != nil {
			h(w, r, ps)
			return
		}
		if r.Method == http.MethodOptions {
			w.Header().Set("Allow", allowed(n))
			w.WriteHeader(http.StatusOK)
			return
		}
		if rt.HandleMethodNotAllowed {
			w.Header().Set("Allow", allowed(n))
			rt.serveError(rt.MethodNotAllowed, http.StatusMethodNotAllowed, w, r)
			return
		}
	} else if rt.RedirectTrailingSlash && path != "/" {
		other := path + "/"
		if strings.HasSuffix(path, "/") {
			other = path[:len(path)-1]
		}
		if n, _ := rt.root.lookup(splitPath(other), nil); n != nil && n.handlers[r.Method] != nil {
			code := http.StatusMovedPermanently
			if r.Method != http.MethodGet {
				code = http.StatusPermanentRedirect
			}
			u := *r.URL
			u.Path, u.RawPath = other, ""
			http.Redirect(w, r, u.String(), code)
			return
		}
	}
	rt.serveError(rt.NotFound, http.StatusNotFound, w, r)
}

func (rt *router) serveError(h http.Handler, code int, w http.ResponseWriter, r *http.Request) {
	if h != nil {
		h.ServeHTTP(w, r)
		return
	}
	http.Error(w, http.StatusText(code), code)
}

// allowed lists a node's methods for the Allow header, with OPTIONS.
func allowed(n *routeNode) string {
	methods := []string{http.MethodOptions}
	for m := range n.handlers {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	return strings.Join(methods, ", ")
}
