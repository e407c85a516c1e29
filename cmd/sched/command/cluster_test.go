package command

import (
	"testing"
)

// sched status PREFIX searches every context; one match shows its
// status, several are listed; sched system gc forces GC.
func TestStatusSearchAndSystemGC(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST", "/v1/search", reply(3, map[string]any{
		"Matches":     map[string][]string{"jobs": {"web"}, "nodes": {n1}},
		"Truncations": map[string]bool{},
	}))
	r := runCLI(t, f, runOpts{}, "status", "-t", `{{index .Matches "jobs"}}`, "we")
	r.check(t, 0, "[web]", "")
	r = runCLI(t, f, runOpts{}, "status", "we")
	r.check(t, 0, lines(`Prefix "we" matched several objects:`, "", "Kind   ID", "jobs   web", "nodes  "+n1), "")
	var body struct{ Prefix, Context string }
	decodeBody(t, f.requests("POST /v1/search")[0], &body)
	if body.Prefix != "we" || body.Context != "all" {
		t.Errorf("search body %+v", body)
	}

	f.on("PUT", "/v1/system/gc", reply(4, map[string]any{"Index": 4}))
	runCLI(t, f, runOpts{}, "system", "gc").check(t, 0, "Garbage collection done\n", "")
}
