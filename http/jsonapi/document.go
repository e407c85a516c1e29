// Package jsonapi is the JSON:API layer of the management API (/api/v2):
// resource objects with relationships and links, response documents with
// included resources and pagination, the decoding of request documents
// with the type and attribute checks a client's mistakes need, and
// JSON:API error documents.
//
// It knows nothing of sched's resources: the http package builds
// Resources from state objects and reads requests through RequestDoc. It
// imports nothing of ours, so its rules (what a page is, what a wrong
// type answers) are tested on their own.
package jsonapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// MediaType is the JSON:API media type, sent on every response and
// expected (or application/json) on every request with a body.
const MediaType = "application/vnd.api+json"

// Resource is a resource object: what one row of the API looks like.
// Attributes is a map of kebab-case names to JSON-encodable values, or a
// struct with kebab-case JSON tags (cheaper to encode, for resources
// listed by the hundred); a nil value encodes as null, which the API uses
// for "none".
type Resource struct {
	ID            string                   `json:"id"`
	Type          string                   `json:"type"`
	Attributes    any                      `json:"attributes,omitempty"`
	Relationships map[string]*Relationship `json:"relationships,omitempty"`
	Links         map[string]string        `json:"links,omitempty"`
}

// Identifier is a resource identifier object: a reference to a resource
// by type and id.
type Identifier struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// Relationship is one relationship of a resource object: its linkage
// (data) and links. JSON:API distinguishes a relationship whose data is
// null (no related resource) from one that carries no data at all (only a
// link to fetch it); build relationships with ToOne, ToMany and LinksOnly,
// which set Data accordingly.
type Relationship struct {
	// Data is an Identifier, a []Identifier, a nil *Identifier (written
	// as null) or nil (left out: a links-only relationship). A plain
	// field rather than a MarshalJSON method keeps long lists cheap:
	// encoding/json re-parses what a MarshalJSON method returns.
	Data  any               `json:"data,omitzero"`
	Links map[string]string `json:"links,omitempty"`
}

// ToOne returns a to-one relationship to the resource typ/id; an empty id
// gives null linkage (no related resource).
func ToOne(typ, id string) *Relationship {
	if id == "" {
		return &Relationship{Data: (*Identifier)(nil)}
	}
	return &Relationship{Data: Identifier{Type: typ, ID: id}}
}

// ToMany returns a to-many relationship holding ids (an empty list, never
// null, when there are none).
func ToMany(ids []Identifier) *Relationship {
	if ids == nil {
		ids = []Identifier{}
	}
	return &Relationship{Data: ids}
}

// LinksOnly returns a relationship without linkage whose related resources
// are found at related.
func LinksOnly(related string) *Relationship {
	return &Relationship{Links: map[string]string{"related": related}}
}

// Related sets the relationship's related link and returns r.
func (r *Relationship) Related(href string) *Relationship {
	if r.Links == nil {
		r.Links = map[string]string{}
	}
	r.Links["related"] = href
	return r
}

// Document is a response document. Data is a *Resource, a []*Resource
// (encoded as [] when empty) or nil (null).
type Document struct {
	Data     any            `json:"data"`
	Included []*Resource    `json:"included,omitempty"`
	Links    *PageLinks     `json:"links,omitempty"`
	Meta     map[string]any `json:"meta,omitempty"`
}

// One returns a document holding one resource.
func One(r *Resource) *Document { return &Document{Data: r} }

// Many returns a document holding a list of resources; an empty list is
// [] as JSON:API requires of an empty collection.
func Many(rs []*Resource) *Document {
	if rs == nil {
		rs = []*Resource{}
	}
	return &Document{Data: rs}
}

// Include adds resources to the document's included list, once each (by
// type and id) and never a resource that is the primary data, as JSON:API
// requires.
func (d *Document) Include(rs ...*Resource) {
	seen := make(map[Identifier]bool, len(d.Included)+len(rs))
	switch data := d.Data.(type) {
	case *Resource:
		if data != nil {
			seen[Identifier{data.Type, data.ID}] = true
		}
	case []*Resource:
		for _, r := range data {
			seen[Identifier{r.Type, r.ID}] = true
		}
	}
	for _, r := range d.Included {
		seen[Identifier{r.Type, r.ID}] = true
	}
	for _, r := range rs {
		if r == nil || seen[Identifier{r.Type, r.ID}] {
			continue
		}
		seen[Identifier{r.Type, r.ID}] = true
		d.Included = append(d.Included, r)
	}
}

// SetMeta sets one member of the document's meta.
func (d *Document) SetMeta(key string, v any) {
	if d.Meta == nil {
		d.Meta = map[string]any{}
	}
	d.Meta[key] = v
}

// Write writes doc with status and the JSON:API media type (set on every
// answer, bodiless ones included, so a client never has to guess). A nil
// doc writes no body (204 No Content and 202 Accepted answers).
func Write(w http.ResponseWriter, status int, doc any) error {
	h := w.Header()
	h.Set("Content-Type", MediaType)
	h.Set("X-Content-Type-Options", "nosniff")
	if doc == nil {
		w.WriteHeader(status)
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Attribute values such as URLs hold & < >: keep them readable.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

// TimeFormat is how the API writes times: ISO 8601 in UTC with
// milliseconds, as the spec shows created-at.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// Time formats t as TimeFormat, or returns nil (JSON null) for the zero
// time.
func Time(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(TimeFormat)
}

// NullString returns nil (JSON null) for "", s otherwise: the API shows
// absent optional strings as null.
func NullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
