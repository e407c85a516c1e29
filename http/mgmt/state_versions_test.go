package mgmt

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	tfe "github.com/hashicorp/go-tfe"

	"github.com/schedhq/sched/state/mgmt"
)

// Terraform asks GET /.well-known/terraform.json before it sends a token,
// then reads the organization's entitlement set.
func TestMgmtTerraformDiscoveryAndEntitlements(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	rec := httptest.NewRecorder()
	m.srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", DiscoveryPath, nil))
	var services map[string]string
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &services) != nil {
		t.Fatalf("discovery: %d %s", rec.Code, rec.Body)
	}
	for _, k := range []string{"tfe.v2", "tfe.v2.1", "tfe.v2.2"} {
		if services[k] != "/api/v2/" {
			t.Errorf("discovery %s = %q, want /api/v2/", k, services[k])
		}
	}
	if _, ok := services["modules.v1"]; ok {
		t.Errorf("discovery announces a registry sched does not serve: %v", services)
	}
	e := m.call(w.reader, "GET", "/organizations/acme/entitlement-set", nil, 200).one(t)
	if e.Type != "entitlement-sets" || e.Attributes["state-storage"] != true || e.Attributes["operations"] != RunsExecute {
		t.Errorf("entitlement set = %+v", e)
	}
	m.fail(w.outsider, "GET", "/organizations/acme/entitlement-set", nil, 404, "")
	m.fail("", "GET", "/organizations/acme/entitlement-set", nil, 401, "")

	ts := httptest.NewServer(m.srv.Handler())
	defer ts.Close()
	ent, err := tfeClient(t, ts, w.owner).Organizations.ReadEntitlements(context.Background(), "acme")
	if err != nil || !ent.StateStorage || !ent.Teams || ent.Operations != RunsExecute {
		t.Errorf("go-tfe ReadEntitlements = %+v, %v", ent, err)
	}
}

// Execution modes: stored on organizations and workspaces, inherited
// workspace ← project ← organization, validated.
func TestMgmtExecutionModes(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	org := m.call(w.owner, "PATCH", "/organizations/acme", docBody("organizations", map[string]any{"default-execution-mode": "local"}), 200).one(t)
	if org.Attributes["default-execution-mode"] != "local" {
		t.Errorf("organization mode = %v", org.Attributes["default-execution-mode"])
	}
	m.fail(w.owner, "PATCH", "/organizations/acme", docBody("organizations", map[string]any{"default-execution-mode": "elsewhere"}), 422,
		"/data/attributes/default-execution-mode", "not one of remote, local, agent")
	if got := m.call(w.owner, "GET", "/organizations/acme", nil, 200).one(t).Attributes["default-execution-mode"]; got != "local" {
		t.Errorf("a refused update changed the mode to %v", got)
	}
	if p := m.call(w.owner, "GET", "/projects/"+w.appProject, nil, 200).one(t); p.Attributes["default-execution-mode"] != "local" {
		t.Errorf("project without its own mode shows %v, want the organization's", p.Attributes["default-execution-mode"])
	}
	ws := m.workspace(w.owner, "acme", "site", w.appProject, nil)
	if ws.Attributes["execution-mode"] != "local" || ws.Attributes["operations"] != false || ws.attr("setting-overwrites", "execution-mode") != false {
		t.Errorf("inherited mode = %v", ws.Attributes)
	}
	up := m.call(w.owner, "PATCH", "/workspaces/"+ws.ID, docBody("workspaces", map[string]any{"execution-mode": "remote"}), 200).one(t)
	if up.Attributes["execution-mode"] != "remote" || up.attr("setting-overwrites", "execution-mode") != true {
		t.Errorf("own mode = %v", up.Attributes)
	}
	m.fail(w.owner, "PATCH", "/workspaces/"+ws.ID, docBody("workspaces", map[string]any{"execution-mode": "cloud"}), 422, "/data/attributes/execution-mode")
	m.fail(w.owner, "PATCH", "/workspaces/"+ws.ID, docBody("workspaces", map[string]any{"execution-mode": "agent"}), 422, "/data/attributes/agent-pool-id")
	if got := m.call(w.owner, "GET", "/workspaces/"+ws.ID, nil, 200).one(t).Attributes["execution-mode"]; got != "remote" {
		t.Errorf("refused updates changed the mode to %v", got)
	}
	back := m.call(w.owner, "PATCH", "/workspaces/"+ws.ID, docBody("workspaces", map[string]any{"execution-mode": nil}), 200).one(t)
	if back.Attributes["execution-mode"] != "local" {
		t.Errorf("null mode = %v, want the inherited local", back.Attributes["execution-mode"])
	}
}

