package command

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

// -json prints what the API answered, -t prints it through a template;
// both on every read command that has them.
func TestReadCommandsJSONAndTemplate(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/nodes", reply(5, nodeStubs()))
	f.on("GET", "/v1/evaluations", reply(7, []*state.Evaluation{
		{ID: "e1111111-0000-4000-8000-000000000000", JobID: "web", Status: "complete", Namespace: "default"},
		{ID: "e2222222-0000-4000-8000-000000000000", JobID: "api", Status: "blocked", Namespace: "default"},
	}))

	r := runCLI(t, f, runOpts{}, "node", "status", "-t", `{{range .}}{{.Name}} {{.Status}}{{"\n"}}{{end}}`)
	r.check(t, 0, lines("node-1 ready", "node-2 ready"), "")

	r = runCLI(t, f, runOpts{}, "eval", "status", "-t", `{{range .}}{{.JobID}}={{.Status}};{{end}}`)
	r.check(t, 0, "web=complete;api=blocked;", "")

	r = runCLI(t, f, runOpts{}, "node", "status", "-json")
	var nodes []*state.NodeListStub
	if err := json.Unmarshal([]byte(r.stdout), &nodes); err != nil || r.code != 0 {
		t.Fatalf("node status -json: %d %v\n%s", r.code, err, r.stdout)
	}
	if len(nodes) != 2 || nodes[1].NodeClass != "large" || !strings.HasPrefix(r.stdout, "[\n    {") {
		t.Errorf("node status -json = %s", r.stdout)
	}

	// A template that does not parse is a usage error naming the flag.
	r = runCLI(t, f, runOpts{}, "node", "status", "-t", "{{.Name")
	if r.code != 1 || !strings.Contains(r.stderr, `invalid value "{{.Name" for flag -t`) {
		t.Errorf("bad template: %d %q", r.code, r.stderr)
	}
}

// `sched help job` lists the job subcommands; `sched help` the commands.
func TestHelpCommand(t *testing.T) {
	r := runCLI(t, nil, runOpts{}, "help", "job")
	if r.code != 0 || !strings.Contains(r.stdout, "Usage: sched job <command>") || !strings.Contains(r.stdout, "    history") {
		t.Errorf("help job: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, nil, runOpts{}, "help")
	if r.code != 0 || !strings.Contains(r.stdout, "    event") || !strings.Contains(r.stdout, "    monitor") {
		t.Errorf("help: %d\n%s", r.code, r.stdout)
	}
}

// The shell's completion request lists the matching command names.
func TestCompletion(t *testing.T) {
	comp := func(line string) result {
		return runCLI(t, nil, runOpts{env: map[string]string{"COMP_LINE": line, "COMP_POINT": strconv.Itoa(len(line))}}, "sched")
	}
	if r := comp("sched jo"); r.code != 0 || r.stdout != "job\n" {
		t.Errorf("sched jo -> %d %q", r.code, r.stdout)
	}
	if r := comp("sched job h"); r.stdout != "history\n" {
		t.Errorf("sched job h -> %q", r.stdout)
	}
	if r := comp("sched s"); r.stdout != lines("server", "service", "status", "system") {
		t.Errorf("sched s -> %q", r.stdout)
	}
	if r := comp("sched job status we"); r.stdout != "" {
		t.Errorf("past the command names -> %q", r.stdout)
	}
}

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

// sched event stream prints the stream's event lines, not its heartbeats,
// and sends the topics and index asked for; a refused stream is exit 1.
func TestEventStreamCommand(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/event/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("{}\n" + `{"Index":7,"Events":[{"Topic":"Job","Key":"web"}]}` + "\n{}\n"))
	})
	r := runCLI(t, f, runOpts{}, "event", "stream", "-topic", "Job:web", "-topic", "Allocation:*", "-index", "7")
	r.check(t, 0, `{"Index":7,"Events":[{"Topic":"Job","Key":"web"}]}`+"\n", "")
	q := f.only("GET /v1/event/stream").Query
	if got := q["topic"]; len(got) != 2 || got[0] != "Job:web" || got[1] != "Allocation:*" || q.Get("index") != "7" {
		t.Errorf("query %v", q)
	}
	denied := newFakeAPI(t)
	denied.on("GET", "/v1/event/stream", fail(http.StatusForbidden, "Permission denied"))
	r = runCLI(t, denied, runOpts{}, "event", "stream")
	if r.code != 1 || !strings.Contains(r.stderr, "Permission denied") {
		t.Errorf("denied: %d %q", r.code, r.stderr)
	}
}

// job run exits 2 when the deployment it follows fails.
func TestJobRunFailedDeploymentExitsTwo(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/jobs", reply(9, state.JobRegisterResponse{EvalID: "e1", JobModifyIndex: 9}))
	f.on("GET", "/v1/job/web/evaluations", reply(12, []*state.Evaluation{{ID: "e1", Status: "complete", TriggeredBy: "job-register"}}))
	f.on("GET", "/v1/job/web/allocations", reply(12, []*state.Allocation{}))
	f.on("GET", "/v1/job/web/deployment", reply(13, &state.Deployment{ID: "d1", JobID: "web", JobModifyIndex: 9,
		Status: state.DeploymentStatusFailed, StatusDescription: "Failed due to progress deadline"}))
	r := runCLI(t, f, runOpts{}, "job", "run", writeFile(t, "web.json", `{"ID":"web"}`))
	if r.code != exitPlacementFailed || !strings.Contains(r.stdout, "failed (Failed due to progress deadline)") {
		t.Errorf("exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
	}
}
