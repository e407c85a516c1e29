package jobs

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// servicesHarness is a harness with nodes 1 and 2 and job "web" with
// allocations 1 and 2 on node 1 and allocation 3 on node 2.
func servicesHarness(t *testing.T) (*harness, *state.Job) {
	t.Helper()
	h, _ := newSchedHarness(t)
	h.RegisterNode(apitest.TestNode(1))
	h.RegisterNode(apitest.TestNode(2))
	h.register(apitest.TestJob("web"))
	job := h.Registered(apitest.TestJob("web"))
	h.PlaceAlloc(1, job, apitest.NodeID(1), "")
	h.PlaceAlloc(2, job, apitest.NodeID(1), "")
	h.PlaceAlloc(3, job, apitest.NodeID(2), "")
	return h, job
}

func svcURL(node int) string { return "/v1/node/" + apitest.NodeID(node) + "/services" }

func TestServiceRegistrationsWriteAndRead(t *testing.T) {
	h, _ := servicesHarness(t)
	var out state.ServiceRegistrationsResponse
	spoofed := apitest.SvcReg("s1", "web", apitest.AllocID(1), 2001, "b", "a")
	spoofed["NodeID"], spoofed["Namespace"], spoofed["JobID"] = apitest.NodeID(2), "other", "nope"
	h.OK(http.MethodPut, svcURL(1), map[string]any{"Services": []any{
		spoofed,
		apitest.SvcReg("s2", "admin", apitest.AllocID(1), 2002, "x"),
		apitest.SvcReg("s3", "web", apitest.AllocID(2), 2003, "c", "b"),
		apitest.SvcReg("gone", "web", apitest.AllocID(99), 1), // its allocation does not exist: skipped
	}}, &out)
	if out.Index == 0 {
		t.Fatal("no index for a write")
	}
	h.OK(http.MethodPost, svcURL(2), map[string]any{"Services": []any{apitest.SvcReg("s4", "db", apitest.AllocID(3), 5432)}}, nil)

	var byJob []*state.ServiceRegistration
	rec := h.OK(http.MethodGet, "/v1/job/web/services", nil, &byJob)
	if got := apitest.HeaderIndexOf(t, rec); got <= out.Index {
		t.Errorf("index %d, want above %d", got, out.Index)
	}
	if len(byJob) != 4 {
		t.Fatalf("job services %+v, want 4", byJob)
	}
	s1 := byJob[0]
	if s1.ID != "s1" || s1.NodeID != apitest.NodeID(1) || s1.Namespace != "default" || s1.JobID != "web" ||
		s1.Datacenter != "dc1" || s1.Port != 2001 || s1.Address != "10.0.0.1" || s1.CreateIndex != out.Index {
		t.Errorf("s1 = %+v: node, namespace and job must come from the allocation", s1)
	}

	var web []*state.ServiceRegistration
	h.OK(http.MethodGet, "/v1/service/web", nil, &web)
	if len(web) != 2 || web[0].ID != "s1" || web[1].ID != "s3" {
		t.Errorf("service web = %+v", web)
	}
	var none []*state.ServiceRegistration
	if h.OK(http.MethodGet, "/v1/service/nope", nil, &none); none == nil || len(none) != 0 {
		t.Errorf("unknown service = %v, want []", none)
	}
	if h.OK(http.MethodGet, "/v1/job/nope/services", nil, &none); none == nil || len(none) != 0 {
		t.Errorf("unknown job = %v, want []", none)
	}

	var list []*state.ServiceListStub
	h.OK(http.MethodGet, "/v1/services", nil, &list)
	want := []*state.ServiceListStub{{Namespace: "default", Services: []*state.ServiceListEntry{
		{ServiceName: "admin", Tags: []string{"x"}},
		{ServiceName: "db", Tags: []string{}},
		{ServiceName: "web", Tags: []string{"a", "b", "c"}},
	}}}
	if !reflect.DeepEqual(list, want) {
		b, _ := json.Marshal(list)
		t.Errorf("service list = %s", b)
	}

	// Re-registering updates in place: same CreateIndex, new ModifyIndex.
	var again state.ServiceRegistrationsResponse
	h.OK(http.MethodPut, svcURL(1), map[string]any{"Services": []any{apitest.SvcReg("s1", "web", apitest.AllocID(1), 2011)}}, &again)
	byJob = nil
	h.OK(http.MethodGet, "/v1/job/web/services", nil, &byJob)
	if byJob[0].Port != 2011 || byJob[0].CreateIndex != out.Index || byJob[0].ModifyIndex != again.Index {
		t.Errorf("updated s1 = %+v", byJob[0])
	}

	// Deregister by ID and by allocation; unknown IDs are fine (retries).
	h.OK(http.MethodDelete, svcURL(1)+"?id=s2&id=unknown", nil, nil)
	h.OK(http.MethodDelete, svcURL(1)+"?alloc_id="+apitest.AllocID(2), nil, nil)
	byJob = nil
	h.OK(http.MethodGet, "/v1/job/web/services", nil, &byJob)
	if len(byJob) != 2 || byJob[0].ID != "s1" || byJob[1].ID != "s4" {
		t.Errorf("after deregister: %+v", byJob)
	}
	var nothing state.ServiceRegistrationsResponse
	before := h.Writes()
	h.OK(http.MethodDelete, svcURL(1)+"?id=s2", nil, &nothing)
	if nothing.Index != 0 || h.Writes() != before {
		t.Errorf("deleting nothing wrote: %+v", nothing)
	}

	// An operator removes an entry by service name and ID.
	h.Fail(http.MethodDelete, "/v1/service/web/s4", nil, http.StatusNotFound, "no registration")
	h.OK(http.MethodDelete, "/v1/service/db/s4", nil, nil)
	if regs, _ := h.Store.ServicesByNode(nil, apitest.NodeID(2)); len(regs) != 0 {
		t.Errorf("operator delete left %+v", regs)
	}
}

