package mgmt

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state/store"
)

// TestResourceStepOrder: the generic path takes its steps in the order
// every resource's answers depend on (which of 404, 403 and 422 a request
// wrong in several ways gets), and stops at the first that fails: scope or
// object, then the caller's permission, then the document and its patch
// (the document's problems and state's rules in one 422), then the rules
// that depend on the patch, and only then the command.
func TestResourceStepOrder(t *testing.T) {
	var steps []string
	errScope, errMay, errAdmit := errors.New("scope"), errors.New("may"), errors.New("admit")
	step := func(name string, err error) error {
		steps = append(steps, name)
		return err
	}
	// fail names the step that fails.
	newRes := func(fail string) *resource[string, string, string] {
		errIf := func(name string, err error) error {
			if name == fail {
				return step(name, err)
			}
			return step(name, nil)
		}
		return &resource[string, string, string]{
			typ:       "things",
			readOnly:  []string{"created-at"},
			scope:     func(*call, httprouter.Params) (string, error) { return "org", errIf("scope", errScope) },
			load:      func(*call, httprouter.Params) (string, error) { return "thing-1", errIf("load", errScope) },
			id:        func(v string) string { return v },
			mayCreate: func(string) error { return errIf("may", errMay) },
			mayUpdate: func(string) error { return errIf("may", errMay) },
			mayDelete: func(string) error { return errIf("may", errMay) },
			decode: func(o *jsonapi.ResourceObject, _ *string) string {
				_ = step("decode", nil)
				return "patch"
			},
			check: func(string, *string) []error {
				if fail == "check" {
					return []error{step("check", jsonapi.Invalid([]*jsonapi.Error{jsonapi.PointerError("/data/attributes/name", "is bad")}))}
				}
				return []error{step("check", nil)}
			},
			admitCreate: func(string, string) error { return errIf("admit", errAdmit) },
			admitUpdate: func(string, string) error { return errIf("admit", errAdmit) },
			createCmd: func(string, stamp, string) (store.MessageType, any) {
				t.Fatal("a create was proposed after a failed step")
				return 0, nil
			},
			updateCmd: func(string, stamp, string) (store.MessageType, any) {
				t.Fatal("an update was proposed after a failed step")
				return 0, nil
			},
			deleteCmd: func(string) (store.MessageType, any) {
				t.Fatal("a delete was proposed after a failed step")
				return 0, nil
			},
		}
	}
	body := func(id string, attrs string) *http.Request {
		doc := `{"data":{"type":"things"` + id + `,"attributes":{` + attrs + `}}}`
		return httptest.NewRequest(http.MethodPost, "/", strings.NewReader(doc))
	}
	for _, tc := range []struct {
		op, fail string
		req      *http.Request
		want     error  // nil: a 422
		steps    string // the steps taken, in order
	}{
		{"create", "scope", body("", ""), errScope, "scope"},
		{"create", "may", body("", `"name":1`), errMay, "scope may"},
		{"create", "check", body("", ""), nil, "scope may decode check"},
		{"create", "admit", body("", ""), errAdmit, "scope may decode check admit"},
		{"update", "load", body(`,"id":"thing-1"`, ""), errScope, "load"},
		{"update", "may", body(`,"id":"thing-1"`, ""), errMay, "load may"},
		// A read-only attribute is refused with the patch's own problems.
		{"update", "none", body(`,"id":"thing-1"`, `"created-at":"x"`), nil, "load may decode check"},
		{"update", "check", body(`,"id":"thing-1"`, ""), nil, "load may decode check"},
		{"update", "admit", body(`,"id":"thing-1"`, ""), errAdmit, "load may decode check admit"},
		{"delete", "may", nil, errMay, "load may"},
	} {
		steps = nil
		rs := newRes(tc.fail)
		h := map[string]handler{"create": rs.create, "update": rs.update, "delete": rs.remove}[tc.op]
		req := tc.req
		if req == nil {
			req = httptest.NewRequest(http.MethodDelete, "/", nil)
		}
		_, err := h(httptest.NewRecorder(), req, nil, &call{})
		var he *jsonapi.HTTPError
		switch {
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s failing at %q: error %v, want %v", tc.op, tc.fail, err, tc.want)
		case tc.want == nil && (!errors.As(err, &he) || he.Status != http.StatusUnprocessableEntity):
			t.Errorf("%s failing at %q: error %v, want a 422", tc.op, tc.fail, err)
		}
		if got := strings.Join(steps, " "); got != tc.steps {
			t.Errorf("%s failing at %q: steps %q, want %q", tc.op, tc.fail, got, tc.steps)
		}
	}
}
