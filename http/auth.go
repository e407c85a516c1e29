package http

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// HeaderToken carries a token's secret. `Authorization: Bearer <secret>`
// is accepted too; the header wins when both are sent.
const HeaderToken = "X-Sched-Token"

// Messages of the 403 answers. Nomad's clients print them verbatim.
const (
	msgPermissionDenied = "Permission denied"
	msgTokenNotFound    = "ACL token not found"
)

// errPermissionDenied is the answer to a token that lacks what an
// endpoint needs, and to anonymous callers of protected endpoints.
var errPermissionDenied = &CodedError{Code: http.StatusForbidden, Message: msgPermissionDenied}

// errTokenNotFound is the /v1 answer to an unknown or expired token: 403,
// as Nomad answers (the management API answers 401).
var errTokenNotFound = &CodedError{Code: http.StatusForbidden, Message: msgTokenNotFound, Err: state.ErrACLTokenNotFound}

// tokenOf returns the secret a request carries, or "".
func tokenOf(r *http.Request) string {
	if t := strings.TrimSpace(r.Header.Get(HeaderToken)); t != "" {
		return t
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, rest, ok := strings.Cut(strings.TrimSpace(auth), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// requestAuth is what the guard learned about a request's caller; it rides
// in the request's scope.
type requestAuth struct {
	// acl is what the caller may do; nil when nothing was checked
	// (enforcement off, or an open endpoint).
	acl *state.ACL
	// token is the caller's token; nil for anonymous callers and nodes.
	token *state.ACLToken
	// pending, when set, finishes a check the guard could not make: the
	// token of a WebSocket handshake arrives in its first frame.
	pending func(secret string) error
}

// authOf returns the request's auth, or nil for a request without a
// scope. Its fields are zero when nothing was checked.
func authOf(r *http.Request) *requestAuth {
	if sc := scopeOf(r); sc != nil {
		return &sc.auth
	}
	return nil
}

// aclOf returns the caller's ACL, or nil when capabilities are not checked
// for this request (everything is allowed).
func aclOf(r *http.Request) *state.ACL {
	if a := authOf(r); a != nil {
		return a.acl
	}
	return nil
}

// namespaceFilter returns whether a namespace's objects may be shown to
// the caller, who needs capability there; nil means everything may be
// shown. List handlers that serve namespace=* apply it to every entry
// (and mark their route filtered in the rule table).
func namespaceFilter(r *http.Request, capability string) func(ns string) bool {
	acl := aclOf(r)
	if acl == nil || acl.IsManagement() {
		return nil
	}
	return func(ns string) bool { return acl.AllowNamespaceOperation(ns, capability) }
}

// namespaceVisible is namespaceFilter for the namespaces themselves: a
// namespace is shown to a caller who may do anything at all in it.
func namespaceVisible(r *http.Request) func(ns string) bool {
	acl := aclOf(r)
	if acl == nil || acl.IsManagement() {
		return nil
	}
	return acl.AllowNamespace
}

// authorized wraps a route's handler with its scope and capability check
// (called by wrap for every route). The rule is looked up once, here, at
// registration.
func (s *Server) authorized(rt route, h codec.Handler) codec.Handler {
	if !strings.HasPrefix(rt.Path, "/v1/") {
		return h
	}
	rule, _ := ruleFor(s.aclTable(), rt)
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
		r, err := s.authorize(rule, r, p)
		if err != nil {
			return nil, err
		}
		return h(w, r, p)
	}
}

// aclRules is the enforcement table, built once. It is never written
// after initialization.
var aclRules = aclRuleTable()

// aclTable returns the enforcement table.
func (s *Server) aclTable() map[route]aclRule { return aclRules }

// authorize resolves r's scope (requestScope), whether or not
// capabilities are enforced, so that handlers see the same namespace
// either way, and checks r against rule. It returns r carrying the scope
// and the caller's auth in its context, or a 400 (a scope that does not
// resolve) or a 403.
func (s *Server) authorize(rule aclRule, r *http.Request, p httprouter.Params) (*http.Request, error) {
	sc := scopeOf(r)
	if sc == nil {
		resolved, err := resolveQuery(r)
		if err != nil {
			return nil, err
		}
		r, sc = withScope(r, resolved)
	}
	resolver := s.cfg.ACL
	if resolver == nil || (!rule.always && !resolver.Enforcing()) || rule.kind == ruleOpen {
		return r, nil
	}
	secret := tokenOf(r)
	if rule.wsHandshake && secret == "" {
		if hs, _ := boolParam(r, "ws_handshake"); hs {
			sc.auth = requestAuth{pending: func(secret string) error {
				_, err := s.check(rule, r, p, secret)
				return err
			}}
			return r, nil
		}
	}
	auth, err := s.check(rule, r, p, secret)
	if err != nil {
		return nil, err
	}
	sc.auth = auth
	return r, nil
}

// completeHandshakeAuth finishes the check of a WebSocket request whose
// token arrived in its first frame (ws_handshake=true). Handlers of such
// routes must call it before acting on the connection; it returns nil
// when the guard already checked the request.
func completeHandshakeAuth(r *http.Request, secret string) error {
	if a := authOf(r); a != nil && a.pending != nil {
		return a.pending(secret)
	}
	return nil
}

// check resolves secret and tests it against rule.
func (s *Server) check(rule aclRule, r *http.Request, p httprouter.Params, secret string) (requestAuth, error) {
	if rule.nodeSecret == nodeSecretFromBody && s.cfg.LocalIntroSecret != "" && constantTimeEqual(secret, s.cfg.LocalIntroSecret) {
		// The client of this agent's own process, introduced by it.
		return requestAuth{}, nil
	}
	if rule.nodeSecret != noNodeSecret && secret != "" {
		ok, err := s.nodeSecretMatches(rule.nodeSecret, r, p, secret)
		if err != nil {
			return requestAuth{}, err
		}
		if ok {
			// A client agent: it acts for its node, with no ACL.
			return requestAuth{}, nil
		}
	}
	acl, tok, err := s.cfg.ACL.ResolveToken(secret)
	if errors.Is(err, state.ErrACLTokenNotFound) && secret != "" && !isStale(r) && s.cfg.Cluster != nil {
		// A token created a moment ago through another server may not
		// have reached this one's state yet: a request that is not stale
		// looks again once this server has caught up with the leader, as
		// its read would (a consistent read on a follower must accept a
		// token the leader already acknowledged).
		if berr := s.cfg.Cluster.ReadBarrier(r.Context()); berr == nil {
			acl, tok, err = s.cfg.ACL.ResolveToken(secret)
		}
	}
	if errors.Is(err, state.ErrACLTokenNotFound) {
		return requestAuth{}, errTokenNotFound
	}
	if err != nil {
		return requestAuth{}, err
	}
	ok, err := s.allows(rule, r, p, acl, tok)
	if err != nil {
		return requestAuth{}, err
	}
	if !ok {
		return requestAuth{}, errPermissionDenied
	}
	return requestAuth{acl: acl, token: tok}, nil
}

// allows evaluates rule for a caller with acl (never nil) and token (nil
// when anonymous).
func (s *Server) allows(rule aclRule, r *http.Request, p httprouter.Params, acl *state.ACL, tok *state.ACLToken) (bool, error) {
	if acl.IsManagement() {
		return true, nil
	}
	switch rule.kind {
	case ruleOpen:
		return true, nil
	case ruleAnyToken:
		return tok != nil, nil
	case ruleFiltering:
		return acl.AllowNodeRead() || acl.AllowAnyNamespace(state.NamespaceCapabilityReadJob), nil
	case ruleNode:
		return rule.write && acl.AllowNodeWrite() || !rule.write && acl.AllowNodeRead(), nil
	case ruleAgent:
		return rule.write && acl.AllowAgentWrite() || !rule.write && acl.AllowAgentRead(), nil
	case ruleOperator:
		return rule.write && acl.AllowOperatorWrite() || !rule.write && acl.AllowOperatorRead(), nil
	case ruleQuotaRead:
		return acl.AllowQuotaRead(), nil
	case ruleTokenRead:
		id := firstParam(p)
		return tok != nil && (id == "self" || id == tok.AccessorID), nil
	case rulePolicyRead:
		return tok != nil && slices.Contains(tok.Policies, firstParam(p)), nil
	case ruleNamespaceAny:
		if rule.filters {
			return acl.AllowSomeNamespace(), nil
		}
		return acl.AllowNamespace(firstParam(p)), nil
	case ruleNamespace:
		return s.allowsNamespace(rule, r, p, acl)
	}
	return false, nil // ruleManagement, and anything unknown
}

// allowsNamespace evaluates a namespace-capability rule in the namespace
// of r's scope, which authorize resolved from the query. A job write's
// body completes it here, where it is needed: a request that is not
// checked (enforcement off, a management token) has its body's namespace
// settled by the handler from the job it decodes (placeJob), by the same
// rule, with no second decoding of the job.
func (s *Server) allowsNamespace(rule aclRule, r *http.Request, p httprouter.Params, acl *state.ACL) (bool, error) {
	sc := scopeOf(r)
	if rule.bodyNamespace && !sc.bodyRead {
		if err := sc.readBody(r); err != nil {
			return false, err
		}
	}
	ns := sc.namespace
	has := func(capability string) bool {
		switch {
		case ns != allNamespaces:
			return acl.AllowNamespaceOperation(ns, capability)
		case rule.filters:
			return acl.AllowAnyNamespace(capability)
		default:
			return acl.AllowAllNamespaces(capability)
		}
	}
	ok := rule.all
	for _, c := range rule.caps {
		if rule.all {
			ok = ok && has(c)
		} else {
			ok = ok || has(c)
		}
	}
	if !ok {
		return false, nil
	}
	if rule.override && !has(state.NamespaceCapabilityGateOverride) {
		body := sc.body
		if !sc.bodyRead {
			var err error
			if body, err = peekBody(r); err != nil {
				return false, err
			}
		}
		if body.PolicyOverride {
			return false, nil
		}
	}
	if rule.execDriver && !has(state.NamespaceCapabilityAllocNodeExec) {
		unisolated, err := s.taskLacksIsolation(p, sc)
		if err != nil || unisolated {
			return false, err
		}
	}
	return true, nil
}

// allNamespaces is the namespace query value that selects every namespace.
const allNamespaces = "*"

// bodyPeek is what the guard reads of a job write's body: where the job is
// written, and whether policy checks are to be overridden.
type bodyPeek struct {
	Job *struct {
		ID        string
		Namespace string
	}
	PolicyOverride bool
	Node           *struct {
		ID       string
		SecretID string
	}
}

// peekBody decodes the fields of bodyPeek from r's body and puts the body
// back for the handler. A body that is not JSON peeks as empty: the
// handler rejects it with a precise message.
func peekBody(r *http.Request) (bodyPeek, error) {
	var out bodyPeek
	if r.Body == nil {
		return out, nil
	}
	data, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(data))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return out, &CodedError{Code: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("request body exceeds %d bytes", mbe.Limit)}
		}
		return out, codec.BadRequest("read request body: %v", err)
	}
	if codec.CheckJSONDepth(data, codec.MaxJSONDepth) == nil {
		_ = json.Unmarshal(data, &out) // the handler's decodeBody refuses a deeper body
	}
	return out, nil
}

