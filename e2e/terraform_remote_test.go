//go:build e2e

package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
)

// startRemoteRuns starts a -dev agent over HTTPS whose organization org
// executes runs remotely (as jobs on the agent's own client), and makes
// terraform v1.5.7 one of its terraform versions: a tool version whose
// URL a local HTTP server answers with the binary, as a release host
// would (the worker checks its SHA-256 and caches it).
func startRemoteRuns(t *testing.T, bin, org string) *tlsAgent {
	t.Helper()
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(data) }))
	t.Cleanup(srv.Close)
	ta := startTLSAgentMode(t, org, true)
	testutil.WaitForErr(t, 60*time.Second, "the dev agent's node to be ready", func() error {
		code, body := ta.do(t, "GET", "/v1/nodes", "")
		if code != 200 || !strings.Contains(string(body), `"Status":"ready"`) {
			return fmt.Errorf("nodes: %d %s", code, body)
		}
		return nil
	})
	doc := fmt.Sprintf(`{"data":{"type":"tool-versions","attributes":{"version":%q,"url":%q,"sha":%q,"official":true,"enabled":true}}}`,
		terraformVersion, srv.URL+"/terraform", hex.EncodeToString(sum[:]))
	if code, out := ta.do(t, "POST", "/api/v2/admin/tool-versions", doc); code != 201 {
		t.Fatalf("terraform version: %d %s", code, out)
	}
	return ta
}

// runDoc is the part of a run the test reads.
type runDoc struct {
	ID         string `json:"id"`
	Attributes struct {
		Status     string `json:"status"`
		HasChanges bool   `json:"has-changes"`
	} `json:"attributes"`
	Relationships struct {
		Plan  struct{ Data struct{ ID string } } `json:"plan"`
		Apply struct{ Data struct{ ID string } } `json:"apply"`
	} `json:"relationships"`
}

// TestTerraformRemoteRun drives `terraform apply` in remote execution: the
// plan and the apply run as batch jobs (namespace tfe-runs) on the dev
// agent's client, terraform streams their logs, and the state the apply
// wrote is the workspace's new current state, read back by `terraform
// output` and the API. A second apply without changes ends after its plan;
// a third passes -var; a plan of a changed configuration is plan-only.
func TestTerraformRemoteRun(t *testing.T) {
	bin := terraformBin(t)
	ta := startRemoteRuns(t, bin, "acme")
	d := newTerraformDir(t, bin, ta, "acme", "remote")
	d.run("init", "-input=false")

	out := d.run("apply", "-auto-approve", "-input=false")
	for _, want := range []string{"Running apply in Terraform Cloud", "Plan: 1 to add", "Apply complete! Resources: 1 added"} {
		if !strings.Contains(out, want) {
			t.Errorf("remote apply's output lacks %q:\n%s", want, out)
		}
	}
	if got := strings.TrimSpace(d.run("output", "-raw", "message")); got != "one" {
		t.Errorf("output after the remote apply = %q", got)
	}

	code, body := ta.do(t, "GET", "/api/v2/organizations/acme/workspaces/remote", "")
	var ws struct {
		Data struct {
			ID         string         `json:"id"`
			Attributes map[string]any `json:"attributes"`
		} `json:"data"`
	}
	if code != 200 || json.Unmarshal(body, &ws) != nil {
		t.Fatalf("workspace: %d %s", code, body)
	}
	if ws.Data.Attributes["execution-mode"] != "remote" || ws.Data.Attributes["locked"] != false {
		t.Errorf("workspace after the run: execution-mode %v, locked %v", ws.Data.Attributes["execution-mode"], ws.Data.Attributes["locked"])
	}
	code, body = ta.do(t, "GET", "/api/v2/workspaces/"+ws.Data.ID+"/runs", "")
	var runs struct{ Data []runDoc }
	if code != 200 || json.Unmarshal(body, &runs) != nil || len(runs.Data) != 1 {
		t.Fatalf("runs: %d %s", code, body)
	}
	run := runs.Data[0]
	if run.Attributes.Status != "applied" || !run.Attributes.HasChanges {
		t.Errorf("run %s: %+v", run.ID, run.Attributes)
	}
	// The plan and the apply were jobs on the cluster.
	code, body = ta.do(t, "GET", "/v1/jobs?namespace=tfe-runs", "")
	for _, job := range []string{run.ID + "-plan", run.ID + "-apply"} {
		if code != 200 || !strings.Contains(string(body), `"ID":"`+job+`"`) {
			t.Errorf("job %s not in namespace tfe-runs: %d %s", job, code, body)
		}
	}
	code, body = ta.do(t, "GET", "/api/v2/plans/"+run.Relationships.Plan.Data.ID+"/logs", "")
	if code != 200 || !strings.Contains(string(body), "Plan: 1 to add") || body[0] != 2 || body[len(body)-1] != 3 {
		t.Errorf("plan log: %d %q", code, body)
	}
	code, body = ta.do(t, "GET", "/api/v2/workspaces/"+ws.Data.ID+"/current-state-version", "")
	if code != 200 || !strings.Contains(string(body), `"`+run.ID+`"`) {
		t.Errorf("current state version after the remote apply (the run's): %d %s", code, body)
	}

	out = d.run("apply", "-auto-approve", "-input=false")
	if !strings.Contains(out, "No changes") {
		t.Errorf("second remote apply:\n%s", out)
	}
	code, body = ta.do(t, "GET", "/api/v2/workspaces/"+ws.Data.ID+"/runs", "")
	if code != 200 || json.Unmarshal(body, &runs) != nil || len(runs.Data) != 2 || runs.Data[0].Attributes.Status != "planned_and_finished" {
		t.Errorf("runs after the no-op apply: %d %s", code, body)
	}

	// -var reaches the remote run (its variables, a .auto.tfvars file).
	d.run("apply", "-auto-approve", "-input=false", "-var", "message=two")
	if got := strings.TrimSpace(d.run("output", "-raw", "message")); got != "two" {
		t.Errorf("output after the remote apply with -var = %q", got)
	}

	// `terraform plan` of a changed configuration: a speculative, plan-only
	// run that shows the change and leaves the state as it was.
	main := filepath.Join(d.dir, "main.tf")
	cfg, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(main, bytes.Replace(cfg, []byte(`default = "one"`), []byte(`default = "three"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	out = d.run("plan", "-input=false")
	if !strings.Contains(out, "Plan: 0 to add, 1 to change, 0 to destroy") {
		t.Errorf("remote plan of a changed configuration:\n%s", out)
	}
	code, body = ta.do(t, "GET", "/api/v2/workspaces/"+ws.Data.ID+"/runs", "")
	if code != 200 || json.Unmarshal(body, &runs) != nil || len(runs.Data) != 4 || runs.Data[0].Attributes.Status != "planned_and_finished" {
		t.Errorf("runs after the remote plan: %d %s", code, body)
	}
	if got := strings.TrimSpace(d.run("output", "-raw", "message")); got != "two" {
		t.Errorf("output after a plan = %q", got)
	}
}
