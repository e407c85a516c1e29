package jsonapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/schedhq/sched/state"
)

// Request bodies. A body is read whole, parsed once into raw members, and
// then asked for what the endpoint needs: the primary resource object (with
// its type checked), its attributes one by one (each with its type
// checked), its relationships, or a list of resource identifiers. Problems
// found while asking are collected with the JSON pointer of each, so one
// answer names every mistake; attributes an endpoint does not ask for are
// ignored, as clients send more than any one endpoint reads.

// CheckContentType accepts a request whose body is JSON:API
// (application/vnd.api+json, without media type parameters, as JSON:API
// requires), plain JSON (what curl users send), or unlabelled. Anything
// else is a 415.
func CheckContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	switch {
	case err != nil:
		return NewError(http.StatusUnsupportedMediaType, TitleUnsupportedType, fmt.Sprintf("Content-Type %q cannot be parsed", ct))
	case mt == MediaType && len(params) > 0:
		return NewError(http.StatusUnsupportedMediaType, TitleUnsupportedType, "the JSON:API media type takes no parameters")
	case mt == MediaType || mt == "application/json":
		return nil
	}
	return NewError(http.StatusUnsupportedMediaType, TitleUnsupportedType,
		fmt.Sprintf("Content-Type %q is not %s", ct, MediaType))
}

// RequestDoc is a parsed request document.
type RequestDoc struct {
	data    json.RawMessage
	hasData bool
}

// ReadRequest reads and parses r's body: a JSON object with a data
// member. Malformed JSON is a 400 with the byte offset; a body that is
// not an object, or lacks data, is a 422 pointing at it.
func ReadRequest(r *http.Request) (*RequestDoc, error) {
	if err := CheckContentType(r); err != nil {
		return nil, err
	}
	if r.Body == nil {
		return nil, Invalid([]*Error{PointerError("", "a request document is required")})
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, NewError(http.StatusRequestEntityTooLarge, "request too large", fmt.Sprintf("the body exceeds %d bytes", mbe.Limit))
		}
		return nil, NewError(http.StatusBadRequest, TitleBadRequest, "read request body: "+err.Error())
	}
	return ParseRequest(raw)
}

// ParseRequest parses a request document (see ReadRequest).
func ParseRequest(raw []byte) (*RequestDoc, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, Invalid([]*Error{PointerError("", "a request document is required")})
	}
	if err := checkDepth(raw, MaxDepth); err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := strictUnmarshal(raw, &top); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, Invalid([]*Error{PointerError("", "the request document must be a JSON object")})
		}
		return nil, NewError(http.StatusBadRequest, TitleBadRequest, "malformed JSON: "+describeJSONError(err))
	}
	d := &RequestDoc{}
	d.data, d.hasData = top["data"]
	if !d.hasData {
		return nil, Invalid([]*Error{PointerError("/data", "is required")})
	}
	return d, nil
}

// MaxDepth bounds how deeply a request document may nest objects and
// arrays: a resource needs a few levels around its attributes, which may
// nest 64 more (the bound the jobs API puts on free-form values).
// encoding/json recurses once per level as it decodes.
const MaxDepth = 64 + 36

// checkDepth scans raw, without recursion, and returns a 400 naming the
// byte offset where it nests deeper than max. It does not check that raw
// is JSON: the decoder that follows does.
func checkDepth(raw []byte, max int) error {
	if at := state.JSONDepthOffset(raw, max); at > 0 {
		return NewError(http.StatusBadRequest, TitleBadRequest,
			fmt.Sprintf("the document is nested more than %d levels deep (limit %d) at byte %d", max, max, at))
	}
	return nil
}

func strictUnmarshal(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the JSON document (at byte %d)", dec.InputOffset())
	}
	return nil
}

func describeJSONError(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of the document"
	}
	return err.Error()
}

// Expect says what the primary resource object of a request must be.
type Expect struct {
	// Type is the only type accepted.
	Type string
	// AllowEmptyType accepts a missing or empty type (clients that send
	// the admin organization update without one). A wrong type is still
	// refused.
	AllowEmptyType bool
	// WrongTypeStatus answers a type other than Type, or a data.id other
	// than ID: 422 Unprocessable Entity when zero, since the spec's error
	// tables treat every malformed body as a 422 (JSON:API itself suggests
	// 409); an endpoint may ask for another status.
	WrongTypeStatus int
	// ID, when set, is the id of the resource the request addresses (an
	// update): data.id may be left out, but must otherwise equal it.
	ID string
}

