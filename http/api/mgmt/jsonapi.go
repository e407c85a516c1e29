package mgmt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/schedhq/sched/http/api"
)

// This file is the client side of the management API (/api/v2, spec
// management-api.md): a small JSON:API codec of its own and the one request
// helper every management call goes through. The server's codec lives in
// http/jsonapi; the client keeps its own so that it decodes what is on the
// wire rather than sharing code that could hide a mismatch.

// MediaTypeJSONAPI is the content type of every management API body.
const MediaTypeJSONAPI = "application/vnd.api+json"

// PathPrefix is the prefix of every management API path.
const PathPrefix = "/api/v2"

// JSONAPIDocument is a top-level JSON:API document: data (one resource, a
// list, or null), the included resources, links, meta, or errors.
type JSONAPIDocument struct {
	// Data is kept raw: it is an object, an array or null depending on the
	// endpoint; One and Many decode it.
	Data     json.RawMessage       `json:"data,omitempty"`
	Included []*JSONAPIResource    `json:"included,omitempty"`
	Links    *JSONAPILinks         `json:"links,omitempty"`
	Meta     json.RawMessage       `json:"meta,omitempty"`
	Errors   []*JSONAPIErrorObject `json:"errors,omitempty"`
}

// JSONAPIResource is a resource object. Attributes stay raw so each typed
// resource decodes them into its own struct.
type JSONAPIResource struct {
	Type          string                          `json:"type"`
	ID            string                          `json:"id,omitempty"`
	Attributes    json.RawMessage                 `json:"attributes,omitempty"`
	Relationships map[string]*JSONAPIRelationship `json:"relationships,omitempty"`
	Links         *JSONAPILinks                   `json:"links,omitempty"`
}

// JSONAPIRelationship is one entry of a resource's relationships: a
// resource identifier, a list of them, null, or only links.
type JSONAPIRelationship struct {
	Data  json.RawMessage `json:"data,omitempty"`
	Links *JSONAPILinks   `json:"links,omitempty"`
}

