package mgmt

import (
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state/store"
)

// resource is a JSON:API resource whose create, read, update and delete
// handlers share one shape, written once here; a resource says only what
// differs (where it lives, who may act, its patch, its commands, how it
// renders):
//
//	create: find the scope the route names (404) → may the caller create
//	        there (403)? → read the request document and its patch, every
//	        problem in one 422 → may the caller create this (404, 403)? →
//	        propose the create command, with an ID from the core's ID
//	        source and the leader's time → 201
//	read:   find the object (404) → 200
//	update: find the object (404) → may the caller change it (403)? → read
//	        the document, whose id must be the object's, and its patch
//	        (read-only attributes refused) → may the caller make this
//	        change (403)? → propose → 200
//	delete: find the object (404) → may the caller delete it (403)? →
//	        propose → what follows a delete (revoking tokens) → 204
//
// S is what a create is made in (the caller's authority in an
// organization), V an object as the caller sees it (the stored object with
// the caller's standing), P the patch a create or an update sends. A nil
// function leaves its step out: a resource without createCmd has no
// create, one without mayUpdate lets whoever sees it update it.
type resource[S, V, P any] struct {
	s *Server
	// typ is the JSON:API type of request documents.
	typ string
	// expect, when set, is what a request's primary data must be, given the
	// ID an update addresses ("" on create); nil means {Type: typ, ID: id}.
	expect func(id string) jsonapi.Expect
	// readOnly lists the attributes an update may send, unchanged, but not
	// change.
	readOnly []string

	// scope finds what the route creates in, as the caller sees it, or a
	// 404.
	scope func(c *call, p httprouter.Params) (S, error)
	// load finds the object the route names, as the caller sees it, or a
	// 404; id is its ID, which an update's document must carry.
	load func(c *call, p httprouter.Params) (V, error)
	id   func(V) string

	// mayCreate, mayUpdate and mayDelete refuse a caller who sees the
	// scope or the object but may not act on it: a 403, or a 404 where the
	// spec hides what the caller may not change.
	mayCreate            func(S) error
	mayUpdate, mayDelete func(V) error
	// admitCreate and admitUpdate judge a checked patch, where what the
	// caller may do depends on what the patch asks (the project a
	// workspace is created in or moved to).
	admitCreate func(sc S, p P) error
	admitUpdate func(v V, p P) error

	// decode reads the patch of a create (current nil) or of an update.
	decode func(o *jsonapi.ResourceObject, current *V) P
	// check lists what is wrong with a patch by state's rules, answered
	// with the document's own problems in one 422 (firstErr).
	check func(p P, current *V) []error

	// prefix starts the IDs of created objects.
	prefix string
	// createCmd, updateCmd and deleteCmd are the commands proposed, with
	// what the leader stamps into them.
	createCmd func(sc S, st stamp, p P) (store.MessageType, any)
	updateCmd func(v V, st stamp, p P) (store.MessageType, any)
	deleteCmd func(v V) (store.MessageType, any)
	// deleted, when set, follows a committed delete.
	deleted func(w http.ResponseWriter, r *http.Request, v V)

	// show renders an object read; showCreated and showUpdated what a
	// create or an update committed (resp is the state machine's answer).
	show        func(r *http.Request, v V) (*jsonapi.Document, error)
	showCreated func(sc S, resp any) (*jsonapi.Document, error)
	showUpdated func(c *call, v V, resp any) (*jsonapi.Document, error)

	// list, when set, serves GET on the collection: lists filter, page
	// and count each in their own way.
	list handler
}

// stamp is what the leader stamps into a command before proposing it: the
// ID of the object a create makes (from the core's ID source; "" on an
// update) and the time (the core's clock, in the API's precision).
type stamp struct {
	id  string
	now time.Time
}