// firstParam returns the value of the route's first path parameter.
func firstParam(p httprouter.Params) string {
	if len(p) == 0 {
		return ""
	}
	return p[0].Value
}

// nodeSecretMatches reports whether secret is the SecretID of the node the
// request is about.
func (s *Server) nodeSecretMatches(src nodeSecretSource, r *http.Request, p httprouter.Params, secret string) (bool, error) {
	id := firstParam(p)
	if src == nodeSecretFromBody {
		body, err := peekBody(r)
		if err != nil {
			return false, err
		}
		if body.Node == nil || body.Node.ID == "" || !constantTimeEqual(body.Node.SecretID, secret) {
			return false, nil
		}
		id = body.Node.ID
	}
	node, err := s.store.NodeByID(nil, id)
	if err != nil || node == nil {
		// A secret proves only the identity of a node that exists: a new
		// node is introduced by a token with node:write (see
		// docs/security.md), never by a secret it chose itself.
		return false, err
	}
	return node.SecretMatches(secret), nil
}

// constantTimeEqual compares two secrets without leaking, through timing,
// how much of them matched.
func constantTimeEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// isolatingDrivers run tasks with their own file-system view. A task under
// any other driver (raw_exec, or a driver this server does not know) can
// reach the node's files, so running a command in it needs
// alloc-node-exec as well as alloc-exec.
var isolatingDrivers = map[string]bool{"exec": true, "docker": true, "podman": true, "java": true, "mock": true}

