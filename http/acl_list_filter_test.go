package http

import (
	"net/http"
	"slices"
	"testing"
)

// TestACLSchedulerListsFilterAllNamespaces: the evaluation, allocation and
// deployment lists with namespace=* show only namespaces where the token
// may read jobs, as the job list does.
func TestACLSchedulerListsFilterAllNamespaces(t *testing.T) {
	a, mgmt := jobsWorld(t) // registers a job, and so an eval, in default, dev, prod, secret
	nsOf := func(secret string) []string {
		t.Helper()
		var evals []struct{ Namespace string }
		a.OKAs(secret, http.MethodGet, "/v1/evaluations?namespace=*", nil, &evals)
		seen := map[string]bool{}
		var out []string
		for _, e := range evals {
			if !seen[e.Namespace] {
				seen[e.Namespace] = true
				out = append(out, e.Namespace)
			}
		}
		slices.Sort(out)
		return out
	}
	reader := a.ClientToken(`namespace "d*" { policy = "read" }`)
	if got := nsOf(reader); !slices.Equal(got, []string{"default", "dev"}) {
		t.Errorf("evaluations namespace=* for d* readers = %v, want [default dev]", got)
	}
	if got := nsOf(mgmt); !slices.Equal(got, []string{"default", "dev", "prod", "secret"}) {
		t.Errorf("evaluations namespace=* for management = %v", got)
	}
	// The filtered lists answer rather than deny a token that can read
	// only some namespaces.
	for _, target := range []string{"/v1/allocations?namespace=*", "/v1/deployments?namespace=*"} {
		a.OKAs(reader, http.MethodGet, target, nil, nil)
	}
	a.DeniedAs("", http.MethodGet, "/v1/evaluations?namespace=*", nil)
}