// mismatch is the error of a type or id that does not fit the endpoint,
// with its pointer.
func (want Expect) mismatch(pointer, detail string) error {
	status := want.WrongTypeStatus
	if status == 0 {
		status = http.StatusUnprocessableEntity
	}
	title := TitleConflict
	if status == http.StatusUnprocessableEntity {
		title = TitleInvalid
	}
	return &HTTPError{Status: status, Errors: []*Error{{Status: strconv.Itoa(status), Title: title,
		Detail: detail, Source: &Source{Pointer: pointer}}}}
}

// Resource returns the request's primary resource object, checked
// against want. Its attributes and relationships are read through the
// returned object, which collects what is wrong with them: call Err when
// done.
func (d *RequestDoc) Resource(want Expect) (*ResourceObject, error) {
	var m map[string]json.RawMessage
	if isNull(d.data) || json.Unmarshal(d.data, &m) != nil {
		return nil, Invalid([]*Error{PointerError("/data", "must be a resource object")})
	}
	o := &ResourceObject{}
	var typ string
	if raw, ok := m["type"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &typ) != nil {
			return nil, Invalid([]*Error{PointerError("/data/type", "must be a string")})
		}
	}
	switch {
	case typ == "" && !want.AllowEmptyType:
		return nil, Invalid([]*Error{PointerError("/data/type", "is required and must be %q", want.Type)})
	case typ != "" && typ != want.Type:
		return nil, want.mismatch("/data/type", fmt.Sprintf("type %q does not match this endpoint: it must be %q", typ, want.Type))
	}
	o.Type = typ
	if raw, ok := m["id"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &o.ID) != nil {
			return nil, Invalid([]*Error{PointerError("/data/id", "must be a string")})
		}
		if want.ID != "" && o.ID != want.ID {
			return nil, want.mismatch("/data/id", fmt.Sprintf("id %q does not match the resource of the path, %q", o.ID, want.ID))
		}
	}
	o.errs = &errorList{}
	o.Attrs = &Attributes{pointer: "/data/attributes", errs: o.errs}
	if raw, ok := m["attributes"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &o.Attrs.m) != nil {
			o.errs.add(PointerError("/data/attributes", "must be an object"))
		}
	}
	if raw, ok := m["relationships"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &o.rels) != nil {
			o.errs.add(PointerError("/data/relationships", "must be an object"))
		}
	}
	return o, nil
}

// Identifiers returns the request's data as a list of resource
// identifiers of type typ (a relationship update such as "move these
// workspaces"). Every entry is checked; problems are a 422 naming each.
func (d *RequestDoc) Identifiers(typ string) ([]Identifier, error) {
	var items []json.RawMessage
	if isNull(d.data) || json.Unmarshal(d.data, &items) != nil {
		return nil, Invalid([]*Error{PointerError("/data", "must be an array of resource identifiers")})
	}
	var errs []*Error
	out := make([]Identifier, 0, len(items))
	for i, raw := range items {
		p := fmt.Sprintf("/data/%d", i)
		var id struct {
			Type *string `json:"type"`
			ID   *string `json:"id"`
		}
		if json.Unmarshal(raw, &id) != nil {
			errs = append(errs, PointerError(p, "must be a resource identifier with string type and id"))
			continue
		}
		switch {
		case id.Type == nil || *id.Type == "":
			errs = append(errs, PointerError(p+"/type", "is required and must be %q", typ))
		case *id.Type != typ:
			errs = append(errs, PointerError(p+"/type", "%q is not %q", *id.Type, typ))
		}
		if id.ID == nil || *id.ID == "" {
			errs = append(errs, PointerError(p+"/id", "is required"))
		}
		if id.Type != nil && id.ID != nil {
			out = append(out, Identifier{Type: *id.Type, ID: *id.ID})
		}
	}
	if err := Invalid(errs); err != nil {
		return nil, err
	}
	return out, nil
}

