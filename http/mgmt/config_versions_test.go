package mgmt

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	tfe "github.com/hashicorp/go-tfe"
)

// targz packs name → content into a gzipped tar.
func targz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(content))
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// go-tfe's configuration version calls: create, upload a directory to the
// upload URL (without a token: the URL's secret), read, list, download;
// and the archives refused, each leaving the version pending.
func TestMgmtGoTFEConfigurationVersions(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	ctx := context.Background()
	ts := httptest.NewServer(m.srv.Handler())
	defer ts.Close()
	c := tfeClient(t, ts, w.owner)
	ws := m.workspace(w.owner, "acme", "site", w.appProject, nil).ID

	// Refused archives first, on one version: each a 422 (413 when too
	// large) that leaves it pending.
	bad := m.call(w.owner, "POST", "/workspaces/"+ws+"/configuration-versions", nil, 201).one(t)
	if bad.Attributes["status"] != "pending" || bad.Attributes["upload-url"] == nil {
		t.Fatalf("created = %v", bad.Attributes)
	}
	if again := m.call(w.owner, "GET", "/configuration-versions/"+bad.ID, nil, 200).one(t); again.Attributes["upload-url"] != nil {
		t.Errorf("a read shows the upload URL: %v", again.Attributes["upload-url"])
	}
	for name, archive := range map[string][]byte{
		"not gzip":  []byte("main.tf"),
		"escapes":   targz(t, map[string]string{"../../etc/cron.d/x": "x"}),
		"absolute":  targz(t, map[string]string{"/etc/passwd": "x"}),
		"too large": bytes.Repeat([]byte{1}, 10<<20+1),
	} {
		rec := m.send(w.owner, "PUT", "/configuration-versions/"+bad.ID+"/upload", archive)
		want := 422
		if name == "too large" {
			want = 413
		}
		if rec.Code != want {
			t.Errorf("%s: %d %s, want %d", name, rec.Code, rec.Body, want)
		}
	}
	if got := m.call(w.owner, "GET", "/configuration-versions/"+bad.ID, nil, 200).one(t); got.Attributes["status"] != "pending" {
		t.Errorf("refused uploads changed the status to %v", got.Attributes["status"])
	}
	m.fail(w.reader, "POST", "/workspaces/"+ws+"/configuration-versions", nil, 403, "")

	cv, err := c.ConfigurationVersions.Create(ctx, ws, tfe.ConfigurationVersionCreateOptions{AutoQueueRuns: tfePtr(false)})
	if err != nil || cv.Status != tfe.ConfigurationPending || cv.UploadURL == "" || cv.AutoQueueRuns {
		t.Fatalf("Create = %+v, %v", cv, err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`output "x" { value = 1 }`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigurationVersions.Upload(ctx, cv.UploadURL, dir); err != nil {
		t.Fatalf("Upload: %v", err)
	}
	got, err := c.ConfigurationVersions.Read(ctx, cv.ID)
	if err != nil || got.Status != tfe.ConfigurationUploaded || got.UploadURL != "" {
		t.Errorf("Read after upload = %+v, %v", got, err)
	}
	// A second upload replaces the archive, as TFE's upload URL allows.
	if err := c.ConfigurationVersions.UploadTarGzip(ctx, cv.UploadURL, bytes.NewReader(targz(t, map[string]string{"other.tf": "# two"}))); err != nil {
		t.Errorf("second upload: %v", err)
	}
	list, err := c.ConfigurationVersions.List(ctx, ws, nil)
	if err != nil || len(list.Items) != 2 || list.Items[0].ID != cv.ID {
		t.Errorf("List = %+v, %v", list, err)
	}
	archive, err := c.ConfigurationVersions.Download(ctx, cv.ID)
	if err != nil || len(archive) == 0 {
		t.Errorf("Download = %d bytes, %v", len(archive), err)
	}
	if _, err := tfeClient(t, ts, w.outsider).ConfigurationVersions.Read(ctx, cv.ID); err != tfe.ErrResourceNotFound {
		t.Errorf("outsider's Read: %v", err)
	}
}

// A run on a workspace someone else has locked is a 409 that queues
// nothing; the lock's holder may queue one.
func TestMgmtRunOnLockedWorkspace(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	ws := m.workspace(w.owner, "acme", "site", w.appProject, nil).ID
	run := docBody("runs", nil, "workspace", relTo("workspaces", ws))
	m.call(w.manager, "POST", "/workspaces/"+ws+"/actions/lock", nil, 200)
	m.fail(w.owner, "POST", "/runs", run, 409, "", "is locked by")
	if n := len(m.call(w.owner, "GET", "/workspaces/"+ws+"/runs", nil, 200).many(t)); n != 0 {
		t.Errorf("a refused run left %d runs", n)
	}
	m.call(w.manager, "POST", "/runs", run, 201)
}
