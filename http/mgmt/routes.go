package mgmt

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// The management API (/api/v2, spec/management-api.md). Every endpoint is
// registered through router.handle, which wraps it with what all of
// them share:
//
//  1. the per-token rate limit (ratelimit.go), headers on every
//     answer and 429 past it;
//  2. authentication: a token is required (Authorization: Bearer, or
//     X-Sched-Token), and a missing, unknown or expired token, or one that
//     speaks for no management-API principal, is a 401. The token's
//     subject becomes a state.Caller, which the permission functions of
//     package state judge (404 or 403 as spec §5 and §7 say);
//  3. the consistency barrier on reads (as on /v1; ?stale skips it);
//  4. JSON:API in and out: every answer, errors included, is a JSON:API
//     document.
//
// Handlers return (result, error); errors map to statuses in errorOf.
// Where a resource's create, read, update and delete share one shape, the
// resource only describes itself (resource.go) and the generic path serves
// it. Writes are proposed through the same Writer as /v1 (a follower
// forwards them to the leader before they reach a handler), with IDs (from
// the core's ID source, newID) and times (its clock) chosen here, by the
// leader, before proposing.

// APIVersion is the TFP-API-Version the management API declares, the
// JSON:API API version of the TFE release whose endpoints it serves.
// Terraform and go-tfe read it from GET /api/v2/ping.
const APIVersion = "2.6"

// apiPrefix is the path prefix of the management API.
const apiPrefix = "/api/v2"

// call is what the wrapper learned about a request before its handler
// runs.
type call struct {
	caller mgmt.Caller
	token  *state.ACLToken
}

// result is a handler's answer: a status and a document (nil for no
// body).
type result struct {
	status int
	doc    any
	// raw, when set, is written as the body as it is (a state file), with
	// rawType as its Content-Type.
	raw     []byte
	rawType string
}

// ok, created and noContent are a handler's usual answers.
func ok(doc any) (result, error) { return result{status: http.StatusOK, doc: doc}, nil }

func created(doc any) (result, error) {
	return result{status: http.StatusCreated, doc: doc}, nil
}

func noContent() (result, error) { return result{status: http.StatusNoContent}, nil }

// handler is the shape of every management-API handler.
type handler func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error)

// router registers the management API's routes: the server and the
// rate limiter its endpoints share.
type router struct {
	s       *Server
	limiter *rateLimiter
}

// managementRoutes registers the management API. Each area keeps its
// routes next to its handlers.
func (s *Server) managementRoutes() {
	m := &router{s: s, limiter: newRateLimiter(s.cfg.RateLimit, s.Now)}
	s.mount(http.MethodGet, apiPrefix+"/ping", m.ping)
	m.organizationRoutes() // orgs.go
	m.userRoutes()         // users.go
	m.teamRoutes()         // teams.go
	m.projectRoutes()      // projects.go
	m.teamProjectRoutes()  // team_projects.go
	m.workspaceRoutes()    // workspaces.go
	m.policySetRoutes()    // policy_sets.go
	m.terraformRoutes()    // terraform.go: runs, state and configuration versions (terraformAPI)
	m.adminRoutes()        // admin.go
	m.adminVersionRoutes() // admin_versions.go
}

// handle registers a management-API endpoint, path relative to /api/v2.
func (m *router) handle(method, path string, h handler) {
	m.s.mount(method, apiPrefix+path, m.wrap(h))
}

// wrap adapts a handler to the router: rate limit, token, barrier,
// then the handler; it writes the answer itself.
func (m *router) wrap(h handler) httprouter.Handle {
	s := m.s
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		res, err := m.serve(w, r, p, h)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if res.raw != nil {
			writeRaw(w, res)
			return
		}
		if err := jsonapi.Write(w, res.status, res.doc); err != nil {
			s.log.Warn("write response", "path", r.URL.Path, "error", err)
		}
	}
}

func (m *router) serve(w http.ResponseWriter, r *http.Request, p httprouter.Params, h handler) (result, error) {
	s := m.s
	secret := s.RequestToken(r)
	_, tok, resolveErr := s.authenticate(secret)
	key := "addr:" + remoteHost(r)
	if tok != nil {
		key = "token:" + tok.AccessorID
	}
	if err := m.limiter.admit(w, key); err != nil {
		return result{}, err
	}
	if resolveErr != nil {
		return result{}, resolveErr
	}
	caller, err := s.callerOf(tok)
	if err != nil {
		return result{}, err
	}
	if r.Method == http.MethodGet {
		if _, stale := r.URL.Query()["stale"]; !stale {
			if err := s.ReadBarrier(r.Context()); err != nil {
				return result{}, err
			}
		}
	}
	return h(w, r, p, &call{caller: caller, token: tok})
}

// errUnauthorized is the answer to a request without a usable token.
func errUnauthorized(detail string) error {
	return jsonapi.NewError(http.StatusUnauthorized, jsonapi.TitleUnauthorized, detail)
}