// mount registers the handlers rs has, each behind wrap when given: list
// and create on collection ("" for none), read, update and delete on
// item.
func (rs *resource[S, V, P]) mount(m *router, collection, item string, wrap ...func(handler) handler) {
	add := func(method, path string, h handler) {
		for _, w := range wrap {
			h = w(h)
		}
		m.handle(method, path, h)
	}
	if collection != "" && rs.list != nil {
		add(http.MethodGet, collection, rs.list)
	}
	if collection != "" && rs.createCmd != nil {
		add(http.MethodPost, collection, rs.create)
	}
	if rs.show != nil {
		add(http.MethodGet, item, rs.read)
	}
	if rs.updateCmd != nil {
		add(http.MethodPatch, item, rs.update)
	}
	if rs.deleteCmd != nil {
		add(http.MethodDelete, item, rs.remove)
	}
}

// create serves a resource's POST: 201 with the created object.
func (rs *resource[S, V, P]) create(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	sc, err := rs.scope(c, p)
	if err != nil {
		return result{}, err
	}
	if err := allowed(rs.mayCreate, sc); err != nil {
		return result{}, err
	}
	patch, err := rs.readPatch(r, "", nil)
	if err != nil {
		return result{}, err
	}
	if rs.admitCreate != nil {
		if err := rs.admitCreate(sc, patch); err != nil {
			return result{}, err
		}
	}
	t, cmd := rs.createCmd(sc, stamp{id: rs.s.newID(rs.prefix), now: rs.s.now()}, patch)
	resp, err := rs.s.propose(w, r, t, cmd)
	if err != nil {
		return result{}, err
	}
	return answer(http.StatusCreated)(rs.showCreated(sc, resp))
}

// read serves a resource's GET: 200 with the object.
func (rs *resource[S, V, P]) read(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	v, err := rs.load(c, p)
	if err != nil {
		return result{}, err
	}
	return answer(http.StatusOK)(rs.show(r, v))
}

// update serves a resource's PATCH: attributes left out keep their
// values; 200 with the updated object.
func (rs *resource[S, V, P]) update(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	v, err := rs.load(c, p)
	if err != nil {
		return result{}, err
	}
	if err := allowed(rs.mayUpdate, v); err != nil {
		return result{}, err
	}
	patch, err := rs.readPatch(r, rs.id(v), &v)
	if err != nil {
		return result{}, err
	}
	if rs.admitUpdate != nil {
		if err := rs.admitUpdate(v, patch); err != nil {
			return result{}, err
		}
	}
	t, cmd := rs.updateCmd(v, stamp{now: rs.s.now()}, patch)
	resp, err := rs.s.propose(w, r, t, cmd)
	if err != nil {
		return result{}, err
	}
	return answer(http.StatusOK)(rs.showUpdated(c, v, resp))
}

// remove serves a resource's DELETE: 204.
func (rs *resource[S, V, P]) remove(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	v, err := rs.load(c, p)
	if err != nil {
		return result{}, err
	}
	if err := allowed(rs.mayDelete, v); err != nil {
		return result{}, err
	}
	t, cmd := rs.deleteCmd(v)
	if _, err := rs.s.propose(w, r, t, cmd); err != nil {
		return result{}, err
	}
	if rs.deleted != nil {
		rs.deleted(w, r, v)
	}
	return noContent()
}

// readPatch reads the request document of a create (current nil) or of an
// update of the object with ID id, and its patch, checked.
func (rs *resource[S, V, P]) readPatch(r *http.Request, id string, current *V) (P, error) {
	var patch P
	want := jsonapi.Expect{Type: rs.typ, ID: id}
	if rs.expect != nil {
		want = rs.expect(id)
	}
	o, err := readResource(r, want)
	if err != nil {
		return patch, err
	}
	if current != nil && len(rs.readOnly) > 0 {
		o.Attrs.ReadOnly(rs.readOnly...)
	}
	patch = rs.decode(o, current)
	if rs.check == nil {
		return patch, o.Err()
	}
	return patch, firstErr(append([]error{o.Err()}, rs.check(patch, current)...)...)
}

// allowed asks may, when the resource has that rule, whether the caller
// may act on x.
func allowed[X any](may func(X) error, x X) error {
	if may == nil {
		return nil
	}
	return may(x)
}

// answer returns a handler's answer with status to a rendered document.
func answer(status int) func(*jsonapi.Document, error) (result, error) {
	return func(doc *jsonapi.Document, err error) (result, error) {
		if err != nil {
			return result{}, err
		}
		return result{status: status, doc: doc}, nil
	}
}
