package jsonapi

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Page sizes of every paginated list (spec §1, §8).
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// Query parameter names of pagination. Clients send the brackets
// percent-encoded (page%5Bnumber%5D) or raw; url.Query decodes both to
// these keys.
const (
	ParamPageNumber = "page[number]"
	ParamPageSize   = "page[size]"
)

// Page is the page of a list a request asks for. Number counts from 1.
type Page struct {
	Number int
	Size   int
}

// ParsePage reads page[number] (default 1) and page[size] (default 20;
// above 100 it is 100, as TFE caps it rather than refusing). A value that
// is not a positive integer is a 400 naming the parameter. A number past
// the last page is kept: the list is then empty and its meta echoes the
// page asked for.
func ParsePage(q url.Values) (Page, error) {
	p := Page{Number: 1, Size: DefaultPageSize}
	for _, f := range []struct {
		param string
		dst   *int
	}{{ParamPageNumber, &p.Number}, {ParamPageSize, &p.Size}} {
		v := q.Get(f.param)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return Page{}, ParameterError(f.param, "%q is not a positive integer", v)
		}
		*f.dst = n
	}
	p.Size = min(p.Size, MaxPageSize)
	// A page so far out that start would overflow is as empty as any
	// other page past the end.
	p.Number = min(p.Number, 1<<40/p.Size)
	return p, nil
}

// TotalPages is how many pages total items fill; an empty list has one
// (empty) page, so that first and last links always exist.
func (p Page) TotalPages(total int) int {
	return max(1, (total+p.Size-1)/p.Size)
}

// PageLinks are the top-level links of a paginated list: absolute URLs,
// with prev and next null at the ends.
type PageLinks struct {
	Self  string  `json:"self"`
	First string  `json:"first"`
	Prev  *string `json:"prev"`
	Next  *string `json:"next"`
	Last  string  `json:"last"`
}

// Pagination is meta.pagination of a list.
type Pagination struct {
	CurrentPage int  `json:"current-page"`
	PageSize    int  `json:"page-size"`
	PrevPage    *int `json:"prev-page"`
	NextPage    *int `json:"next-page"`
	TotalPages  int  `json:"total-pages"`
	TotalCount  int  `json:"total-count"`
}

// Paginate fills doc's links and meta.pagination for page p of a list of
// total items, as requested by r. Links keep every query parameter of the
// request (filters, sorts, includes) and replace only the page ones.
//
// current-page echoes the requested page even past the end; prev-page is
// the page before it (so a client past the end can walk back), next-page
// is null from the last page on.
func Paginate(doc *Document, r *http.Request, p Page, total int) {
	pages := p.TotalPages(total)
	pg := &Pagination{CurrentPage: p.Number, PageSize: p.Size, TotalPages: pages, TotalCount: total}
	base := BaseURL(r)
	q := r.URL.Query()
	link := func(n int) string {
		q.Set(ParamPageNumber, strconv.Itoa(n))
		q.Set(ParamPageSize, strconv.Itoa(p.Size))
		return base + "?" + q.Encode()
	}
	links := &PageLinks{Self: link(p.Number), First: link(1), Last: link(pages)}
	if p.Number > 1 {
		n := p.Number - 1
		pg.PrevPage = &n
		l := link(n)
		links.Prev = &l
	}
	if p.Number < pages {
		n := p.Number + 1
		pg.NextPage = &n
		l := link(n)
		links.Next = &l
	}
	doc.Links = links
	doc.SetMeta("pagination", pg)
}

// BaseURL is the absolute URL of r without its query: scheme and host as
// the client used them. The scheme is https when the connection was TLS or
// a proxy in front says so (X-Forwarded-Proto), http otherwise.
func BaseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := strings.ToLower(r.Header.Get("X-Forwarded-Proto")); p == "https" || p == "http" {
		scheme = p
	}
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	return scheme + "://" + host + r.URL.EscapedPath()
}

// ParamInclude is the query parameter of included resources.
const ParamInclude = "include"

// ParseInclude reads the comma-separated include parameter and checks each
// path against allowed. An unknown path is a 400 whose detail names the
// "include parameter", as JSON:API requires and as go-tfe recognises.
func ParseInclude(q url.Values, allowed ...string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, v := range q[ParamInclude] {
		for _, path := range strings.Split(v, ",") {
			path = strings.TrimSpace(path)
			if path == "" {
				continue
			}
			ok := false
			for _, a := range allowed {
				ok = ok || a == path
			}
			if !ok {
				return nil, ParameterError(ParamInclude, "invalid include parameter %q: this endpoint includes only %s",
					path, strings.Join(allowed, ", "))
			}
			out[path] = true
		}
	}
	return out, nil
}

// ParseBool reads an optional boolean query parameter: nil when absent or
// empty, a 400 naming it when not true or false.
func ParseBool(q url.Values, name string) (*bool, error) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return nil, ParameterError(name, "%q is not true or false", v)
	}
	return &b, nil
}

// SplitList splits a comma-separated parameter value, dropping empty
// entries and spaces around each.
func SplitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