func TestServicesNamespaces(t *testing.T) {
	h, _ := servicesHarness(t)
	h.CreateNamespace("prod")
	job := apitest.TestJob("api")
	job.Namespace = "prod"
	h.register(job)
	h.PlaceAlloc(7, h.Registered(job), apitest.NodeID(1), "")
	h.OK(http.MethodPut, svcURL(1), map[string]any{"Services": []any{
		apitest.SvcReg("p1", "api", apitest.AllocID(7), 80, "v2"),
		apitest.SvcReg("d1", "web", apitest.AllocID(1), 81),
	}}, nil)

	var list []*state.ServiceListStub
	h.OK(http.MethodGet, "/v1/services?namespace=*", nil, &list)
	if len(list) != 2 || list[0].Namespace != "default" || list[1].Namespace != "prod" || list[1].Services[0].ServiceName != "api" {
		b, _ := json.Marshal(list)
		t.Errorf("namespace=* list = %s", b)
	}
	var regs []*state.ServiceRegistration
	if h.OK(http.MethodGet, "/v1/service/api", nil, &regs); len(regs) != 0 {
		t.Errorf("prod service seen from default: %+v", regs)
	}
	if h.OK(http.MethodGet, "/v1/service/api?namespace=prod", nil, &regs); len(regs) != 1 || regs[0].Namespace != "prod" || regs[0].JobID != "api" {
		t.Errorf("prod service = %+v", regs)
	}
	if h.OK(http.MethodGet, "/v1/job/api/services?namespace=prod", nil, &regs); len(regs) != 1 {
		t.Errorf("prod job services = %+v", regs)
	}
	h.Fail(http.MethodDelete, "/v1/service/api/p1", nil, http.StatusNotFound)
	h.OK(http.MethodDelete, "/v1/service/api/p1?namespace=prod", nil, nil)
}