// ResourceIdentifier names a resource by type and id.
type ResourceIdentifier struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// JSONAPILinks are the links of a document, resource or relationship. A
// null link (prev or next at the ends of a list) decodes as "".
type JSONAPILinks struct {
	Self    string `json:"self,omitempty"`
	Related string `json:"related,omitempty"`
	First   string `json:"first,omitempty"`
	Prev    string `json:"prev,omitempty"`
	Next    string `json:"next,omitempty"`
	Last    string `json:"last,omitempty"`
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// One decodes the document's data as a single resource. Null data is an
// error: every endpoint that answers one resource must send it.
func (d *JSONAPIDocument) One() (*JSONAPIResource, error) {
	if d == nil || isNull(d.Data) {
		return nil, errors.New("api: JSON:API document has no data")
	}
	var r JSONAPIResource
	if err := json.Unmarshal(d.Data, &r); err != nil {
		return nil, fmt.Errorf("api: JSON:API data is not a resource object: %w", err)
	}
	return &r, nil
}

// Many decodes the document's data as a list of resources; null data is an
// empty list.
func (d *JSONAPIDocument) Many() ([]*JSONAPIResource, error) {
	if d == nil || isNull(d.Data) {
		return nil, nil
	}
	var rs []*JSONAPIResource
	if err := json.Unmarshal(d.Data, &rs); err != nil {
		return nil, fmt.Errorf("api: JSON:API data is not a list of resource objects: %w", err)
	}
	return rs, nil
}

// Find returns the included resource of the given type and id, or nil.
func (d *JSONAPIDocument) Find(typ, id string) *JSONAPIResource {
	if d == nil {
		return nil
	}
	for _, r := range d.Included {
		if r != nil && r.Type == typ && r.ID == id {
			return r
		}
	}
	return nil
}

// DecodeMeta decodes the member key of the document's meta into v. An
// absent meta or member leaves v untouched and reports false.
func (d *JSONAPIDocument) DecodeMeta(key string, v any) (bool, error) {
	if d == nil || isNull(d.Meta) {
		return false, nil
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(d.Meta, &meta); err != nil {
		return false, fmt.Errorf("api: JSON:API meta is not an object: %w", err)
	}
	raw, ok := meta[key]
	if !ok || isNull(raw) {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("api: JSON:API meta.%s: %w", key, err)
	}
	return true, nil
}

// One decodes the relationship's data as one identifier; nil when the
// relationship is null or carries only links.
func (r *JSONAPIRelationship) One() (*ResourceIdentifier, error) {
	if r == nil || isNull(r.Data) {
		return nil, nil
	}
	var id ResourceIdentifier
	if err := json.Unmarshal(r.Data, &id); err != nil {
		return nil, fmt.Errorf("api: relationship data is not a resource identifier: %w", err)
	}
	return &id, nil
}

// Many decodes the relationship's data as a list of identifiers.
func (r *JSONAPIRelationship) Many() ([]ResourceIdentifier, error) {
	if r == nil || isNull(r.Data) {
		return nil, nil
	}
	var ids []ResourceIdentifier
	if err := json.Unmarshal(r.Data, &ids); err != nil {
		return nil, fmt.Errorf("api: relationship data is not a list of resource identifiers: %w", err)
	}
	return ids, nil
}

// relatedID returns the id of the to-one relationship name of r, "" when
// absent or null.
func (r *JSONAPIResource) relatedID(name string) (string, error) {
	id, err := r.Relationships[name].One()
	if err != nil {
		return "", fmt.Errorf("api: %s %s: relationship %s: %w", r.Type, r.ID, name, err)
	}
	if id == nil {
		return "", nil
	}
	return id.ID, nil
}

// relatedIDs returns the ids of the to-many relationship name of r.
func (r *JSONAPIResource) relatedIDs(name string) ([]string, error) {
	ids, err := r.Relationships[name].Many()
	if err != nil {
		return nil, fmt.Errorf("api: %s %s: relationship %s: %w", r.Type, r.ID, name, err)
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, id.ID)
	}
	return out, nil
}

// toOne is a relationship to one resource, for request bodies.
func toOne(typ, id string) *JSONAPIRelationship {
	raw, _ := json.Marshal(ResourceIdentifier{Type: typ, ID: id}) // two strings: cannot fail
	return &JSONAPIRelationship{Data: raw}
}

// newResource builds a resource object for a request body from attributes
// (a struct or map, encoded as JSON).
func newResource(typ, id string, attrs any, rels map[string]*JSONAPIRelationship) (*JSONAPIResource, error) {
	r := &JSONAPIResource{Type: typ, ID: id, Relationships: rels}
	if attrs != nil {
		raw, err := json.Marshal(attrs)
		if err != nil {
			return nil, fmt.Errorf("api: encode %s attributes: %w", typ, err)
		}
		r.Attributes = raw
	}
	return r, nil
}

// dataDoc is a request document: {"data": ...}.
type dataDoc struct {
	Data any `json:"data"`
}

// JSONAPIErrorObject is one entry of an error document's errors.
type JSONAPIErrorObject struct {
	Status string              `json:"status,omitempty"`
	Title  string              `json:"title,omitempty"`
	Detail string              `json:"detail,omitempty"`
	Source *JSONAPIErrorSource `json:"source,omitempty"`
}

// JSONAPIErrorSource says which part of the request an error is about.
type JSONAPIErrorSource struct {
	// Pointer is a JSON pointer into the request body, such as
	// "/data/attributes/name".
	Pointer string `json:"pointer,omitempty"`
	// Parameter names the query parameter at fault.
	Parameter string `json:"parameter,omitempty"`
}

// JSONAPIError is a non-2xx answer of the management API. Status, Title,
// Detail and Pointer are those of the first error object, which is the one
// a caller usually branches on; Errors holds them all. When the body was
// not a JSON:API error document (a proxy's page, a plain-text 404), Title
// is the status text and Detail the body.
//
// It unwraps to a *StatusError, so IsNotFound and errors.As(&*StatusError)
// work on management errors as they do on the jobs API's.
type JSONAPIError struct {
	// Status is the HTTP status code.
	Status  int
	Title   string
	Detail  string
	Pointer string
	Errors  []JSONAPIErrorObject
}

// Error lists every error object as "title: detail (at pointer)" after the
// status code, so a CLI user sees which attribute was wrong.
func (e *JSONAPIError) Error() string {
	objs := e.Errors
	if len(objs) == 0 {
		objs = []JSONAPIErrorObject{{Title: e.Title, Detail: e.Detail, Source: &JSONAPIErrorSource{Pointer: e.Pointer}}}
	}
	parts := make([]string, 0, len(objs))
	for _, o := range objs {
		s := o.Title
		if s == "" {
			s = http.StatusText(e.Status)
		}
		if o.Detail != "" && o.Detail != s {
			s += ": " + o.Detail
		}
		if o.Source != nil && o.Source.Pointer != "" {
			s += " (at " + o.Source.Pointer + ")"
		} else if o.Source != nil && o.Source.Parameter != "" {
			s += " (parameter " + o.Source.Parameter + ")"
		}
		parts = append(parts, s)
	}
	return strconv.Itoa(e.Status) + " " + strings.Join(parts, "; ")
}

// Unwrap presents the error as a *StatusError with the same code.
func (e *JSONAPIError) Unwrap() error {
	body := e.Detail
	if body == "" {
		body = e.Title
	}
	return &api.StatusError{Code: e.Status, Body: body}
}

// parseJSONAPIError builds the error of a non-2xx answer from its body.
func parseJSONAPIError(status int, body []byte) *JSONAPIError {
	e := &JSONAPIError{Status: status}
	var doc struct {
		Errors []JSONAPIErrorObject `json:"errors"`
	}
	if err := json.Unmarshal(body, &doc); err == nil && len(doc.Errors) > 0 {
		e.Errors = doc.Errors
		first := doc.Errors[0]
		e.Title, e.Detail = first.Title, first.Detail
		if first.Source != nil {
			e.Pointer = first.Source.Pointer
		}
		return e
	}
	e.Title = http.StatusText(status)
	e.Detail = strings.TrimSpace(string(body))
	return e
}

// Mgmt is the client of the management API (/api/v2). Its token goes as
// "Authorization: Bearer", the scheme Terraform Enterprise clients use;
// the jobs API's namespace does not apply.
//
// The server limits requests per token (30 per second by default). A 429
// answer is retried, as go-tfe does, after the wait the
// server names in X-RateLimit-Reset (or Retry-After), at most
// RateLimitRetries times; then the 429 is returned as a *JSONAPIError.
type Client struct {
	c     *api.Client
	token string
	// retries is how many times a rate-limited request is retried.
	retries int
}

// RateLimitRetries is how many times Mgmt retries a request the server
// answered with 429 before giving up.
const RateLimitRetries = 5

// maxRateLimitWait bounds one wait before a retry, so that a server
// naming an absurd reset cannot stall a caller without a deadline.
const maxRateLimitWait = 10 * time.Second

// NewMgmt returns the management API client over c, authenticating with
// c's token.
func New(c *api.Client) *Client { return &Client{c: c, token: c.Token(), retries: RateLimitRetries} }

// WithToken returns a copy of m that authenticates with token instead.
func (m *Client) WithToken(token string) *Client {
	cp := *m
	cp.token = token
	return &cp
}

// WithRateLimitRetries returns a copy of m that retries a 429 at most n
// times (0: never).
func (m *Client) WithRateLimitRetries(n int) *Client {
	cp := *m
	cp.retries = max(n, 0)
	return &cp
}

// Do sends one request to the management API and returns the decoded
// answer: path is below /api/v2 and already escaped (such as
// "/organizations/acme"); body, when not nil, is encoded as JSON. A 204 or
// empty answer returns an empty document. A non-2xx answer returns a
// *JSONAPIError. Typed methods are built on Do; call it directly for
// endpoints they do not cover.
func (m *Client) Do(ctx context.Context, method, path string, params url.Values, body any) (*JSONAPIDocument, error) {
	if !strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") || strings.Contains(path, "//") {
		// An empty ID would silently address another endpoint.
		return nil, fmt.Errorf("api: %s %s: empty path segment (missing ID or name?)", method, path)
	}
	var buf []byte
	if body != nil {
		var err error
		if buf, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("api: encode %s %s: %w", method, path, err)
		}
	}
	target := m.c.BaseURL() + PathPrefix + path
	if len(params) > 0 {
		// Encode escapes "[" and "]" as %5B and %5D, as the spec asks of
		// clients (page[number], filter[names], ...).
		target += "?" + params.Encode()
	}
	for attempt := 0; ; attempt++ {
		doc, wait, err := m.send(ctx, method, path, target, buf)
		if wait < 0 || attempt >= m.retries {
			return doc, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// send performs one attempt of a request. wait is how long to wait before
// retrying a 429, or -1 when the answer is final.
func (m *Client) send(ctx context.Context, method, path, target string, body []byte) (doc *JSONAPIDocument, wait time.Duration, err error) {
	var in io.Reader
	if body != nil {
		in = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, in)
	if err != nil {
		return nil, -1, fmt.Errorf("api: build %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", MediaTypeJSONAPI)
	if body != nil {
		req.Header.Set("Content-Type", MediaTypeJSONAPI)
	}
	if m.token != "" {
		req.Header.Set("Authorization", "Bearer "+m.token)
	}
	resp, err := m.c.HTTPClient().Do(req)
	if err != nil {
		return nil, -1, fmt.Errorf("api: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, api.MaxErrorBody))
		wait = -1
		if resp.StatusCode == http.StatusTooManyRequests {
			wait = rateLimitWait(resp.Header)
		}
		return nil, wait, parseJSONAPIError(resp.StatusCode, msg)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, -1, fmt.Errorf("api: read response of %s %s: %w", method, path, err)
	}
	doc = &JSONAPIDocument{}
	if len(bytes.TrimSpace(raw)) == 0 {
		return doc, -1, nil
	}
	if err := json.Unmarshal(raw, doc); err != nil {
		return nil, -1, fmt.Errorf("api: decode response of %s %s: %w", method, path, err)
	}
	return doc, -1, nil
}

// rateLimitWait is how long a 429 answer asks the client to wait:
// X-RateLimit-Reset (seconds, a decimal), else Retry-After (whole
// seconds), else one second; never more than maxRateLimitWait.
func rateLimitWait(h http.Header) time.Duration {
	wait := time.Second
	if v, err := strconv.ParseFloat(h.Get("X-RateLimit-Reset"), 64); err == nil && v >= 0 {
		wait = time.Duration(v * float64(time.Second))
	} else if v, err := strconv.Atoi(h.Get("Retry-After")); err == nil && v >= 0 {
		wait = time.Duration(v) * time.Second
	}
	return min(wait, maxRateLimitWait)
}

// PageOptions choose one page of a paginated list. Zero values let the
// server pick: the first page, 20 items.
type PageOptions struct {
	PageNumber int
	PageSize   int
}

func (p PageOptions) apply(params url.Values) {
	if p.PageNumber > 0 {
		params.Set("page[number]", strconv.Itoa(p.PageNumber))
	}
	if p.PageSize > 0 {
		params.Set("page[size]", strconv.Itoa(p.PageSize))
	}
}

// Pagination is a list's meta.pagination. A null prev-page or next-page
// (the first or last page) reads as 0.
type Pagination struct {
	CurrentPage int `json:"current-page"`
	// PageSize is sent by some endpoints only; 0 when absent.
	PageSize   int `json:"page-size,omitempty"`
	PrevPage   int `json:"prev-page"`
	NextPage   int `json:"next-page"`
	TotalPages int `json:"total-pages"`
	TotalCount int `json:"total-count"`
}

// Page is one page of a list: its items, the document's links, and its
// pagination (nil when the server sent none).
type Page[T any] struct {
	Items      []*T
	Links      JSONAPILinks
	Pagination *Pagination
	// Document is the whole answer, for members no typed field covers
	// (included resources of an include the client does not decode).
	Document *JSONAPIDocument `json:"-"`
}

// finisher fills what a resource's attributes do not carry into v: the id,
// relationships and included resources. Its errors start with "api:".
type finisher[T any] func(v *T, r *JSONAPIResource, doc *JSONAPIDocument) error

// decodeResource checks r's type, decodes its attributes into a new T and
// lets finish complete it.
func decodeResource[T any](r *JSONAPIResource, typ string, doc *JSONAPIDocument, finish finisher[T]) (*T, error) {
	if r == nil {
		return nil, fmt.Errorf("api: null resource where %s was expected", typ)
	}
	if r.Type != typ {
		return nil, fmt.Errorf("api: resource %q has type %q, want %q", r.ID, r.Type, typ)
	}
	v := new(T)
	if !isNull(r.Attributes) {
		if err := json.Unmarshal(r.Attributes, v); err != nil {
			return nil, fmt.Errorf("api: attributes of %s %s: %w", typ, r.ID, err)
		}
	}
	// finish's errors come from relatedID or a nested decodeResource,
	// which already say "api:".
	if err := finish(v, r, doc); err != nil {
		return nil, err
	}
	return v, nil
}

// callOne performs a request answered by one resource of type typ.
func callOne[T any](ctx context.Context, m *Client, method, path string, params url.Values, body any, typ string, finish finisher[T]) (*T, error) {
	doc, err := m.Do(ctx, method, path, params, body)
	if err != nil {
		return nil, err
	}
	r, err := doc.One()
	if err != nil {
		return nil, fmt.Errorf("%w (%s %s)", err, method, path)
	}
	return decodeResource(r, typ, doc, finish)
}

// fetchList performs a GET answered by a list of resources of type typ.
func fetchList[T any](ctx context.Context, m *Client, path string, params url.Values, typ string, finish finisher[T]) (*Page[T], error) {
	doc, err := m.Do(ctx, http.MethodGet, path, params, nil)
	if err != nil {
		return nil, err
	}
	rs, err := doc.Many()
	if err != nil {
		return nil, fmt.Errorf("%w (GET %s)", err, path)
	}
	page := &Page[T]{Items: make([]*T, 0, len(rs)), Document: doc}
	for _, r := range rs {
		v, err := decodeResource(r, typ, doc, finish)
		if err != nil {
			return nil, err
		}
		page.Items = append(page.Items, v)
	}
	if doc.Links != nil {
		page.Links = *doc.Links
	}
	var p Pagination
	if ok, err := doc.DecodeMeta("pagination", &p); err != nil {
		return nil, err
	} else if ok {
		page.Pagination = &p
	}
	return page, nil
}

// nullable returns nil for "" and s otherwise: the management API takes
// null, not an empty string, to clear an optional attribute.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// putString sets attrs[key] when v is given, null when it is "".
func putString(attrs map[string]any, key string, v *string) {
	if v != nil {
		attrs[key] = nullable(*v)
	}
}

// putValue sets attrs[key] when v is given.
func putValue[T any](attrs map[string]any, key string, v *T) {
	if v != nil {
		attrs[key] = *v
	}
}

// commaList joins values for list-valued query parameters, or "" for none.
func commaList(vs []string) string { return strings.Join(vs, ",") }