// Objects returns the request's data as a list of resource objects of
// type typ that carry attributes (PATCH /projects/:id/tag-bindings). Each
// entry's attributes are read through its Attributes; call the returned
// check when done to get a 422 listing every problem.
func (d *RequestDoc) Objects(typ string) ([]RelatedObject, func() error, error) {
	var items []json.RawMessage
	if isNull(d.data) || json.Unmarshal(d.data, &items) != nil {
		return nil, nil, Invalid([]*Error{PointerError("/data", "must be an array of resource objects")})
	}
	errs := &errorList{}
	out := readRelatedObjects(items, "/data", typ, errs)
	return out, func() error { return Invalid(errs.errs) }, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

type errorList struct{ errs []*Error }

func (l *errorList) add(e *Error) { l.errs = append(l.errs, e) }

// ResourceObject is the primary resource object of a request.
type ResourceObject struct {
	Type  string
	ID    string
	Attrs *Attributes
	rels  map[string]json.RawMessage
	errs  *errorList
}

// Err returns a 422 listing every problem found so far, or nil.
func (o *ResourceObject) Err() error { return Invalid(o.errs.errs) }

// Fail records a problem of the caller's own (a rule this package does
// not know), to be answered with the others.
func (o *ResourceObject) Fail(pointer, format string, args ...any) {
	o.errs.add(PointerError(pointer, format, args...))
}

// HasRelationship reports whether the request names relationship name.
func (o *ResourceObject) HasRelationship(name string) bool {
	_, ok := o.rels[name]
	return ok
}

// ToOne reads a to-one relationship whose data must be an identifier of
// type typ, or null. It returns the id ("" for null) and whether the
// relationship was sent.
func (o *ResourceObject) ToOne(name, typ string) (string, bool) {
	raw, ok := o.rels[name]
	if !ok {
		return "", false
	}
	p := "/data/relationships/" + name
	var rel struct {
		Data json.RawMessage `json:"data"`
	}
	if isNull(raw) || json.Unmarshal(raw, &rel) != nil || rel.Data == nil {
		o.errs.add(PointerError(p, "must be a relationship object with data"))
		return "", true
	}
	if isNull(rel.Data) {
		return "", true
	}
	var id struct {
		Type *string `json:"type"`
		ID   *string `json:"id"`
	}
	if json.Unmarshal(rel.Data, &id) != nil {
		o.errs.add(PointerError(p+"/data", "must be a resource identifier with string type and id"))
		return "", true
	}
	switch {
	case id.Type == nil || *id.Type == "":
		o.errs.add(PointerError(p+"/data/type", "is required and must be %q", typ))
	case *id.Type != typ:
		o.errs.add(PointerError(p+"/data/type", "%q is not %q", *id.Type, typ))
	}
	if id.ID == nil || *id.ID == "" {
		o.errs.add(PointerError(p+"/data/id", "is required"))
		return "", true
	}
	return *id.ID, true
}

// RequiredToOne is ToOne for a relationship that must name a resource:
// leaving it out, or sending null, is a problem.
func (o *ResourceObject) RequiredToOne(name, typ string) string {
	n := len(o.errs.errs)
	id, sent := o.ToOne(name, typ)
	if id == "" && len(o.errs.errs) == n {
		if sent {
			o.errs.add(PointerError("/data/relationships/"+name+"/data", "must name a %s resource, not null", typ))
		} else {
			o.errs.add(PointerError("/data/relationships/"+name, "is required"))
		}
	}
	return id
}

// RelatedObject is one entry of a to-many relationship whose entries carry
// attributes rather than ids (resources created with their parent, such
// as a project's tag bindings).
type RelatedObject struct {
	Type  string
	ID    string
	Attrs *Attributes
}

// ToManyObjects reads a to-many relationship of entries of type typ that
// may carry attributes. It returns the entries (an empty, non-nil slice
// for []) and whether the relationship was sent; null data is an error.
func (o *ResourceObject) ToManyObjects(name, typ string) ([]RelatedObject, bool) {
	raw, ok := o.rels[name]
	if !ok {
		return nil, false
	}
	p := "/data/relationships/" + name + "/data"
	var rel struct {
		Data json.RawMessage `json:"data"`
	}
	var items []json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &rel) != nil || rel.Data == nil || isNull(rel.Data) ||
		json.Unmarshal(rel.Data, &items) != nil {
		o.errs.add(PointerError(p, "must be an array"))
		return nil, true
	}
	return readRelatedObjects(items, p, typ, o.errs), true
}

// Attributes reads the attributes of a resource object (or a nested
// object attribute). Each accessor checks the JSON type of what was sent
// and records a problem naming its pointer when it is wrong, returning
// "not sent" so callers need not check twice.
type Attributes struct {
	pointer string
	m       map[string]json.RawMessage
	errs    *errorList
}

// Pointer returns the JSON pointer of attribute name.
func (a *Attributes) Pointer(name string) string { return a.pointer + "/" + name }

// Has reports whether attribute name was sent (null included).
func (a *Attributes) Has(name string) bool {
	_, ok := a.m[name]
	return ok
}

// IsNull reports whether attribute name was sent as null.
func (a *Attributes) IsNull(name string) bool {
	raw, ok := a.m[name]
	return ok && isNull(raw)
}

// Fail records a problem with attribute name.
func (a *Attributes) Fail(name, format string, args ...any) {
	a.errs.add(PointerError(a.Pointer(name), format, args...))
}

// String reads a string attribute; nil when not sent. Null is a type
// error: use NullableString where null means "none".
func (a *Attributes) String(name string) *string {
	raw, ok := a.m[name]
	if !ok {
		return nil
	}
	var s string
	if isNull(raw) || json.Unmarshal(raw, &s) != nil {
		a.Fail(name, "must be a string")
		return nil
	}
	return &s
}

