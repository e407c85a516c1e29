// Package router is the HTTP router of every sched agent: httprouter with
// the static-beside-parameter conflicts of the API dispatched in one
// table. The server core (package http) routes /v1 and /api/v2 with it,
// and a client agent's own surface (http/clientapi) its node-local
// routes.
package router

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/julienschmidt/httprouter"
)

// Router routes requests with an httprouter.Router. httprouter refuses a
// static segment beside a parameter at the same position, which the API
// has in several places (/v1/node/pools and /v1/node/pool/:pool_name next
// to /v1/node/:node_id, /v1/acl/token/self next to
// /v1/acl/token/:accessor_id). Such routes are found when the router is
// built and given to httprouter once, as the parameter route; a dispatch
// table of the logical routes behind it (serveLogical) then picks one by
// the path's segments: a static segment wins over a parameter, and when
// nothing below the static segment matches, the parameter is tried. Every
// other route goes to httprouter as registered.
//
// Handle only records a route: the httprouter.Router is built on the first
// request, when every conflict is known, and Handle panics after that.
//
// Parameter values are unescaped path segments: an ID holding a slash is
// sent with the slash escaped (%2F) and arrives whole. A parameter never
// matches an empty segment.
type Router struct {
	// RedirectTrailingSlash redirects /a/b/ to /a/b (and back) when only
	// the other form is registered. Off, such a path is a 404.
	RedirectTrailingSlash bool
	// HandleMethodNotAllowed answers a known path with an unregistered
	// method through MethodNotAllowed (with an Allow header); off, it is a
	// 404. OPTIONS on a known path is always answered 200 with Allow.
	HandleMethodNotAllowed bool
	// NotFound answers a request no route matches; nil means a plain 404.
	NotFound http.Handler
	// MethodNotAllowed answers a known path with a method it does not
	// serve; nil means a plain 405.
	MethodNotAllowed http.Handler

	// paths are the logical routes by pattern; params maps a parameter's
	// position (the segments before it) to its name, which must not vary.
	paths  map[string]*routePath
	params map[string]string

	once sync.Once
	hr   *httprouter.Router
	// ordered is every logical route, most specific first.
	ordered []*routePath
}

// routePath is one registered path pattern and its handler per method.
type routePath struct {
	pattern  string
	segs     []string
	handlers map[string]httprouter.Handle
	// phys is the pattern's segments as registered with httprouter: a
	// static segment beside a parameter is replaced by that parameter.
	phys []string
}

// New returns a Router that redirects a trailing slash and answers 405
// to a known path with an unregistered method.
func New() *Router {
	return &Router{RedirectTrailingSlash: true, HandleMethodNotAllowed: true}
}

// Route is one registered method and path pattern.
type Route struct {
	Method, Path string
}

// Routes lists the registered routes, in no particular order.
func (rt *Router) Routes() []Route {
	var out []Route
	for path, p := range rt.paths {
		for m := range p.handlers {
			out = append(out, Route{Method: m, Path: path})
		}
	}
	return out
}

// Handle registers h for method and path. It panics on a malformed path,
// a duplicate route, two parameters of different names at the same
// position, or a route registered after the first request: programming
// errors found at start-up.
func (rt *Router) Handle(method, path string, h httprouter.Handle) {
	if rt.hr != nil {
		panic("router: route registered after the router started serving: " + method + " " + path)
	}
	if !strings.HasPrefix(path, "/") {
		panic("router: path must begin with '/': " + path)
	}
	if rt.paths == nil {
		rt.paths, rt.params = map[string]*routePath{}, map[string]string{}
	}
	p := rt.paths[path]
	if p == nil {
		p = &routePath{pattern: path, segs: splitPath(path), handlers: map[string]httprouter.Handle{}}
		rt.checkSegments(p)
		rt.paths[path] = p
	}
	if _, dup := p.handlers[method]; dup {
		panic("router: duplicate route " + method + " " + path)
	}
	p.handlers[method] = h
}

