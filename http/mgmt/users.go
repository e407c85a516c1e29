package mgmt

import (
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// Users and their API tokens.
//
// TFE has no API that creates users (they sign up in its UI); sched has no
// UI, so site administrators create them: POST /api/v2/admin/users, next
// to TFE's admin user endpoints (list, show, delete, grant_admin,
// revoke_admin). A user creates their own tokens; a site administrator may
// create one for any user, which is how the first user gets a token.
func (m *router) userRoutes() {
	s := m.s
	users, tokens := newUsers(s), newTokens(s)
	m.handle(http.MethodGet, "/account/details", s.accountDetails)
	m.handle(http.MethodGet, "/users/:user", users.read)
	m.handle(http.MethodGet, "/users/:user/authentication-tokens", s.userTokenList)
	userToken := &subjectToken[*mgmt.User]{
		s: s, load: users.load, many: true,
		subject: func(u *mgmt.User) state.TokenSubject {
			return state.TokenSubject{Kind: state.SubjectKindUser, ID: u.ID}
		},
	}
	m.handle(http.MethodPost, "/users/:user/authentication-tokens", userToken.create)
	tokens.mount(m, "", "/authentication-tokens/:token")

	m.handle(http.MethodGet, "/admin/users", adminOnly(admin{s}.listUsers))
	m.handle(http.MethodPost, "/admin/users", adminOnly(users.create))
	m.handle(http.MethodGet, "/admin/users/:user", adminOnly(users.read))
	m.handle(http.MethodDelete, "/admin/users/:user", adminOnly(users.remove))
	m.handle(http.MethodPost, "/admin/users/:user/actions/grant_admin", adminOnly(admin{s}.setAdmin(true)))
	m.handle(http.MethodPost, "/admin/users/:user/actions/revoke_admin", adminOnly(admin{s}.setAdmin(false)))
}

// adminOnly restricts h to site administrators: everyone else gets 404 (spec
// §5.4), as if the admin API did not exist.
func adminOnly(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
		if !mgmt.CanUseAdminAPI(c.caller) {
			return result{}, notFound("path", r.URL.Path)
		}
		return h(w, r, p, c)
	}
}

// newUsers is the user resource. Site administrators create users
// (username and email required, is-admin optional) and delete them, with
// their memberships (refused with 409 while they are the last owner of an
// organization) and their tokens; a user reads themselves.
func newUsers(s *Server) *resource[struct{}, *mgmt.User, mgmt.User] {
	return &resource[struct{}, *mgmt.User, mgmt.User]{
		s: s, typ: typeUsers, prefix: mgmt.PrefixUser,
		scope: func(*call, httprouter.Params) (struct{}, error) { return struct{}{}, nil },
		load:  func(c *call, p httprouter.Params) (*mgmt.User, error) { return s.visibleUser(c, p.ByName("user")) },
		decode: func(o *jsonapi.ResourceObject, _ **mgmt.User) mgmt.User {
			var u mgmt.User
			for _, f := range []struct {
				name string
				dst  *string
			}{{"username", &u.Username}, {"email", &u.Email}} {
				v := o.Attrs.String(f.name)
				if v == nil && !o.Attrs.Has(f.name) {
					o.Attrs.Fail(f.name, "is required")
				}
				if v != nil {
					*f.dst = *v
				}
			}
			if a := o.Attrs.Bool("is-admin"); a != nil {
				u.IsAdmin = *a
			}
			return u
		},
		createCmd: func(_ struct{}, st stamp, u mgmt.User) (store.MessageType, any) {
			u.ID, u.CreatedAt = st.id, st.now
			return store.UserUpsertRequestType, &store.UserUpsertRequest{User: &u}
		},
		deleteCmd: func(u *mgmt.User) (store.MessageType, any) {
			return store.UserDeleteRequestType, &store.UserDeleteRequest{ID: u.ID}
		},
		deleted: func(w http.ResponseWriter, r *http.Request, u *mgmt.User) {
			s.revokeTokens(w, r, state.TokenSubject{Kind: state.SubjectKindUser, ID: u.ID})
		},
		show: func(_ *http.Request, u *mgmt.User) (*jsonapi.Document, error) {
			return jsonapi.One(userResource(u, true)), nil
		},
		showCreated: func(_ struct{}, resp any) (*jsonapi.Document, error) {
			return jsonapi.One(userResource(resp.(*mgmt.User), true)), nil
		},
	}
}