// NullableString reads a string attribute where null means none: nil when
// not sent, a pointer to "" for null.
func (a *Attributes) NullableString(name string) *string {
	if a.IsNull(name) {
		s := ""
		return &s
	}
	return a.String(name)
}

// Bool reads a boolean attribute; nil when not sent. Null is a type
// error.
func (a *Attributes) Bool(name string) *bool {
	raw, ok := a.m[name]
	if !ok {
		return nil
	}
	var b bool
	if isNull(raw) || json.Unmarshal(raw, &b) != nil {
		a.Fail(name, "must be a boolean")
		return nil
	}
	return &b
}

// NullableInt reads an integer attribute where null means none. sent
// reports whether the attribute was present; v is nil for null.
func (a *Attributes) NullableInt(name string) (v *int, sent bool) {
	raw, ok := a.m[name]
	if !ok {
		return nil, false
	}
	if isNull(raw) {
		return nil, true
	}
	var n json.Number
	// json.Number also accepts a quoted number: refuse strings first.
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] == '"' || json.Unmarshal(raw, &n) != nil {
		a.Fail(name, "must be an integer")
		return nil, false
	}
	i, err := strconv.Atoi(n.String())
	if err != nil {
		a.Fail(name, "must be an integer, got %s", n)
		return nil, false
	}
	return &i, true
}

// Int reads an integer attribute; nil when not sent. Null is a type
// error.
func (a *Attributes) Int(name string) *int {
	if a.IsNull(name) {
		a.Fail(name, "must be an integer")
		return nil
	}
	v, _ := a.NullableInt(name)
	return v
}

// Object reads an object attribute (e.g. project-access); nil when not
// sent or null.
func (a *Attributes) Object(name string) *Attributes {
	raw, ok := a.m[name]
	if !ok || isNull(raw) {
		return nil
	}
	sub := &Attributes{pointer: a.Pointer(name), errs: a.errs}
	if json.Unmarshal(raw, &sub.m) != nil {
		a.Fail(name, "must be an object")
		return nil
	}
	return sub
}

// Objects reads an attribute that is an array of objects (e.g. archs).
// It returns nil and false when not sent; null is an empty list.
func (a *Attributes) Objects(name string) ([]*Attributes, bool) {
	raw, ok := a.m[name]
	if !ok {
		return nil, false
	}
	if isNull(raw) {
		return []*Attributes{}, true
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		a.Fail(name, "must be an array of objects")
		return nil, false
	}
	out := make([]*Attributes, 0, len(items))
	for i, item := range items {
		sub := &Attributes{pointer: fmt.Sprintf("%s/%d", a.Pointer(name), i), errs: a.errs}
		if isNull(item) || json.Unmarshal(item, &sub.m) != nil {
			a.errs.add(PointerError(sub.pointer, "must be an object"))
			continue
		}
		out = append(out, sub)
	}
	return out, true
}

// ReadOnly records a problem ("is read-only") for each of names that was
// sent, so an update refuses what it cannot change instead of dropping it.
func (a *Attributes) ReadOnly(names ...string) {
	for _, name := range names {
		if a.Has(name) {
			a.Fail(name, "is read-only and cannot be changed")
		}
	}
}

// Names lists the attributes sent, for endpoints that refuse unknown
// ones.
func (a *Attributes) Names() []string {
	out := make([]string, 0, len(a.m))
	for k := range a.m {
		out = append(out, k)
	}
	return out
}

// readRelatedObjects reads resource objects of type typ found at pointer p.
func readRelatedObjects(items []json.RawMessage, p, typ string, errs *errorList) []RelatedObject {
	out := make([]RelatedObject, 0, len(items))
	for i, item := range items {
		ip := fmt.Sprintf("%s/%d", p, i)
		var m map[string]json.RawMessage
		if isNull(item) || json.Unmarshal(item, &m) != nil {
			errs.add(PointerError(ip, "must be a resource object"))
			continue
		}
		var ro RelatedObject
		if t, ok := m["type"]; ok && json.Unmarshal(t, &ro.Type) != nil {
			errs.add(PointerError(ip+"/type", "must be a string"))
		}
		if ro.Type != "" && ro.Type != typ {
			errs.add(PointerError(ip+"/type", "%q is not %q", ro.Type, typ))
		}
		if id, ok := m["id"]; ok && !isNull(id) && json.Unmarshal(id, &ro.ID) != nil {
			errs.add(PointerError(ip+"/id", "must be a string"))
		}
		ro.Attrs = &Attributes{pointer: ip + "/attributes", errs: errs}
		if a, ok := m["attributes"]; ok && !isNull(a) && json.Unmarshal(a, &ro.Attrs.m) != nil {
			errs.add(PointerError(ip+"/attributes", "must be an object"))
		}
		out = append(out, ro)
	}
	return out
}
