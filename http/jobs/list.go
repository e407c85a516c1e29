package jobs

import (
	"net/http"
	"net/url"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/hashicorp/go-bexpr"
	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
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

// parseListOptions reads the list parameters from the request's query, as
// the core parsed it; a malformed one is a 400 naming it.
func parseListOptions(q url.Values) (listOptions, error) {
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

// readPage serves a list read of one table: fetch lists the request's
// namespace (or every one, for *) under the prefix; an entry of a
// namespace the caller may not read is left out, entry turns what is kept
// into the list entry (false drops it), and the page is cut by key. The
// read blocks on table.
func readPage[S, T any](h *api, w http.ResponseWriter, r *http.Request, opts listOptions, table string,
	fetch func(ws memdb.WatchSet, ns, prefix string) ([]S, error),
	key func(S) (id, namespace string), entry func(S) (T, bool)) (any, error) {
	allowed := h.core.NamespaceFilter(r, state.NamespaceCapabilityReadJob) // namespace=* shows only permitted namespaces
	var pg *page[T]
	err := h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		pg = newPage[T](opts)
		rows, err := fetch(ws, ns, opts.Prefix)
		if err != nil {
			return 0, err
		}
		for _, row := range rows {
			id, rowNS := key(row)
			if allowed != nil && !allowed(rowNS) {
				continue
			}
			v, ok := entry(row)
			if !ok {
				continue
			}
			if !pg.add(id, v) {
				break
			}
		}
		return h.maxIndex(table), nil
	})
	if err != nil {
		return nil, err
	}
	return pg.finish(w), nil
}
