package command

import (
	"net/http"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestNamespaceList(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/namespaces", reply(3, []*state.Namespace{
		{Name: "default", Description: "Default shared namespace"},
		{Name: "prod"},
	}))
	runCLI(t, f, runOpts{}, "namespace", "list").check(t, 0, lines(
		"Name     Description",
		"default  Default shared namespace",
		"prod",
	), "")
}

func TestNamespaceStatus(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/namespace/prod", reply(3, &state.Namespace{Name: "prod", Description: "Production", Meta: map[string]string{"team": "web", "cost": "a1"}}))
	f.on("GET", "/v1/namespace/bare", reply(3, &state.Namespace{Name: "bare"}))
	f.on("GET", "/v1/namespace/gone", fail(http.StatusNotFound, "namespace not found"))

	runCLI(t, f, runOpts{}, "namespace", "status", "prod").check(t, 0, lines(
		"Name        = prod",
		"Description = Production",
		"Quota       = <none>",
		"",
		"Metadata",
		"cost = a1",
		"team = web",
	), "")
	runCLI(t, f, runOpts{}, "namespace", "status", "bare").check(t, 0, lines(
		"Name        = bare",
		"Description = <none>",
		"Quota       = <none>",
	), "")
	runCLI(t, f, runOpts{}, "namespace", "status", "gone").check(t, 1, "",
		"Error retrieving namespace: Unexpected response code: 404 (namespace not found)\n")
}

func TestNamespaceApply(t *testing.T) {
	cases := []struct {
		name    string
		current http.HandlerFunc
		args    []string
		want    state.Namespace
	}{
		{
			name:    "create",
			current: fail(http.StatusNotFound, "namespace not found"),
			args:    []string{"-description", "Production", "prod"},
			want:    state.Namespace{Name: "prod", Description: "Production"},
		},
		{
			name:    "update keeps what is not given",
			current: reply(3, &state.Namespace{Name: "prod", Description: "old", Meta: map[string]string{"team": "web"}, ModifyIndex: 3}),
			args:    []string{"prod"},
			want:    state.Namespace{Name: "prod", Description: "old", Meta: map[string]string{"team": "web"}, ModifyIndex: 3},
		},
		{
			name:    "update clears the description when asked",
			current: reply(3, &state.Namespace{Name: "prod", Description: "old"}),
			args:    []string{"-description", "", "prod"},
			want:    state.Namespace{Name: "prod"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.on("GET", "/v1/namespace/prod", tc.current)
			f.on("PUT", "/v1/namespace/prod", reply(4, nil))
			runCLI(t, f, runOpts{}, append([]string{"namespace", "apply"}, tc.args...)...).check(t, 0,
				"Successfully applied namespace \"prod\"!\n", "")
			var got state.Namespace
			decodeBody(t, f.only("PUT /v1/namespace/prod"), &got)
			if got.Name != tc.want.Name || got.Description != tc.want.Description || len(got.Meta) != len(tc.want.Meta) || got.ModifyIndex != tc.want.ModifyIndex {
				t.Errorf("sent %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNamespaceApplyErrors(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/namespace/prod", fail(http.StatusForbidden, "Permission denied"))
	runCLI(t, f, runOpts{}, "namespace", "apply", "prod").check(t, 1, "",
		"Error looking up namespace: Unexpected response code: 403 (Permission denied)\n")
	if len(f.requests("PUT /v1/namespace/prod")) != 0 {
		t.Error("applied after a failed lookup")
	}

	f = newFakeAPI(t)
	f.on("GET", "/v1/namespace/Bad", fail(http.StatusNotFound, "namespace not found"))
	f.on("PUT", "/v1/namespace/Bad", fail(http.StatusBadRequest, "Name: invalid"))
	runCLI(t, f, runOpts{}, "namespace", "apply", "Bad").check(t, 1, "",
		"Error applying namespace specification: Unexpected response code: 400 (Name: invalid)\n")
}

func TestNamespaceDelete(t *testing.T) {
	f := newFakeAPI(t)
	f.on("DELETE", "/v1/namespace/prod", reply(5, nil))
	f.on("DELETE", "/v1/namespace/default", fail(http.StatusBadRequest, "the default namespace cannot be deleted"))
	runCLI(t, f, runOpts{}, "namespace", "delete", "prod").check(t, 0, "Successfully deleted namespace \"prod\"!\n", "")
	f.only("DELETE /v1/namespace/prod")
	runCLI(t, f, runOpts{}, "namespace", "delete", "default").check(t, 1, "",
		"Error deleting namespace: Unexpected response code: 400 (the default namespace cannot be deleted)\n")
}
