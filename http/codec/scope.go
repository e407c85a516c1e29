package codec

import "net/url"

// HeaderNextToken names the key of the next page of a paginated list.
const HeaderNextToken = "X-Sched-NextToken"

// InNamespace reports whether an object of namespace objNS is visible to a
// request for namespace ns ("*" sees every namespace). Reads of single
// evaluations, allocations and deployments answer 404 for an object of
// another namespace, so that a capability granted in one namespace never
// reveals another's objects by ID.
func InNamespace(ns, objNS string) bool {
	return ns == "*" || ns == objNS
}

// Scope is what a request's query says about where it acts, decoded once
// by the rules of docs/identity.md ("The request's namespace"): keys and
// values are matched after percent-decoding; namespace, task and alloc_id
// (or the legacy allocID) may repeat only with one value; alloc_id and
// allocID must agree. The server's core and a client agent's handler both
// resolve a query through ResolveQuery, so the two cannot read it apart.
type Scope struct {
	// Query is the decoded query; nil when the request has none.
	Query url.Values
	// Namespace is the query's namespace, "" when it names none.
	Namespace string
	// Task and AllocID are ?task= and ?alloc_id= (or ?allocID=).
	Task, AllocID string
}

// ResolveQuery decodes rawQuery into a Scope. A query that does not decode,
// or that breaks a rule of Scope, is a 400 naming the parameter.
func ResolveQuery(rawQuery string) (Scope, error) {
	var sc Scope
	if rawQuery == "" {
		return sc, nil
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return sc, BadRequest("query: %v", err)
	}
	sc.Query = q
	if sc.Namespace, err = soleValue(q, "namespace"); err != nil {
		return sc, err
	}
	if sc.Task, err = soleValue(q, "task"); err != nil {
		return sc, err
	}
	if sc.AllocID, err = soleValue(q, "alloc_id"); err != nil {
		return sc, err
	}
	legacy, err := soleValue(q, "allocID")
	switch {
	case err != nil:
		return sc, err
	case sc.AllocID == "":
		sc.AllocID = legacy
	case legacy != "" && legacy != sc.AllocID:
		return sc, BadRequest("alloc_id: %q and allocID %q disagree", sc.AllocID, legacy)
	}
	return sc, nil
}

// soleValue returns the value of query parameter key, "" when absent. A
// key given more than once with different values is a 400: the guard
// and a handler reading different ones is how a check is bypassed.
func soleValue(q url.Values, key string) (string, error) {
	vs := q[key]
	if len(vs) == 0 {
		return "", nil
	}
	for _, v := range vs[1:] {
		if v != vs[0] {
			return "", BadRequest("%s: given more than once with different values (%q, %q)", key, vs[0], v)
		}
	}
	return vs[0], nil
}