// A state version keeps the bytes Terraform uploads; its download URLs
// serve them back to readers, outputs hide sensitive values, and every bad
// upload is refused before anything changes.
func TestMgmtStateVersionBytes(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	ws := m.workspace(w.owner, "acme", "site", w.appProject, nil).ID
	ottoID, otto := m.user("otto")
	outsTeam := m.team(w.owner, "acme", "outputs", "organization", nil, ottoID)
	m.grant(w.owner, outsTeam, w.appProject, "custom", map[string]any{"workspace-access": map[string]any{"state-versions": "read-outputs"}})
	path := "/workspaces/" + ws + "/state-versions"
	outputs := `{"addr":{"value":"10.0.0.1","type":"string"},"secret":{"value":"hunter2","type":"string","sensitive":true},"ports":{"value":[80,443],"type":["list","number"]}}`
	st1 := stateFile(1, "lin-a", outputs)

	m.call(w.owner, "POST", "/workspaces/"+ws+"/actions/lock", nil, 200)
	sv := m.call(w.owner, "POST", path, stateBody(st1, map[string]any{"json-state": base64.StdEncoding.EncodeToString([]byte(`{"format_version":"1.0"}`))}), 201).one(t)
	if sv.Attributes["status"] != "finalized" || sv.Attributes["serial"] != 1.0 || sv.Attributes["hosted-state-upload-url"] != nil {
		t.Errorf("created = %v", sv.Attributes)
	}
	download, _ := sv.Attributes["hosted-state-download-url"].(string)
	if !strings.HasPrefix(download, "http://") || !strings.HasSuffix(download, "/api/v2/state-versions/"+sv.ID+"/download") {
		t.Fatalf("download URL = %q", download)
	}
	got := m.send(w.reader, "GET", "/state-versions/"+sv.ID+"/download", nil)
	if got.Code != 200 || !bytes.Equal(got.Body.Bytes(), st1) {
		t.Errorf("download: %d %q", got.Code, got.Body)
	}
	if js := m.send(w.reader, "GET", "/state-versions/"+sv.ID+"/json-download", nil); js.Code != 200 || js.Body.String() != `{"format_version":"1.0"}` {
		t.Errorf("json download: %d %q", js.Code, js.Body)
	}
	m.fail(otto, "GET", "/state-versions/"+sv.ID+"/download", nil, 403, "") // read-outputs only
	m.fail(w.outsider, "GET", "/state-versions/"+sv.ID+"/download", nil, 404, "")

	outs := m.call(otto, "GET", "/workspaces/"+ws+"/current-state-version-outputs", nil, 200).many(t)
	byName := map[string]testRes{}
	for _, o := range outs {
		byName[o.Attributes["name"].(string)] = o
	}
	if len(outs) != 3 || byName["addr"].Attributes["value"] != "10.0.0.1" || byName["ports"].Attributes["type"] != "array" ||
		byName["secret"].Attributes["sensitive"] != true || byName["secret"].Attributes["value"] != nil {
		t.Errorf("current outputs = %+v", outs)
	}
	secretID := byName["secret"].ID
	if o := m.call(w.owner, "GET", "/state-version-outputs/"+secretID, nil, 200).one(t); o.Attributes["value"] != "hunter2" {
		t.Errorf("sensitive output to a state reader = %v", o.Attributes["value"])
	}
	if o := m.call(otto, "GET", "/state-version-outputs/"+secretID, nil, 200).one(t); o.Attributes["value"] != nil {
		t.Errorf("sensitive output shown to a read-outputs caller: %v", o.Attributes["value"])
	}
	if n := len(m.call(otto, "GET", "/state-versions/"+sv.ID+"/outputs", nil, 200).many(t)); n != 3 {
		t.Errorf("version outputs: %d", n)
	}

	// Bad input: each refused, naming the problem, with the current state
	// left as it was.
	for _, c := range []struct {
		name   string
		body   map[string]any
		status int
		want   string
	}{
		{"not a state file", stateBody([]byte(`{"hello":"world"}`), map[string]any{"serial": 2, "lineage": "lin-a"}), 422, "/data/attributes/state"},
		{"not JSON", stateBody([]byte(`{"version":4,`), map[string]any{"serial": 2, "lineage": "lin-a"}), 422, "/data/attributes/state"},
		{"not base64", stateBody(st1, map[string]any{"state": "!!!"}), 422, "/data/attributes/state"},
		{"md5 disagrees", stateBody(stateFile(2, "lin-a", ""), map[string]any{"md5": strings.Repeat("0", 32)}), 422, "/data/attributes/md5"},
		{"lineage changes", stateBody(stateFile(2, "lin-b", ""), nil), 409, "lineage"},
		{"serial goes back", stateBody(stateFile(0, "lin-a", ""), nil), 409, "serial 0 is lower"},
		{"bad outputs", stateBody(stateFile(2, "lin-a", ""), map[string]any{"json-state-outputs": base64.StdEncoding.EncodeToString([]byte(`[1]`))}), 422, "/data/attributes/json-state-outputs"},
	} {
		if c.status == 422 {
			m.on(t).fail(w.owner, "POST", path, c.body, 422, c.want)
		} else {
			m.on(t).fail(w.owner, "POST", path, c.body, c.status, "", c.want)
		}
		cur := m.call(w.owner, "GET", "/workspaces/"+ws+"/current-state-version", nil, 200).one(t)
		if cur.ID != sv.ID {
			t.Errorf("%s: current state version became %s", c.name, cur.ID)
		}
	}
	if n := len(m.call(w.owner, "GET", path, nil, 200).many(t)); n != 1 {
		t.Errorf("refused uploads left %d state versions", n)
	}
	// A forced push replaces the lineage; a reader may not write.
	m.fail(w.reader, "POST", path, stateBody(stateFile(2, "lin-a", ""), nil), 403, "")
	forced := m.call(w.owner, "POST", path, stateBody(stateFile(1, "lin-b", ""), map[string]any{"force": true}), 201).one(t)
	if cur := m.call(w.owner, "GET", "/workspaces/"+ws+"/current-state-version", nil, 200).one(t); cur.ID != forced.ID {
		t.Errorf("after a forced push current = %s, want %s", cur.ID, forced.ID)
	}
	// Someone else's lock: 409, as TFE.
	m.call(w.owner, "POST", "/workspaces/"+ws+"/actions/unlock", nil, 200)
	m.grant(w.owner, m.team(w.owner, "acme", "writers", "organization", nil, w.readerID), w.appProject, "write", nil)
	m.call(w.reader, "POST", "/workspaces/"+ws+"/actions/lock", nil, 200)
	m.fail(w.owner, "POST", path, stateBody(stateFile(2, "lin-b", ""), nil), 409, "", "locked by")
}

