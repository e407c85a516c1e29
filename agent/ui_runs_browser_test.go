package agent

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
)

// TestUIWorkspaceRuns: the workspace page lists a run with its status,
// and the run's page shows why it errored, its plan and its apply. The run
// errors at once (the installation has no terraform version), so no job
// starts: an in-process agent's binary is the test binary, not sched.
func TestUIWorkspaceRuns(t *testing.T) {
	ctx := browser(t)
	a := startDevAgent(t, func(c *Config) { c.ACL.Enabled = true })
	base := "http://" + a.HTTPAddr()
	p := &page{t: t, ctx: ctx, base: base}
	var boot struct{ SecretID string }
	call(t, base, "", "POST", "/v1/acl/bootstrap", map[string]any{}, &boot)
	tok := boot.SecretID
	call(t, base, tok, "POST", "/api/v2/organizations", map[string]any{"data": map[string]any{"type": "organizations",
		"attributes": map[string]any{"name": "acme", "email": "ops@example.com"}}}, nil)
	var ws, cv, run struct {
		Data struct {
			ID         string         `json:"id"`
			Attributes map[string]any `json:"attributes"`
		} `json:"data"`
	}
	call(t, base, tok, "POST", "/api/v2/organizations/acme/workspaces", map[string]any{"data": map[string]any{"type": "workspaces",
		"attributes": map[string]any{"name": "network"}}}, &ws)
	call(t, base, tok, "POST", "/api/v2/workspaces/"+ws.Data.ID+"/configuration-versions", map[string]any{"data": map[string]any{
		"type": "configuration-versions", "attributes": map[string]any{"auto-queue-runs": false}}}, &cv)
	var archive bytes.Buffer
	gz := gzip.NewWriter(&archive)
	tw := tar.NewWriter(gz)
	body := `resource "terraform_data" "x" {}`
	tw.WriteHeader(&tar.Header{Name: "main.tf", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
	tw.Write([]byte(body))
	tw.Close()
	gz.Close()
	req, _ := http.NewRequest("PUT", base+"/api/v2/configuration-versions/"+cv.Data.ID+"/upload", &archive)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("upload: %v %v", resp, err)
	}
	resp.Body.Close()
	call(t, base, tok, "POST", "/api/v2/runs", map[string]any{"data": map[string]any{"type": "runs",
		"attributes":    map[string]any{"message": "from the browser test"},
		"relationships": map[string]any{"workspace": map[string]any{"data": map[string]any{"type": "workspaces", "id": ws.Data.ID}}}}}, &run)
	testutil.WaitForErr(t, 20*time.Second, "the run to error", func() error {
		var r struct {
			Data struct{ Attributes map[string]any } `json:"data"`
		}
		call(t, base, tok, "GET", "/api/v2/runs/"+run.Data.ID, nil, &r)
		if r.Data.Attributes["status"] != "errored" {
			return fmt.Errorf("run is %v", r.Data.Attributes["status"])
		}
		return nil
	})

	p.open("#/signin")
	p.waitJS("the secret field", `!!document.querySelector("#secret")`)
	p.fill("#secret", tok)
	p.click(`form[data-form=signin] [type=submit]`)
	p.waitJS("signed in", `!location.hash.startsWith("#/signin")`)
	p.route("#/workspace/" + ws.Data.ID)
	p.waitText("#runs", run.Data.ID)
	p.waitText("#runs", "errored")
	p.waitText("#runs", "from the browser test")
	p.click(`#runs a[href="#/run/` + run.Data.ID + `"]`)
	p.waitText("main", "no enabled terraform version")
	p.waitText("main", "Plan")
	if got := p.count("pre.logs"); got != 2 {
		t.Errorf("the run's page shows %d logs, want the plan's and the apply's", got)
	}
	if txt := p.textOfJS(`document.querySelector("main").innerText`); !strings.Contains(txt, "Not started.") {
		t.Errorf("an errored run's unstarted plan:\n%s", txt)
	}
}
