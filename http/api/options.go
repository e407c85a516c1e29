package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Response headers carrying read and write metadata.
const (
	HeaderIndex       = "X-Sched-Index"
	HeaderKnownLeader = "X-Sched-KnownLeader"
	HeaderLastContact = "X-Sched-LastContact"
	HeaderNextToken   = "X-Sched-NextToken"
)

// QueryOptions tune one read. The zero value (or nil) is a consistent,
// non-blocking read in the Config's namespace with the Config's token.
type QueryOptions struct {
	// Namespace overrides Config.Namespace; "*" asks list endpoints for
	// every namespace the token may read.
	Namespace string
	// Token overrides Config.Token.
	Token string
	// Prefix filters list results on an ID prefix.
	Prefix string
	// PerPage paginates list results; 0 returns everything.
	PerPage int32
	// NextToken continues a paginated list where the previous page's
	// QueryMeta.NextToken left off.
	NextToken string
	// Filter is a boolean expression evaluated on each list entry.
	Filter string
	// WaitIndex makes the read blocking: the server answers once the
	// result's index is above it, or WaitTime has passed.
	WaitIndex uint64
	// WaitTime bounds a blocking read; 0 lets the server pick (5m).
	WaitTime time.Duration
	// AllowStale lets any server answer from its local state without first
	// confirming it is up to date with the leader: faster and available
	// without a leader, at the cost of possibly old data.
	AllowStale bool
	// Params are extra query parameters, for endpoints with their own.
	Params map[string]string
}

// apply adds o's parameters to params and returns the token to send. A nil
// o applies the Config's defaults only.
func (o *QueryOptions) apply(cfg Config, params url.Values) string {
	ns, token := cfg.Namespace, cfg.Token
	if o != nil {
		if o.Namespace != "" {
			ns = o.Namespace
		}
		if o.Token != "" {
			token = o.Token
		}
		setIf(params, "prefix", o.Prefix)
		if o.PerPage != 0 {
			params.Set("per_page", strconv.FormatInt(int64(o.PerPage), 10))
		}
		setIf(params, "next_token", o.NextToken)
		setIf(params, "filter", o.Filter)
		if o.WaitIndex != 0 {
			params.Set("index", strconv.FormatUint(o.WaitIndex, 10))
		}
		if o.WaitTime != 0 {
			params.Set("wait", o.WaitTime.String())
		}
		if o.AllowStale {
			params.Set("stale", "true")
		}
		for k, v := range o.Params {
			params.Set(k, v)
		}
	}
	setIf(params, "namespace", ns)
	return token
}

// WriteOptions tune one write. The zero value (or nil) writes in the
// Config's namespace with the Config's token.
type WriteOptions struct {
	// Namespace overrides Config.Namespace.
	Namespace string
	// Token overrides Config.Token.
	Token string
}

// apply adds o's parameters to params and returns the token to send.
func (o *WriteOptions) apply(cfg Config, params url.Values) string {
	ns, token := cfg.Namespace, cfg.Token
	if o != nil {
		if o.Namespace != "" {
			ns = o.Namespace
		}
		if o.Token != "" {
			token = o.Token
		}
	}
	setIf(params, "namespace", ns)
	return token
}

func setIf(params url.Values, key, value string) {
	if value != "" {
		params.Set(key, value)
	}
}

// QueryMeta is what the server said about a read: pass LastIndex back as
// QueryOptions.WaitIndex to block until the result changes.
type QueryMeta struct {
	// LastIndex is the Raft index the result reflects.
	LastIndex uint64
	// KnownLeader reports whether the answering server knew a leader.
	KnownLeader bool
	// LastContact is how long ago the answering server heard from the
	// leader; zero on the leader. Useful to judge a stale read.
	LastContact time.Duration
	// NextToken, when not empty, fetches the next page.
	NextToken string
}

// WriteMeta is what the server said about a write.
type WriteMeta struct {
	// LastIndex is the Raft index of the write.
	LastIndex uint64
}

func parseQueryMeta(h http.Header) (*QueryMeta, error) {
	index, err := parseIndex(h)
	if err != nil {
		return nil, err
	}
	qm := &QueryMeta{LastIndex: index, NextToken: h.Get(HeaderNextToken)}
	if v := h.Get(HeaderKnownLeader); v != "" {
		if qm.KnownLeader, err = strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("api: bad %s header %q", HeaderKnownLeader, v)
		}
	}
	if v := h.Get(HeaderLastContact); v != "" {
		ms, err := strconv.ParseUint(v, 10, 63)
		if err != nil {
			return nil, fmt.Errorf("api: bad %s header %q", HeaderLastContact, v)
		}
		qm.LastContact = time.Duration(ms) * time.Millisecond
	}
	return qm, nil
}

func parseWriteMeta(h http.Header) (*WriteMeta, error) {
	index, err := parseIndex(h)
	if err != nil {
		return nil, err
	}
	return &WriteMeta{LastIndex: index}, nil
}

// parseIndex reads X-Sched-Index; absent is 0 (an endpoint with no index).
func parseIndex(h http.Header) (uint64, error) {
	v := h.Get(HeaderIndex)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("api: bad %s header %q", HeaderIndex, v)
	}
	return n, nil
}