// The size limit is the server's configuration; a state over it is a 422
// and so is an upload URL's PUT (413).
func TestMgmtStateVersionSizeLimit(t *testing.T) {
	m := newAPIHarness(t)
	m.api.cfg.MaxStateBytes = 200
	w := m.world()
	ws := m.workspace(w.owner, "acme", "site", w.appProject, nil).ID
	m.call(w.owner, "POST", "/workspaces/"+ws+"/actions/lock", nil, 200)
	big := stateFile(1, "lin", `{"pad":{"value":"`+strings.Repeat("x", 300)+`","type":"string"}}`)
	m.fail(w.owner, "POST", "/workspaces/"+ws+"/state-versions", stateBody(big, nil), 422, "/data/attributes/state", "over the limit of 200")
	pending := m.call(w.owner, "POST", "/workspaces/"+ws+"/state-versions", stateBody(big, map[string]any{"state": nil}), 201).one(t)
	if pending.Attributes["status"] != "pending" {
		t.Fatalf("without state: %v", pending.Attributes)
	}
	up := m.send(w.owner, "PUT", "/state-versions/"+pending.ID+"/upload", big)
	if up.Code != 413 {
		t.Errorf("oversized upload: %d %s", up.Code, up.Body)
	}
	m.fail(w.owner, "GET", "/workspaces/"+ws+"/current-state-version", nil, 404, "")
}

