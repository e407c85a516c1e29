package mgmt

import (
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// API tokens of the management API. A user, team or organization token is
// an ACL token (the identity issue's) whose Subject names the user, team
// or organization it speaks for, so one token model serves both APIs: the
// token carries no /v1 policies, and on /api/v2 it is its subject. The
// secret is generated here, hashed before it is proposed, and shown once,
// in the answer to the request that created it.
//
// An organization's token names the organization by its external ID, not
// its name: a token must not outlive its organization and then speak for
// a new organization that took the name.

// subjectToken is the token of a team or of an organization, one a
// subject as in TFE, at .../authentication-token: POST generates it,
// replacing the previous one (201, with its secret); DELETE deletes it
// (204; 404 when there is none). A user's tokens are many: POST adds one
// (and a token is deleted by its ID). V is the subject as the caller sees
// it.
type subjectToken[V any] struct {
	s *Server
	// load finds the subject the route names, or a 404.
	load func(c *call, p httprouter.Params) (V, error)
	// may, when set, refuses a caller who may not manage the subject's
	// token (403).
	may func(V) error
	// subject is whom the token speaks for.
	subject func(V) state.TokenSubject
	// many keeps the subject's other tokens when one is created.
	many bool
}

func (st *subjectToken[V]) create(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	v, err := st.subjectOf(c, p)
	if err != nil {
		return result{}, err
	}
	req, err := st.s.readTokenRequest(r)
	if err != nil {
		return result{}, err
	}
	tok, secret, err := st.s.issueToken(w, r, st.subject(v), req, !st.many)
	if err != nil {
		return result{}, err
	}
	return created(jsonapi.One(tokenResource(tok, secret)))
}

func (st *subjectToken[V]) remove(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	v, err := st.subjectOf(c, p)
	if err != nil {
		return result{}, err
	}
	if err := st.s.deleteSubjectTokens(w, r, st.subject(v)); err != nil {
		return result{}, err
	}
	return noContent()
}

// subjectOf finds the subject and checks the caller may manage its token.
func (st *subjectToken[V]) subjectOf(c *call, p httprouter.Params) (V, error) {
	v, err := st.load(c, p)
	if err != nil || st.may == nil {
		return v, err
	}
	return v, st.may(v)
}

// tokenRequest is what a token create request may say.
type tokenRequest struct {
	description string
	expiresAt   *time.Time
}

// readTokenRequest reads the optional body of a token create request:
// attributes description and expired-at (ISO 8601, at least
// state.MinACLTokenTTL ahead). An empty body asks for a token that never
// expires.
func (s *Server) readTokenRequest(r *http.Request) (tokenRequest, error) {
	var out tokenRequest
	o, err := readOptionalResource(r, jsonapi.Expect{Type: typeAuthTokens, AllowEmptyType: true})
	if err != nil || o == nil {
		return out, err
	}
	if d := o.Attrs.NullableString("description"); d != nil {
		out.description = *d
		if len(out.description) > 256 {
			o.Attrs.Fail("description", "must be at most 256 characters long")
		}
	}
	if e := o.Attrs.NullableString("expired-at"); e != nil && *e != "" {
		t, perr := time.Parse(time.RFC3339, *e)
		switch {
		case perr != nil:
			o.Attrs.Fail("expired-at", "%q is not an ISO 8601 time such as 2030-01-02T15:04:05Z", *e)
		case t.Before(s.Now().Add(state.MinACLTokenTTL)):
			o.Attrs.Fail("expired-at", "must be at least %s in the future", state.MinACLTokenTTL)
		default:
			t = t.UTC()
			out.expiresAt = &t
		}
	}
	return out, o.Err()
}

// issueToken creates a token for subject and returns it with its secret.
// With replace, the subject's other tokens are deleted once the new one is
// written (organization and team tokens: one per subject, as in TFE). The
// new token is written first, so a failure between the two writes leaves
// an extra valid token, never none.
func (s *Server) issueToken(w http.ResponseWriter, r *http.Request, subject state.TokenSubject, req tokenRequest, replace bool) (*state.ACLToken, string, error) {
	var old []string
	if replace {
		toks, err := s.tokensOf(subject)
		if err != nil {
			return nil, "", err
		}
		for _, t := range toks {
			old = append(old, t.AccessorID)
		}
	}
	secret := state.NewID()
	tok := &state.ACLToken{
		AccessorID:     s.NewID(),
		SecretHash:     state.HashSecret(secret),
		Name:           req.description,
		Type:           state.ACLTokenTypeClient,
		Subject:        &subject,
		CreateTime:     s.now(),
		ExpirationTime: req.expiresAt,
	}
	if req.expiresAt != nil {
		tok.ExpirationTTL = req.expiresAt.Sub(tok.CreateTime)
	}
	if _, err := s.propose(w, r, store.ACLTokenUpsertRequestType, &store.ACLTokenUpsertRequest{Tokens: []*state.ACLToken{tok}}); err != nil {
		return nil, "", err
	}
	if len(old) > 0 {
		if _, err := s.propose(w, r, store.ACLTokenDeleteRequestType, &store.ACLTokenDeleteRequest{AccessorIDs: old}); err != nil {
			return nil, "", err
		}
	}
	stored, err := s.store.ACLTokenByAccessorID(nil, tok.AccessorID)
	if err != nil || stored == nil {
		return tok, secret, err
	}
	return stored, secret, nil
}

// tokensOf lists the tokens whose subject is subject, by accessor.
func (s *Server) tokensOf(subject state.TokenSubject) ([]*state.ACLToken, error) {
	all, err := s.store.ACLTokens(nil, "")
	if err != nil {
		return nil, err
	}
	var out []*state.ACLToken
	for _, t := range all {
		if t.Subject != nil && *t.Subject == subject {
			out = append(out, t)
		}
	}
	return out, nil
}

// revokeTokens deletes the tokens of subjects: after their subject is
// deleted they authenticate no one (callerOf answers 401), and deleting
// them keeps the token table from filling with dead tokens. Best effort:
// a failure is logged, not answered, since the deletion it follows has
// happened.
func (s *Server) revokeTokens(w http.ResponseWriter, r *http.Request, subjects ...state.TokenSubject) {
	var ids []string
	for _, sub := range subjects {
		toks, err := s.tokensOf(sub)
		if err != nil {
			s.log.Warn("list tokens to revoke", "subject", sub.Kind+"/"+sub.ID, "error", err)
			return
		}
		for _, t := range toks {
			// A management token (the bootstrap token speaks for the
			// first administrator) outlives its user: it acts with no
			// user from then on, and the cluster keeps its key.
			if !t.IsManagement() {
				ids = append(ids, t.AccessorID)
			}
		}
	}
	if len(ids) == 0 {
		return
	}
	if _, err := s.propose(w, r, store.ACLTokenDeleteRequestType, &store.ACLTokenDeleteRequest{AccessorIDs: ids}); err != nil {
		s.log.Warn("revoke tokens of a deleted subject", "count", len(ids), "error", err)
	}
}

// deleteSubjectToken deletes every token of subject; none is a 404.
func (s *Server) deleteSubjectTokens(w http.ResponseWriter, r *http.Request, subject state.TokenSubject) error {
	toks, err := s.tokensOf(subject)
	if err != nil {
		return err
	}
	if len(toks) == 0 {
		return notFound("authentication token of "+subject.Kind, subject.ID)
	}
	ids := make([]string, len(toks))
	for i, t := range toks {
		ids[i] = t.AccessorID
	}
	_, err = s.propose(w, r, store.ACLTokenDeleteRequestType, &store.ACLTokenDeleteRequest{AccessorIDs: ids})
	return err
}