func TestServiceRegistrationsBadInput(t *testing.T) {
	h, _ := servicesHarness(t)
	h.OK(http.MethodPut, svcURL(2), map[string]any{"Services": []any{apitest.SvcReg("theirs", "db", apitest.AllocID(3), 1)}}, nil)
	before := h.Writes()
	cases := []struct {
		name, method, url string
		body              any
		code              int
		want              []string
	}{
		{"no body", "PUT", svcURL(1), nil, 400, []string{"body is required"}},
		{"not JSON", "PUT", svcURL(1), "{", 400, []string{"parse"}},
		{"empty list", "PUT", svcURL(1), map[string]any{"Services": []any{}}, 400, []string{"Services", "at least one"}},
		{"null entry", "PUT", svcURL(1), `{"Services": [null]}`, 400, []string{"Services[0]", "null"}},
		{"missing fields", "PUT", svcURL(1), map[string]any{"Services": []any{map[string]any{"Port": 70000}}}, 400,
			[]string{"Services[0].ID", "Services[0].ServiceName", "Services[0].AllocID", "Services[0].Port"}},
		{"duplicate", "PUT", svcURL(1), map[string]any{"Services": []any{apitest.SvcReg("x", "a", apitest.AllocID(1), 1), apitest.SvcReg("x", "a", apitest.AllocID(1), 1)}}, 400,
			[]string{"Services[1].ID", "also listed at Services[0]"}},
		{"unknown node", "PUT", "/v1/node/" + apitest.NodeID(9) + "/services", map[string]any{"Services": []any{apitest.SvcReg("x", "a", apitest.AllocID(1), 1)}}, 404, []string{apitest.NodeID(9)}},
		{"alloc of another node", "PUT", svcURL(1), map[string]any{"Services": []any{apitest.SvcReg("x", "a", apitest.AllocID(3), 1)}}, 400,
			[]string{"Services[0].AllocID", apitest.NodeID(2)}},
		{"ID of another node", "PUT", svcURL(1), map[string]any{"Services": []any{apitest.SvcReg("theirs", "a", apitest.AllocID(1), 1)}}, 400,
			[]string{"Services[0].ID", "belongs to node", apitest.NodeID(2)}},
		{"delete without IDs", "DELETE", svcURL(1), nil, 400, []string{"id or alloc_id"}},
		{"delete empty ID", "DELETE", svcURL(1) + "?id=", nil, 400, []string{"empty"}},
		{"delete another node's", "DELETE", svcURL(1) + "?id=theirs", nil, 400, []string{"belongs to node", apitest.NodeID(2)}},
		{"delete on unknown node", "DELETE", "/v1/node/" + apitest.NodeID(9) + "/services?id=x", nil, 404, []string{apitest.NodeID(9)}},
		{"read all namespaces", "GET", "/v1/service/web?namespace=*", nil, 400, []string{"namespace"}},
		{"bad index", "GET", "/v1/job/web/services?index=x", nil, 400, []string{"index"}},
		{"operator delete unknown", "DELETE", "/v1/service/db/nope", nil, 404, []string{"nope"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.on(t).Fail(c.method, c.url, c.body, c.code, c.want...)
		})
	}
	if h.Writes() != before {
		t.Errorf("bad requests wrote %d commands", h.Writes()-before)
	}
}

// A client that never deregistered (it crashed) leaves entries of
// finished allocations; its node's next registration removes them.
func TestServiceRegistrationsCleanStaleOnUpsert(t *testing.T) {
	h, _ := servicesHarness(t)
	h.OK(http.MethodPut, svcURL(1), map[string]any{"Services": []any{
		apitest.SvcReg("a1", "web", apitest.AllocID(1), 1), apitest.SvcReg("a2", "web", apitest.AllocID(2), 2),
	}}, nil)
	h.OK(http.MethodPost, "/v1/node/"+apitest.NodeID(1)+"/allocations", map[string]any{"Allocs": []any{
		map[string]any{"ID": apitest.AllocID(1), "ClientStatus": "failed"},
	}}, nil)
	// A finished allocation's registration is not taken either.
	h.OK(http.MethodPut, svcURL(1), map[string]any{"Services": []any{
		apitest.SvcReg("a2", "web", apitest.AllocID(2), 3), apitest.SvcReg("a1-again", "web", apitest.AllocID(1), 4),
	}}, nil)
	regs, _ := h.Store.ServicesByNode(nil, apitest.NodeID(1))
	if len(regs) != 1 || regs[0].ID != "a2" || regs[0].Port != 3 {
		t.Errorf("node 1 entries %+v, want only a2 (port 3)", regs)
	}
}

