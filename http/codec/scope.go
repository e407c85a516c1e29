package codec

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
