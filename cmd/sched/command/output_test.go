package command

import (
	"encoding/json"
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