// authenticate resolves a request's secret. A missing, unknown or
// expired secret is a 401.
func (s *Server) authenticate(secret string) (*state.ACL, *state.ACLToken, error) {
	if secret == "" {
		return nil, nil, errUnauthorized("a token is required: send it as Authorization: Bearer <token>")
	}
	acl, tok, err := s.ResolveToken(secret)
	if errors.Is(err, state.ErrACLTokenNotFound) || (err == nil && tok == nil) {
		return nil, nil, errUnauthorized("the token is unknown or has expired")
	}
	return acl, tok, err
}

// callerOf returns whom tok speaks for. A management token is a site
// administrator; when it speaks for a user that still exists (the
// bootstrap token speaks for the first administrator), it acts as that
// user where a user is needed: organizations it creates have them as
// owner, /account/details shows them. Any other token must have a subject
// that still exists, else it authenticates no one here (401).
func (s *Server) callerOf(tok *state.ACLToken) (mgmt.Caller, error) {
	if tok.IsManagement() {
		c := mgmt.Caller{Kind: mgmt.CallerManagement, IsSiteAdmin: true}
		if sub := tok.Subject; sub != nil && sub.Kind == state.SubjectKindUser {
			u, err := s.store.UserByID(nil, sub.ID)
			if err != nil {
				return mgmt.Caller{}, err
			}
			if u != nil {
				c.UserID = u.ID
			}
		}
		return c, nil
	}
	if tok.Subject == nil {
		return mgmt.Caller{}, errUnauthorized("the token speaks for no user, team or organization of the management API")
	}
	c, err := s.store.CallerForSubject(nil, tok.Subject.Kind, tok.Subject.ID)
	if errors.Is(err, state.ErrNotFound) || errors.Is(err, state.ErrInvalid) {
		return mgmt.Caller{}, errUnauthorized("the token's " + tok.Subject.Kind + " no longer exists")
	}
	return c, err
}

// remoteHost is the client's address without its port.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// ping serves GET /api/v2/ping, which Terraform clients call first to
// learn the API version and the rate limit. It needs no token (it reveals
// nothing) but counts against the caller's rate limit like any request.
func (m *router) ping(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	s := m.s
	key := "addr:" + remoteHost(r)
	if _, tok, err := s.authenticate(s.RequestToken(r)); err == nil && tok != nil {
		key = "token:" + tok.AccessorID
	}
	w.Header().Set("TFP-API-Version", APIVersion)
	if err := m.limiter.admit(w, key); err != nil {
		s.writeError(w, r, err)
		return
	}
	_ = jsonapi.Write(w, http.StatusNoContent, nil)
}

// writeError writes err as a JSON:API error document: the state
// sentinels map to 404, 409, 403 and 422 (with each field's JSON pointer),
// coded errors keep their status, anything else is a 500 (logged).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := errorOf(r, err)
	if r.Context().Err() != nil {
		// The caller went away: not a fault, and nobody reads the answer.
		s.log.Debug("client went away", "method", r.Method, "path", r.URL.Path, "error", err)
		return
	}
	if e.Status >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	if werr := jsonapi.WriteError(w, e); werr != nil {
		s.log.Warn("write error response", "path", r.URL.Path, "error", werr)
	}
}

// errorOf maps an error to a JSON:API error answer.
func errorOf(r *http.Request, err error) *jsonapi.HTTPError {
	var he *jsonapi.HTTPError
	var ve *state.ValidationError
	var ce statusCoder
	switch {
	case errors.As(err, &he):
		return he
	case errors.As(err, &ve):
		return validationErrors(r.Method, ve)
	case errors.Is(err, state.ErrNotFound):
		return jsonapi.NewError(http.StatusNotFound, jsonapi.TitleNotFound, trimSentinel(err, state.ErrNotFound))
	case errors.Is(err, mgmt.ErrForbidden):
		return jsonapi.NewError(http.StatusForbidden, jsonapi.TitleForbidden, trimSentinel(err, mgmt.ErrForbidden))
	case errors.Is(err, state.ErrConflict):
		return jsonapi.NewError(http.StatusConflict, jsonapi.TitleConflict, trimSentinel(err, state.ErrConflict))
	case errors.As(err, &ce):
		return jsonapi.NewError(ce.StatusCode(), strings.ToLower(http.StatusText(ce.StatusCode())), ce.Error())
	}
	return jsonapi.NewError(http.StatusInternalServerError, jsonapi.TitleInternal, err.Error())
}

// trimSentinel drops the ": not found" a sentinel adds to a message: the
// title already says it.
func trimSentinel(err, sentinel error) string {
	return strings.TrimSuffix(err.Error(), ": "+sentinel.Error())
}

