package http

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/http/jobs"
	"github.com/schedhq/sched/state"
)

// Every endpoint of issue 15 refuses anonymous callers and tokens without
// its capability, and lets a token with it through the guard.
func TestACLExecLifecycleAndFSEndpoints(t *testing.T) {
	a := newACLHarness(t, true, "")
	mgmt := a.ManagementToken()
	a.OKAs(mgmt, http.MethodPost, "/v1/jobs", &jobs.JobRegisterRequest{Job: apitest.TestJob("web")}, nil) // task "server": raw_exec
	id := a.PlaceAlloc(1, a.Registered(apitest.TestJob("web")), apitest.NodeID(1), "")
	cmd := url.QueryEscape(`["/bin/sh"]`)
	tok := func(caps ...string) string { return a.ClientToken(apitest.RulesText("default", caps, "", "", "")) }
	execBoth := tok("alloc-exec", "alloc-node-exec")
	cases := []struct {
		method, target string
		body           any
		right          string
		wrong          []string
	}{
		{http.MethodGet, "/v1/job/web/actions", nil, tok("read-job"), []string{tok("list-jobs")}},
		{http.MethodGet, "/v1/job/web/action?action=a&task=server&alloc_id=" + id, nil, execBoth,
			[]string{tok("read-job", "submit-job"), tok("alloc-exec")}}, // raw_exec needs alloc-node-exec too
		{http.MethodGet, "/v1/client/allocation/" + id + "/exec?task=server&command=" + cmd, nil, execBoth,
			[]string{tok("read-job", "alloc-lifecycle"), tok("alloc-exec")}},
		{http.MethodPost, "/v1/allocation/" + id + "/stop", nil, tok("alloc-lifecycle"), []string{tok("submit-job", "read-job")}},
		{http.MethodPost, "/v1/client/allocation/" + id + "/restart", nil, tok("alloc-lifecycle"), []string{tok("alloc-exec")}},
		{http.MethodPut, "/v1/client/allocation/" + id + "/signal", nil, tok("alloc-lifecycle"), []string{tok("read-fs")}},
		{http.MethodGet, "/v1/client/fs/ls/" + id + "?path=/", nil, tok("read-fs"), []string{tok("read-logs", "read-job")}},
		{http.MethodGet, "/v1/client/fs/stat/" + id + "?path=/", nil, tok("read-fs"), []string{tok("read-logs")}},
		{http.MethodGet, "/v1/client/fs/cat/" + id + "?path=x", nil, tok("read-fs"), []string{tok("alloc-exec")}},
		{http.MethodGet, "/v1/client/fs/readat/" + id + "?path=x", nil, tok("read-fs"), []string{tok("alloc-lifecycle")}},
	}
	for _, c := range cases {
		a.DeniedAs("", c.method, c.target, c.body)
		for _, w := range c.wrong {
			a.DeniedAs(w, c.method, c.target, c.body)
		}
		if rec := a.As(c.right, c.method, c.target, c.body); rec.Code == http.StatusForbidden {
			t.Errorf("%s %s with its capability: 403 %q", c.method, c.target, rec.Body.String())
		}
		// Another namespace's capability is not this one's.
		other := a.ClientToken(apitest.RulesText("prod", []string{"alloc-exec", "alloc-node-exec", "alloc-lifecycle", "read-fs", "read-job"}, "", "", ""))
		a.DeniedAs(other, c.method, c.target, c.body)
	}
	if got := a.Alloc(id).DesiredTransition.Migrate; got == nil || !*got {
		t.Error("the allowed stop did not mark the allocation")
	}
}

// With ws_handshake the token arrives in the first frame: a good one
// runs the session, a missing or weak one closes it with 4403.
func TestExecHandshakeToken(t *testing.T) {
	a := newACLHarness(t, true, "")
	fc := &fakeClientAPI{nodeID: apitest.NodeID(1), dir: t.TempDir(), allocs: map[string]*state.Allocation{}}
	a.srv.cfg.Client = fc
	mgmt := a.ManagementToken()
	a.OKAs(mgmt, http.MethodPost, "/v1/jobs", &jobs.JobRegisterRequest{Job: apitest.TestJob("web")}, nil)
	id := a.PlaceAlloc(1, a.Registered(apitest.TestJob("web")), apitest.NodeID(1), "")
	fc.allocs[id] = a.Alloc(id)
	srv := execServer(t, a.harness)
	good := a.ClientToken(apitest.RulesText("default", []string{"alloc-exec", "alloc-node-exec"}, "", "", ""))
	weak := a.ClientToken(apitest.RulesText("default", []string{"alloc-exec"}, "", "", ""))
	target := execURL("server", "echo", "in") + "&ws_handshake=true"
	for _, c := range []struct {
		token string
		ok    bool
	}{{good, true}, {weak, false}, {"", false}, {"not-a-token", false}} {
		conn, _, err := wsDial(t, srv, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		sendFrame(t, conn, state.ExecInputFrame{Version: 1, AuthToken: c.token})
		out, _, code, ce := frames(t, conn)
		switch {
		case c.ok && (out != "in\n" || code != 0):
			t.Errorf("token %q: %q, exit %d, close %v", c.token, out, code, ce)
		case !c.ok && (code != -1 || ce == nil || ce.Code != 4403):
			t.Errorf("token %q: exit %d, close %v; want 4403", c.token, code, ce)
		}
	}
	// Without ws_handshake, no token header is a 403 before the upgrade.
	if _, resp, _ := wsDial(t, srv, execURL("server", "echo"), nil); resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("anonymous exec: %v", resp)
	}
}