// go-tfe's Upload: create without state, then PUT to the upload URLs
// without a token (the URL's secret authorizes); then ReadCurrent and
// Download, as Terraform does.
func TestMgmtGoTFEStateVersionUpload(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	ctx := context.Background()
	ts := httptest.NewServer(m.srv.Handler())
	defer ts.Close()
	c := tfeClient(t, ts, w.owner)
	ws, err := c.Workspaces.Create(ctx, "acme", tfe.WorkspaceCreateOptions{Name: tfePtr("site")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Workspaces.Lock(ctx, ws.ID, tfe.WorkspaceLockOptions{}); err != nil {
		t.Fatal(err)
	}
	raw := stateFile(4, "lin-up", `{"name":{"value":"web","type":"string"}}`)
	sv, err := c.StateVersions.Upload(ctx, ws.ID, tfe.StateVersionUploadOptions{
		StateVersionCreateOptions: tfe.StateVersionCreateOptions{Serial: tfePtr(int64(4)), MD5: tfePtr(mgmt.MD5Hex(raw)), Lineage: tfePtr("lin-up")},
		RawState:                  raw, RawJSONState: []byte(`{"format_version":"1.0"}`)})
	if err != nil || sv.Status != tfe.StateVersionFinalized {
		t.Fatalf("Upload = %+v, %v", sv, err)
	}
	cur, err := c.StateVersions.ReadCurrent(ctx, ws.ID)
	if err != nil || cur.ID != sv.ID || cur.DownloadURL == "" || cur.JSONDownloadURL == "" {
		t.Fatalf("ReadCurrent = %+v, %v", cur, err)
	}
	got, err := c.StateVersions.Download(ctx, cur.DownloadURL)
	if err != nil || !bytes.Equal(got, raw) {
		t.Errorf("Download = %q, %v", got, err)
	}
	outs, err := c.StateVersionOutputs.ReadCurrent(ctx, ws.ID)
	if err != nil || len(outs.Items) != 1 || outs.Items[0].Name != "name" || outs.Items[0].Value != "web" {
		t.Errorf("StateVersionOutputs.ReadCurrent = %+v, %v", outs, err)
	}
	// The upload URL takes one upload only, and never without its secret.
	again := m.send("", "PUT", "/state-versions/"+sv.ID+"/upload", raw)
	if again.Code != 401 {
		t.Errorf("upload without token or secret: %d", again.Code)
	}
	if _, err := c.StateVersions.Download(ctx, ts.URL+"/api/v2/state-versions/"+sv.ID+"/download"); err != nil {
		t.Errorf("download by path: %v", err)
	}
	if _, err := tfeClient(t, ts, w.outsider).StateVersions.Download(ctx, cur.DownloadURL); !errors.Is(err, tfe.ErrResourceNotFound) {
		t.Errorf("outsider's download: %v", err)
	}
}

// go-tfe's projects test: an invalid name is refused with TFE's wording.
func TestMgmtGoTFEProjectInvalidName(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	ts := httptest.NewServer(m.srv.Handler())
	defer ts.Close()
	_, err := tfeClient(t, ts, w.owner).Projects.Create(context.Background(), "acme", tfe.ProjectCreateOptions{Name: "! / nope"})
	if err == nil || !strings.Contains(err.Error(), "invalid attribute\n\nName may only contain") {
		t.Errorf("invalid project name: %v", err)
	}
}