// validationErrors maps state's field errors: a field that is a JSON
// pointer is a 422 on the request document; any other field names a query
// parameter of a read (a 400, as JSON:API says of parameters) or an
// internal field of a write (a 422 without a source).
func validationErrors(method string, ve *state.ValidationError) *jsonapi.HTTPError {
	status := http.StatusUnprocessableEntity
	out := &jsonapi.HTTPError{}
	for _, fe := range ve.Errors {
		e := &jsonapi.Error{Title: jsonapi.TitleInvalid, Detail: fe.Message}
		switch {
		case strings.HasPrefix(fe.Field, "/"):
			e.Source = &jsonapi.Source{Pointer: fe.Field}
			e.Detail = capitalize(attrLabel(fe.Field)) + " " + fe.Message
		case method == http.MethodGet && fe.Field != "":
			status = http.StatusBadRequest
			e.Title = jsonapi.TitleBadRequest
			e.Source = &jsonapi.Source{Parameter: fe.Field}
		case fe.Field != "":
			e.Detail = fe.Field + ": " + fe.Message
		}
		out.Errors = append(out.Errors, e)
	}
	out.Status = status
	for _, e := range out.Errors {
		e.Status = fmt.Sprint(status)
	}
	return out
}

// capitalize upper-cases the first letter of an attribute's label, as
// TFE's details read ("Name may only contain …", "Name has already been
// taken"): go-tfe's callers compare them.
func capitalize(label string) string {
	if label == "" || label[0] < 'a' || label[0] > 'z' {
		return label
	}
	return string(label[0]-'a'+'A') + label[1:]
}

// attrLabel names the attribute a pointer ends at, for error details that
// read as TFE's do ("name has already been taken").
func attrLabel(pointer string) string {
	p := strings.TrimPrefix(pointer, "/data/attributes/")
	p = strings.TrimPrefix(p, "/data/relationships/")
	p = strings.TrimPrefix(p, "/data/")
	if p == "" || p == "/data" {
		return "data"
	}
	return strings.ReplaceAll(p, "/", ".")
}

// firstErr combines the checks of a request body: the JSON:API layer's
// (types, missing attributes) and the state's rules, so that invalid input
// is answered, every problem in one 422, before anything is proposed. An
// error that is not a 422 wins as it is.
func firstErr(errs ...error) error {
	var all []*jsonapi.Error
	for _, err := range errs {
		if err == nil {
			continue
		}
		var he *jsonapi.HTTPError
		var ve *state.ValidationError
		switch {
		case errors.As(err, &he) && he.Status == http.StatusUnprocessableEntity:
			all = append(all, he.Errors...)
		case errors.As(err, &ve):
			all = append(all, validationErrors(http.MethodPost, ve).Errors...)
		default:
			return err
		}
	}
	// A problem found by both layers (a name sent as a number is not a
	// string, and so missing) is told once, by the first.
	seen := map[string]bool{}
	var out []*jsonapi.Error
	for _, e := range all {
		if e.Source != nil && e.Source.Pointer != "" {
			if seen[e.Source.Pointer] {
				continue
			}
			seen[e.Source.Pointer] = true
		}
		out = append(out, e)
	}
	return jsonapi.Invalid(out)
}

// readDoc reads a request document, for handlers of writes.
func readDoc(r *http.Request) (*jsonapi.RequestDoc, error) { return jsonapi.ReadRequest(r) }

// readResource reads a request document and its primary resource object.
func readResource(r *http.Request, want jsonapi.Expect) (*jsonapi.ResourceObject, error) {
	doc, err := jsonapi.ReadRequest(r)
	if err != nil {
		return nil, err
	}
	return doc.Resource(want)
}

// readOptionalResource is readResource for actions whose body is
// optional (lock, run actions): an empty body gives nil.
func readOptionalResource(r *http.Request, want jsonapi.Expect) (*jsonapi.ResourceObject, error) {
	if r.Body == nil || r.ContentLength == 0 {
		return nil, nil
	}
	return readResource(r, want)
}

// propose sends a management command through the writer and returns what
// the state machine answered.
func (s *Server) propose(w http.ResponseWriter, r *http.Request, t store.MessageType, req any) (any, error) {
	resp, _, err := s.Propose(w, r, t, req)
	return resp, err
}

// now is the leader's clock, in the management API's precision.
func (s *Server) now() time.Time { return mgmt.Time(s.Now()) }

// pageOf reads the request's page parameters.
func pageOf(r *http.Request) (jsonapi.Page, error) { return jsonapi.ParsePage(r.URL.Query()) }

// statePage converts a page to the state's.
func statePage(p jsonapi.Page) store.Page { return store.Page{Number: p.Number, Size: p.Size} }

// listDoc builds a paginated list document.
func listDoc(r *http.Request, items []*jsonapi.Resource, p jsonapi.Page, total int) *jsonapi.Document {
	doc := jsonapi.Many(items)
	jsonapi.Paginate(doc, r, p, total)
	return doc
}

// notFound is the 404 of a resource the caller cannot see or that does
// not exist: the two are answered alike, so nothing leaks.
func notFound(kind, id string) error { return state.NotFoundf("%s %q not found", kind, id) }

// forbidden is the 403 of an action on a visible resource the caller may
// not take.
func forbidden(format string, args ...any) error { return mgmt.Forbiddenf(format, args...) }

// forbiddenUnless is the 403 of a rule the caller does not meet, nil when
// allowed.
func forbiddenUnless(allowed bool, format string, args ...any) error {
	if allowed {
		return nil
	}
	return forbidden(format, args...)
}

// statusCoder is an error that knows its HTTP status (the core's
// CodedError, say, from a write that found no leader).
type statusCoder interface {
	error
	StatusCode() int
}