// checkSegments panics on a segment the router cannot route and records
// p's parameter names by position.
func (rt *Router) checkSegments(p *routePath) {
	for i, seg := range p.segs {
		if strings.HasPrefix(seg, "*") {
			panic("router: catch-all parameters are not supported: " + p.pattern)
		}
		if !isParam(seg) {
			continue
		}
		if seg == ":" {
			panic("router: empty parameter name in " + p.pattern)
		}
		at := strings.Join(p.segs[:i], "/")
		if name, ok := rt.params[at]; ok && name != seg {
			panic("router: parameter " + seg + " conflicts with " + name + " in " + p.pattern)
		}
		rt.params[at] = seg
	}
}

// splitPath splits "/a/b/" into ["a", "b", ""]: a trailing slash is a
// segment of its own, so /a/b/ and /a/b are different routes.
func splitPath(path string) []string {
	if path == "/" || path == "" {
		return nil
	}
	return strings.Split(path[1:], "/")
}

func isParam(seg string) bool { return strings.HasPrefix(seg, ":") }

// build hands every route to a new httprouter.Router.
func (rt *Router) build() {
	for _, p := range rt.paths {
		rt.ordered = append(rt.ordered, p)
	}
	slices.SortFunc(rt.ordered, moreSpecific)
	fold(rt.ordered, 0)
	byPhys := map[string][]*routePath{}
	for _, p := range rt.ordered {
		phys := "/" + strings.Join(p.phys, "/")
		byPhys[phys] = append(byPhys[phys], p)
	}
	hr := &httprouter.Router{
		HandleMethodNotAllowed: rt.HandleMethodNotAllowed,
		HandleOPTIONS:          true,
		// httprouter's Allow lists the methods of the route it matched;
		// behind a folded route, the logical route decides.
		GlobalOPTIONS:    http.HandlerFunc(rt.serveAnyRoute),
		MethodNotAllowed: http.HandlerFunc(rt.serveAnyRoute),
		NotFound:         http.HandlerFunc(rt.notFound),
	}
	for phys, paths := range byPhys {
		if len(paths) == 1 && paths[0].pattern == phys {
			for m, h := range paths[0].handlers {
				hr.Handle(m, phys, rt.nonEmptyParams(h))
			}
			continue
		}
		dispatch := func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) { rt.serveLogical(w, r, paths) }
		methods := map[string]bool{}
		for _, p := range paths {
			for m := range p.handlers {
				if !methods[m] {
					methods[m] = true
					hr.Handle(m, phys, dispatch)
				}
			}
		}
	}
	rt.hr = hr
}

// moreSpecific orders paths as a request is matched against them: at the
// first segment where they differ, a static segment before a parameter.
func moreSpecific(a, b *routePath) int {
	for i := 0; i < len(a.segs) && i < len(b.segs); i++ {
		x, y := a.segs[i], b.segs[i]
		switch xp, yp := isParam(x), isParam(y); {
		case xp && !yp:
			return 1
		case !xp && yp:
			return -1
		case x != y:
			return strings.Compare(x, y)
		}
	}
	return len(a.segs) - len(b.segs)
}

// fold sets the httprouter segments of paths, which share them up to
// depth: where a parameter is among the segments at depth, it stands for
// the static segments there too (except the empty segment of a trailing
// slash, which httprouter allows beside a parameter). paths are ordered,
// so the same parameter is chosen on every build.
func fold(paths []*routePath, depth int) {
	param := ""
	for _, p := range paths {
		if depth < len(p.segs) && isParam(p.segs[depth]) {
			param = p.segs[depth]
			break
		}
	}
	below := map[string][]*routePath{}
	for _, p := range paths {
		if depth == len(p.segs) {
			continue
		}
		seg := p.segs[depth]
		if param != "" && seg != "" {
			seg = param
		}
		p.phys = append(p.phys[:depth], seg)
		below[seg] = append(below[seg], p)
	}
	for _, next := range below {
		fold(next, depth+1)
	}
}