// GET /v1/job/:job_id/services blocks until an entry of the job changes,
// and not on writes elsewhere.
func TestJobServicesBlockingWakesOnRegistration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := servicesHarness(t)
		var first []*state.ServiceRegistration
		rec := h.OK(http.MethodGet, "/v1/job/web/services", nil, &first)
		index := apitest.HeaderIndexOf(t, rec)
		rec, done := h.Park("/v1/job/web/services?index=" + strconv.FormatUint(index, 10) + "&wait=1m") // an unrelated write does not wake it
		time.Sleep(5 * time.Second)                                                                     // fake time
		h.OK(http.MethodPut, svcURL(1), map[string]any{"Services": []any{apitest.SvcReg("s1", "web", apitest.AllocID(1), 8080)}}, nil)
		<-done
		var regs []*state.ServiceRegistration
		if err := json.Unmarshal(rec.Body.Bytes(), &regs); err != nil || rec.Code != http.StatusOK {
			t.Fatalf("status %d body %q: %v", rec.Code, rec.Body.String(), err)
		}
		if len(regs) != 1 || regs[0].ID != "s1" || regs[0].Port != 8080 {
			t.Errorf("woke with %+v", regs)
		}
		if got := apitest.HeaderIndexOf(t, rec); got <= index {
			t.Errorf("index %d, want above %d", got, index)
		}
	})
}

// Client agents write their entries with their node's secret, and only
// their own node's; reads need read-job.
func TestServicesACL(t *testing.T) {
	a := newACLHarness(t, true, "")
	mgmt := a.ManagementToken()
	n1, n2 := apitest.TestNode(1), apitest.TestNode(2)
	n1.SecretID, n2.SecretID = "20000000-0000-4000-8000-000000000001", "20000000-0000-4000-8000-000000000002"
	for _, n := range []*state.Node{n1, n2} {
		a.Apply(store.NodeRegisterRequestType, &store.NodeRegisterRequest{Node: n})
	}
	a.OKAs(mgmt, http.MethodPost, "/v1/jobs", &JobRegisterRequest{Job: apitest.TestJob("web")}, nil)
	a.PlaceAlloc(1, a.Registered(apitest.TestJob("web")), n1.ID, "")
	body := map[string]any{"Services": []any{apitest.SvcReg("s1", "web", apitest.AllocID(1), 80)}}

	a.OKAs(n1.SecretID, http.MethodPut, svcURL(1), body, nil)
	// Another node's secret is no token at all.
	a.FailAs(n2.SecretID, http.MethodPut, svcURL(1), body, http.StatusForbidden)
	a.DeniedAs("", http.MethodPut, svcURL(1), body)
	a.FailAs(n2.SecretID, http.MethodDelete, svcURL(1)+"?id=s1", nil, http.StatusForbidden)

	reader := a.ClientToken(apitest.RulesText("default", []string{state.NamespaceCapabilityReadJob}, "", "", ""))
	lister := a.ClientToken(apitest.RulesText("default", []string{state.NamespaceCapabilityListJobs}, "", "", ""))
	var regs []*state.ServiceRegistration
	a.OKAs(reader, http.MethodGet, "/v1/job/web/services", nil, &regs)
	if len(regs) != 1 {
		t.Errorf("reader sees %+v", regs)
	}
	a.OKAs(reader, http.MethodGet, "/v1/service/web", nil, nil)
	a.DeniedAs(lister, http.MethodGet, "/v1/service/web", nil)
	a.DeniedAs(reader, http.MethodDelete, "/v1/service/web/s1", nil)
	a.FailAs(n1.SecretID, http.MethodGet, "/v1/services", nil, http.StatusForbidden)

	// namespace=*: only the namespaces the token may read jobs in.
	a.OKAs(mgmt, http.MethodPut, "/v1/namespace/prod", map[string]string{}, nil)
	prodJob := apitest.TestJob("api")
	prodJob.Namespace = "prod"
	a.OKAs(mgmt, http.MethodPost, "/v1/jobs", &JobRegisterRequest{Job: prodJob}, nil)
	a.PlaceAlloc(2, a.Registered(prodJob), n1.ID, "")
	a.OKAs(n1.SecretID, http.MethodPut, svcURL(1), map[string]any{"Services": []any{apitest.SvcReg("p1", "api", apitest.AllocID(2), 81)}}, nil)
	var list []*state.ServiceListStub
	a.OKAs(reader, http.MethodGet, "/v1/services?namespace=*", nil, &list)
	if len(list) != 1 || list[0].Namespace != "default" {
		b, _ := json.Marshal(list)
		t.Errorf("reader's namespace=* list = %s, want default only", b)
	}
	a.OKAs(mgmt, http.MethodGet, "/v1/services?namespace=*", nil, &list)
	if len(list) != 2 {
		t.Errorf("management list has %d namespaces, want 2", len(list))
	}
}