// newTokens is the API token resource, as a token's user and site
// administrators see it: read and delete (tokens are created for their
// subject: a user's, a team's, an organization's).
func newTokens(s *Server) *resource[struct{}, *state.ACLToken, struct{}] {
	return &resource[struct{}, *state.ACLToken, struct{}]{
		s: s,
		load: func(c *call, p httprouter.Params) (*state.ACLToken, error) {
			return s.visibleToken(c, p.ByName("token"))
		},
		deleteCmd: func(tok *state.ACLToken) (store.MessageType, any) {
			return store.ACLTokenDeleteRequestType, &store.ACLTokenDeleteRequest{AccessorIDs: []string{tok.AccessorID}}
		},
		show: func(_ *http.Request, tok *state.ACLToken) (*jsonapi.Document, error) {
			return jsonapi.One(tokenResource(tok, "")), nil
		},
	}
}

// visibleUser returns user id when the caller may see it: the user
// themselves and site administrators. Anyone else gets 404.
func (s *Server) visibleUser(c *call, id string) (*mgmt.User, error) {
	if c.caller.UserID != id && !c.caller.IsSiteAdmin {
		return nil, notFound("user", id)
	}
	u, err := s.store.UserByID(nil, id)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, notFound("user", id)
	}
	return u, nil
}

// accountDetails serves GET /account/details: the user the token speaks
// for. A team, organization or management token is no user: 404.
func (s *Server) accountDetails(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *call) (result, error) {
	if c.caller.UserID == "" {
		return result{}, notFound("account", "the token's")
	}
	u, err := s.visibleUser(c, c.caller.UserID)
	if err != nil {
		return result{}, err
	}
	return ok(jsonapi.One(userResource(u, true)))
}

func (s *Server) userTokenList(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	u, err := s.visibleUser(c, p.ByName("user"))
	if err != nil {
		return result{}, err
	}
	page, err := pageOf(r)
	if err != nil {
		return result{}, err
	}
	toks, err := s.tokensOf(state.TokenSubject{Kind: state.SubjectKindUser, ID: u.ID})
	if err != nil {
		return result{}, err
	}
	return pageDoc(r, page, toks, func(t *state.ACLToken) *jsonapi.Resource { return tokenResource(t, "") })
}

// visibleToken returns token id when the caller may see it: its user, or
// a site administrator. Team and organization tokens are managed through
// their team and organization; here only administrators see them.
func (s *Server) visibleToken(c *call, id string) (*state.ACLToken, error) {
	tok, err := s.store.ACLTokenByAccessorID(nil, id)
	if err != nil {
		return nil, err
	}
	if tok == nil || tok.Subject == nil {
		return nil, notFound("authentication token", id)
	}
	mine := tok.Subject.Kind == state.SubjectKindUser && tok.Subject.ID == c.caller.UserID && c.caller.UserID != ""
	if !mine && !c.caller.IsSiteAdmin {
		return nil, notFound("authentication token", id)
	}
	return tok, nil
}

// listUsers serves GET /admin/users: every user, by ID, with q
// searching username and e-mail.
func (s admin) listUsers(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *call) (result, error) {
	page, err := pageOf(r)
	if err != nil {
		return result{}, err
	}
	all, err := s.store.Users(nil)
	if err != nil {
		return result{}, err
	}
	q := strings.ToLower(r.URL.Query().Get("q"))
	var matching []*mgmt.User
	for _, u := range all {
		if q == "" || strings.Contains(strings.ToLower(u.Username), q) || strings.Contains(strings.ToLower(u.Email), q) {
			matching = append(matching, u)
		}
	}
	return pageDoc(r, page, matching, func(u *mgmt.User) *jsonapi.Resource { return userResource(u, true) })
}

// setAdmin serves grant_admin and revoke_admin.
func (s admin) setAdmin(isAdmin bool) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
		u, err := s.visibleUser(c, p.ByName("user"))
		if err != nil {
			return result{}, err
		}
		next := *u
		next.IsAdmin = isAdmin
		resp, err := s.propose(w, r, store.UserUpsertRequestType, &store.UserUpsertRequest{User: &next})
		if err != nil {
			return result{}, err
		}
		return ok(jsonapi.One(userResource(resp.(*mgmt.User), true)))
	}
}

// pageDoc answers page p of all, each rendered: a list the store gives
// whole, paged here.
func pageDoc[T any](r *http.Request, p jsonapi.Page, all []T, render func(T) *jsonapi.Resource) (result, error) {
	items := []*jsonapi.Resource{}
	for _, x := range pageSlice(all, p) {
		items = append(items, render(x))
	}
	return ok(listDoc(r, items, p, len(all)))
}

// pageSlice returns page p of items (empty past the end).
func pageSlice[T any](items []T, p jsonapi.Page) []T {
	start := (p.Number - 1) * p.Size
	if start >= len(items) {
		return nil
	}
	return items[start:min(start+p.Size, len(items))]
}
