package http

import (
	"context"
	"net/http"
	"net/url"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// requestScope is what a /v1 request is about, as far as an ACL rule can
// tell: its namespace, its decoded query, and the task and allocation the
// exec rule reads. The core resolves it once, before the guard runs
// (Server.authorize), and hands it to the handler in the request's
// context: the guard and the handler read the same values, and no handler
// reads the namespace from the query again. Path parameters need no such
// care: the router decodes them once and passes the same
// httprouter.Params to both.
//
// The rules of resolution (docs/identity.md, "The request's namespace"):
//
//   - The query is parsed once with url.ParseQuery, so keys and values are
//     matched after percent-decoding: ?%6eamespace=team-b names team-b.
//     A query that does not parse (a bad escape such as ?namespace=%zz
//     or ?%zz, a semicolon) is a 400, never a query read as empty.
//   - namespace, task, alloc_id and allocID may be repeated only with the
//     same value: ?namespace=a&namespace=b is a 400 naming the parameter.
//     alloc_id and allocID are one parameter in two spellings.
//   - An empty or absent namespace is "default".
//   - A job write's body (register, update, plan, validate: the rules
//     marked fromBody) names the job's namespace; it is used when the
//     query names none, and a query and body that name different
//     namespaces are a 400. When the guard checks a namespace capability
//     it reads the body's namespace before deciding (peekBody);
//     otherwise (enforcement off, a management token) the handler
//     settles it from the job it decodes, by the same rule (placeJob),
//     so that an unchecked register costs no second decoding of the job.
//     Other bodies never name the namespace.
//   - `*` is kept as given. Routes that filter their answers (list
//     routes marked filtered) let in a caller with the capability in some
//     namespace and show only what it may see; everywhere else `*` needs
//     the capability in every namespace (Server.allowsNamespace).
//
// A scope belongs to one request and is only read once the guard is done,
// except by placeJob, which completes it from the handler's own decoding
// of the body.
type requestScope struct {
	// namespace is the request's namespace: never "".
	namespace string
	// named reports where namespace came from: "" for the default, else
	// "query" or "body".
	named string
	// query is the decoded query; nil when the request has none.
	query url.Values
	// task and allocID are ?task= and ?alloc_id= (or ?allocID=).
	task, allocID string
	// bodyRead reports whether the body's namespace was read (the guard
	// peeked it), and body is what the peek found.
	bodyRead bool
	body     bodyPeek
	// auth is what the guard learned about the caller; zero when nothing
	// was checked.
	auth requestAuth
}

type scopeKey struct{}

// scopeContext is a request's context with its scope: one allocation for
// both (context.WithValue would take a second one for the scope), on
// every /v1 request.
type scopeContext struct {
	context.Context
	sc requestScope
}

// Value returns the scope for scopeKey and asks the parent otherwise.
func (c *scopeContext) Value(key any) any {
	if key == (scopeKey{}) {
		return &c.sc
	}
	return c.Context.Value(key)
}

// scopeOf returns the scope the core attached to r, or nil.
func scopeOf(r *http.Request) *requestScope {
	sc, _ := r.Context().Value(scopeKey{}).(*requestScope)
	return sc
}

// withScope returns r carrying sc, and the scope it carries.
func withScope(r *http.Request, sc requestScope) (*http.Request, *requestScope) {
	c := &scopeContext{Context: r.Context(), sc: sc}
	return r.WithContext(c), &c.sc
}

// resolveQuery starts r's scope from its query (codec.ResolveQuery).
func resolveQuery(r *http.Request) (requestScope, error) {
	sc := requestScope{namespace: state.DefaultNamespace}
	q, err := codec.ResolveQuery(r.URL.RawQuery)
	if err != nil {
		return sc, err
	}
	sc.query, sc.task, sc.allocID = q.Query, q.Task, q.AllocID
	if q.Namespace != "" {
		sc.namespace, sc.named = q.Namespace, "query"
	}
	return sc, nil
}

// settle completes the namespace with one a body names: v is used when
// nothing named one yet, and must equal the namespace otherwise.
func (sc *requestScope) settle(v string) error {
	switch {
	case v == "" || v == sc.namespace && sc.named != "":
		return nil
	case sc.named != "":
		return codec.BadRequest("namespace in %s %q and body %q disagree", sc.named, sc.namespace, v)
	}
	sc.namespace, sc.named = v, "body"
	return nil
}

// readBody completes sc from r's body (job writes: rule.bodyNamespace),
// keeping what it read for the override check.
func (sc *requestScope) readBody(r *http.Request) error {
	body, err := peekBody(r)
	if err != nil {
		return err
	}
	sc.body, sc.bodyRead = body, true
	if body.Job != nil {
		return sc.settle(body.Job.Namespace)
	}
	return nil
}

// placeJob puts a job decoded from the request's body in the request's
// namespace: the one the job names, or the scope's when it names none. A
// job that names another namespace than the query is a 400, as it is in
// the guard; when the guard read the body, the job must name what it
// read (it always does: the same bytes, the same decoder), so a job never
// lands in a namespace nobody checked.
func placeJob(r *http.Request, job *state.Job) error {
	sc := scopeOf(r)
	if sc == nil {
		sc = &requestScope{namespace: state.DefaultNamespace}
	}
	if sc.bodyRead && job.Namespace != "" && job.Namespace != sc.namespace {
		return codec.BadRequest("Job.Namespace: %q is not the namespace %q the request was checked in", job.Namespace, sc.namespace)
	}
	if err := sc.settle(job.Namespace); err != nil {
		return err
	}
	job.Namespace = sc.namespace
	return nil
}

// namespaceOf returns the request's namespace as the core resolved it
// (requestScope). A request without a scope is one a client agent serves
// (NewClientHandler, which has no guard: it serves what a server checked
// and signed); it is resolved by the same rules from its query, and one
// that does not resolve names no namespace that exists.
func namespaceOf(r *http.Request) string {
	if sc := scopeOf(r); sc != nil {
		return sc.namespace
	}
	sc, err := resolveQuery(r)
	if err != nil {
		return unresolvedNamespace
	}
	return sc.namespace
}

// unresolvedNamespace is the namespace of a request whose query does not
// resolve and that reached a handler anyway: no namespace is called so
// (a name cannot hold a NUL byte), so it matches no object.
const unresolvedNamespace = "\x00unresolved"

// queryOf returns r's decoded query, to be read only: the scope's,
// parsed once (nil for a request without a query), or r.URL.Query() for
// a request without a scope.
func queryOf(r *http.Request) url.Values {
	if sc := scopeOf(r); sc != nil {
		return sc.query
	}
	return r.URL.Query()
}