// ServeHTTP dispatches r to its route, or to NotFound or MethodNotAllowed.
//
// A path sent with escaped characters (a child job's ID holds a slash:
// /v1/job/cron%2Fperiodic-1700000000) is matched on its escaped form, so
// an escaped slash stays inside its segment, and parameters are unescaped.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt.once.Do(rt.build)
	if r.URL.RawPath != "" {
		if h, ps, _ := rt.hr.Lookup(r.Method, r.URL.RawPath); h != nil {
			for i := range ps {
				if v, err := url.PathUnescape(ps[i].Value); err == nil {
					ps[i].Value = v
				}
			}
			h(w, r, ps)
			return
		}
	}
	rt.hr.ServeHTTP(w, r)
}

// pathSegments is r's path split into unescaped segments, an escaped
// slash staying inside its segment.
func pathSegments(r *http.Request) []string {
	if r.URL.RawPath == "" {
		return splitPath(r.URL.Path)
	}
	segs := splitPath(r.URL.RawPath)
	for i, seg := range segs {
		if v, err := url.PathUnescape(seg); err == nil {
			segs[i] = v
		}
	}
	return segs
}

// serveLogical is the dispatch table of a folded route: it serves r by the
// first of paths (most specific first) that its path matches, with that
// route's handler for r's method, an OPTIONS answer, a 405, or a 404 when
// none matches.
func (rt *Router) serveLogical(w http.ResponseWriter, r *http.Request, paths []*routePath) {
	p, ps := match(paths, pathSegments(r))
	switch {
	case p == nil:
		rt.notFound(w, r)
	case p.handlers[r.Method] != nil:
		p.handlers[r.Method](w, r, ps)
	case r.Method == http.MethodOptions:
		w.Header().Set("Allow", allowed(p))
		w.WriteHeader(http.StatusOK)
	case rt.HandleMethodNotAllowed:
		w.Header().Set("Allow", allowed(p))
		serveError(rt.MethodNotAllowed, http.StatusMethodNotAllowed, w, r)
	default:
		rt.notFound(w, r)
	}
}

// serveAnyRoute answers OPTIONS and 405 for a path httprouter found under
// another method, from the logical route the path matches.
func (rt *Router) serveAnyRoute(w http.ResponseWriter, r *http.Request) {
	w.Header().Del("Allow")
	rt.serveLogical(w, r, rt.ordered)
}

// nonEmptyParams keeps a parameter from matching an empty segment
// (/v1/node//allocations), which httprouter allows.
func (rt *Router) nonEmptyParams(h httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		for _, p := range ps {
			if p.Value == "" {
				rt.notFound(w, r)
				return
			}
		}
		h(w, r, ps)
	}
}

// match returns the first of paths that segs match, with its parameters.
func match(paths []*routePath, segs []string) (*routePath, httprouter.Params) {
next:
	for _, p := range paths {
		if len(p.segs) != len(segs) {
			continue
		}
		var ps httprouter.Params
		for i, seg := range p.segs {
			switch {
			case isParam(seg) && segs[i] != "":
				ps = append(ps, httprouter.Param{Key: seg[1:], Value: segs[i]})
			case seg != segs[i]:
				continue next
			}
		}
		return p, ps
	}
	return nil, nil
}

// notFound redirects to the other form of a path with a trailing slash
// when that one is registered (and redirects are on), else answers 404.
func (rt *Router) notFound(w http.ResponseWriter, r *http.Request) {
	w.Header().Del("Allow")
	if path := r.URL.Path; rt.RedirectTrailingSlash && path != "/" && path != "" {
		other := path + "/"
		if strings.HasSuffix(path, "/") {
			other = path[:len(path)-1]
		}
		if p, _ := match(rt.ordered, splitPath(other)); p != nil && p.handlers[r.Method] != nil {
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
	serveError(rt.NotFound, http.StatusNotFound, w, r)
}

func serveError(h http.Handler, code int, w http.ResponseWriter, r *http.Request) {
	if h != nil {
		h.ServeHTTP(w, r)
		return
	}
	http.Error(w, http.StatusText(code), code)
}

// allowed lists a route's methods for the Allow header, with OPTIONS.
func allowed(p *routePath) string {
	methods := []string{http.MethodOptions}
	for m := range p.handlers {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	return strings.Join(methods, ", ")
}
