package jobs

import (
	"net/http"

	"github.com/hashicorp/go-bexpr"
	"github.com/schedhq/sched/http/codec"
)

// listOptions are the parameters of the scheduler's list endpoints:
// prefix, filter (a go-bexpr expression over the list entry, applied
// before pagination, as on GET /v1/jobs), per_page and next_token.
type listOptions struct {
	Prefix    string
	NextToken string
	PerPage   int64
	filter    *bexpr.Evaluator
}

// parseListOptions reads the list parameters; a malformed one is a 400
// naming it.
func parseListOptions(r *http.Request) (listOptions, error) {
	q := r.URL.Query()
	o := listOptions{Prefix: q.Get("prefix"), NextToken: q.Get("next_token")}
	n, err := codec.IntParam(q, "per_page", 0)
	if err != nil {
		return o, err
	}
	if n < 0 {
		return o, codec.BadRequest("per_page: must not be negative, got %d", n)
	}
	o.PerPage = n
	if f := q.Get("filter"); f != "" {
		o.filter, err = bexpr.CreateEvaluator(f)
		if err != nil {
			return o, codec.BadRequest("filter: %v", err)
		}
	}
	return o, nil
}

// page collects one page of a list ordered by key. Entries before
// NextToken are skipped, entries the filter rejects are dropped, and once
// the page is full the key of the next matching entry becomes the
// next-page token.
type page[T any] struct {
	opts  listOptions
	items []T
	next  string
}

func newPage[T any](opts listOptions) *page[T] {
	return &page[T]{opts: opts, items: make([]T, 0)}
}

// add offers entry v with pagination key key; it returns false once the
// page is full and the caller may stop.
func (p *page[T]) add(key string, v T) bool {
	if p.opts.NextToken != "" && key < p.opts.NextToken {
		return true
	}
	if p.opts.filter != nil {
		ok, err := p.opts.filter.Evaluate(v)
		if err != nil || !ok {
			// A selector missing from this entry does not match.
			return true
		}
	}
	if p.opts.PerPage > 0 && int64(len(p.items)) == p.opts.PerPage {
		p.next = key
		return false
	}
	p.items = append(p.items, v)
	return true
}

// finish sets the next-page header and returns the page's entries.
func (p *page[T]) finish(w http.ResponseWriter) []T {
	if p.next != "" {
		w.Header().Set(codec.HeaderNextToken, p.next)
	}
	return p.items
}