// taskLacksIsolation reports whether the task the request runs a command
// in (?task=) may run under a driver without file-system isolation. The
// task is looked up where the handler finds it, in the namespace of the
// request's scope: the allocation (named by the path on the exec route, by
// ?alloc_id= on the action route) in the servers' state or, once
// collected there, on the local client; the task in the job version the
// allocation runs (its Job), in its group. Without an allocation, every
// group of the job's current version is searched.
//
// Isolation must be shown: a task, allocation or job that is not found
// counts as unisolated (the caller then needs alloc-node-exec, or gets the
// 403 rather than the handler's 404), so that no lookup the guard gets
// wrong lets a command into a raw_exec task.
func (s *Server) taskLacksIsolation(p httprouter.Params, sc *requestScope) (bool, error) {
	ns, allocID := sc.namespace, sc.allocID
	var job *state.Job
	if id := p.ByName("alloc_id"); id != "" {
		allocID = id
	} else {
		var err error
		if job, err = s.store.JobByID(nil, ns, firstParam(p)); err != nil || job == nil {
			return true, err
		}
	}
	group := ""
	if allocID != "" {
		a, err := s.execAlloc(allocID)
		if err != nil {
			return true, err
		}
		if a == nil || !codec.InNamespace(ns, a.Namespace) || job != nil && (a.JobID != job.ID || a.Namespace != job.Namespace) {
			return true, nil
		}
		group = a.TaskGroup
		switch {
		case a.Job != nil:
			job = a.Job // the version the allocation runs
		case job == nil:
			if job, err = s.store.JobByID(nil, a.Namespace, a.JobID); err != nil || job == nil {
				return true, err
			}
		}
	}
	found := false
	for _, tg := range job.TaskGroups {
		if group != "" && tg.Name != group {
			continue
		}
		for _, t := range tg.Tasks {
			if t.Name == sc.task {
				if !isolatingDrivers[t.Driver] {
					return true, nil
				}
				found = true
			}
		}
	}
	return !found, nil
}

// execAlloc returns allocation id as the exec handlers find it: in the
// servers' state or, once collected there, on the local client; nil when
// neither holds it.
func (s *Server) execAlloc(id string) (*state.Allocation, error) {
	a, err := s.store.AllocByID(nil, id)
	if err != nil || a != nil || s.cfg.Client == nil {
		return a, err
	}
	if a, err := s.cfg.Client.Alloc(id); err == nil && a != nil {
		return a, nil
	}
	return nil, nil
}

// isStale reports whether r asks for a stale read (?stale, as parseQuery
// reads it).
func isStale(r *http.Request) bool {
	q := queryOf(r)
	_, ok := q["stale"]
	return ok && q.Get("stale") != "false"
}
