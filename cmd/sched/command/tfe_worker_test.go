package command

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/schedhq/sched/state/mgmt"
)

// fakeTerraform stands in for terraform: it logs its arguments, writes a
// plan file on plan, prints a plan's JSON on show, and on apply writes
// the next serial of the state file it finds.
const fakeTerraform = `#!/bin/sh
echo "fake terraform $*" >&2
case "$1" in
plan) grep -q 'message = "two"' zzz_sched_run.auto.tfvars || exit 4
  : > sched.tfplan; echo "Plan: 1 to add, 0 to change, 0 to destroy." ;;
show) echo '{"resource_changes":[{"change":{"actions":["create"]}},{"change":{"actions":["delete","create"]}},{"change":{"actions":["no-op"]}}],"output_changes":{}}' ;;
apply) test -f zzz_sched_backend_override.tf || exit 3
  printf '{"version":4,"serial":2,"lineage":"lin","outputs":{}}' > terraform.tfstate
  echo "Apply complete! Resources: 2 added, 0 changed, 1 destroyed." ;;
esac
`

// fakeRunAPI answers a worker's calls for one run, recording what it got.
type fakeRunAPI struct {
	mu      sync.Mutex
	archive []byte
	state   []byte
	log     bytes.Buffer
	result  *mgmt.PlanResult
	saved   []byte
	binary  []byte
	fetches int
}

func (f *fakeRunAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == "/bin/terraform" {
		f.fetches++
		w.Write(f.binary)
		return
	}
	if r.Header.Get(mgmt.WorkerSecretHeader) != "s3cret" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	switch endpoint := strings.TrimPrefix(r.URL.Path, "/api/v2/runs/run-1/worker/"); {
	case endpoint == "configuration":
		w.Write(f.archive)
	case endpoint == "variables":
		w.Write([]byte(`[{"Key":"message","Value":"\"two\""}]`))
	case endpoint == "state" && r.Method == http.MethodGet:
		if f.state == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Write(f.state)
	case endpoint == "state" && r.Method == http.MethodPut:
		f.saved = body
		w.WriteHeader(http.StatusCreated)
	case endpoint == "log":
		f.log.Write(body)
		w.WriteHeader(http.StatusNoContent)
	case endpoint == "result":
		f.result = new(mgmt.PlanResult)
		json.Unmarshal(body, f.result)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func testArchive(t *testing.T, entries map[string]string, link map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range entries {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	for name, target := range link {
		tw.WriteHeader(&tar.Header{Name: name, Linkname: target, Typeflag: tar.TypeSymlink})
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func runWorker(t *testing.T, api *fakeRunAPI, phase, cache string) (*httptest.Server, string) {
	t.Helper()
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	sum := sha256.Sum256(api.binary)
	env := map[string]string{
		mgmt.WorkerEnvAddress: ts.URL, mgmt.WorkerEnvRun: "run-1", mgmt.WorkerEnvPhase: phase, mgmt.WorkerEnvSecret: "s3cret",
		mgmt.WorkerEnvTerraformURL: ts.URL + "/bin/terraform", mgmt.WorkerEnvTerraformSHA: hex.EncodeToString(sum[:]),
		mgmt.WorkerEnvTerraformVersion: "1.5.7", "PATH": os.Getenv("PATH"),
	}
	var out bytes.Buffer
	w, err := newTFEWorker(context.Background(), func(k string) string { return env[k] }, &out, filepath.Join(t.TempDir(), "tfe"), cache)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.work(); err != nil {
		t.Fatalf("work: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "s3cret") {
		t.Error("the worker printed its secret")
	}
	return ts, out.String()
}

// TestTFEWorkerPlanAndApply runs the worker as a plan and as an apply
// against a fake API with a stand-in terraform: the binary is fetched
// once (SHA-256 checked) and cached, the plan's summary counts a
// replacement as an addition and a destruction, the apply saves the new
// state, and the log reaches the run.
func TestTFEWorkerPlanAndApply(t *testing.T) {
	api := &fakeRunAPI{archive: testArchive(t, map[string]string{"main.tf": "# config", "mod/x.tf": "# x"}, nil),
		state: []byte(`{"version":4,"serial":1,"lineage":"lin","outputs":{}}`), binary: []byte(fakeTerraform)}
	cache := t.TempDir()
	_, out := runWorker(t, api, mgmt.PhasePlan, cache)
	if api.result == nil || !api.result.OK || api.result.Additions != 2 || api.result.Destructions != 1 || !api.result.HasChanges {
		t.Fatalf("plan result = %+v\n%s", api.result, out)
	}
	for _, want := range []string{"fake terraform init -input=false -no-color -reconfigure", "fake terraform plan", "Plan: 1 to add"} {
		if !strings.Contains(api.log.String(), want) {
			t.Errorf("the run's log lacks %q:\n%s", want, api.log.String())
		}
	}
	api.result, api.log = nil, bytes.Buffer{}
	runWorker(t, api, mgmt.PhaseApply, cache)
	if api.result == nil || !api.result.OK || api.result.Additions != 2 || api.result.Destructions != 1 {
		t.Errorf("apply result = %+v\n%s", api.result, api.log.String())
	}
	if !bytes.Contains(api.saved, []byte(`"serial":2`)) {
		t.Errorf("saved state = %s", api.saved)
	}
	if api.fetches != 1 {
		t.Errorf("terraform fetched %d times, want once (then cached)", api.fetches)
	}
}

// TestTFEWorkerRefusesBadInput: a binary whose SHA-256 differs, and a
// configuration with a path or link that escapes, each end in a failed
// result (the run errors) and write nothing outside the work directory.
func TestTFEWorkerRefusesBadInput(t *testing.T) {
	api := &fakeRunAPI{archive: testArchive(t, map[string]string{"main.tf": "#"}, nil), binary: []byte(fakeTerraform)}
	ts := httptest.NewServer(api)
	defer ts.Close()
	env := map[string]string{mgmt.WorkerEnvAddress: ts.URL, mgmt.WorkerEnvRun: "run-1", mgmt.WorkerEnvPhase: "plan", mgmt.WorkerEnvSecret: "s3cret",
		mgmt.WorkerEnvTerraformURL: ts.URL + "/bin/terraform", mgmt.WorkerEnvTerraformSHA: strings.Repeat("ab", 32), "PATH": os.Getenv("PATH")}
	w, err := newTFEWorker(context.Background(), func(k string) string { return env[k] }, io.Discard, filepath.Join(t.TempDir(), "tfe"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.work(); err != nil {
		t.Fatal(err)
	}
	if api.result == nil || api.result.OK || !strings.Contains(api.result.Error, "not the tool version's") {
		t.Errorf("a binary with another SHA-256: %+v", api.result)
	}

	for name, archive := range map[string][]byte{
		"dot-dot":     testArchive(t, map[string]string{"../escape.tf": "#"}, nil),
		"absolute":    testArchive(t, map[string]string{"/tmp/escape.tf": "#"}, nil),
		"link out":    testArchive(t, nil, map[string]string{"evil": "../../etc"}),
		"link to abs": testArchive(t, nil, map[string]string{"evil": "/etc/passwd"}),
	} {
		root := t.TempDir()
		err := unpackConfiguration(archive, filepath.Join(root, "work"))
		if err == nil {
			t.Errorf("%s: unpacked", name)
		}
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if e.Name() != "work" {
				t.Errorf("%s: wrote %s beside the work directory", name, e.Name())
			}
		}
	}
	if _, err := newTFEWorker(context.Background(), func(string) string { return "" }, io.Discard, t.TempDir(), t.TempDir()); err == nil ||
		!strings.Contains(err.Error(), mgmt.WorkerEnvSecret) {
		t.Errorf("an empty environment: %v", err)
	}
}

func TestPlanAndApplySummaries(t *testing.T) {
	res, err := planSummary([]byte(`{"resource_changes":[{"change":{"actions":["no-op"]}}],"output_changes":{"o":{"actions":["update"]}}}`))
	if err != nil || !res.HasChanges || res.Additions+res.Changes+res.Destructions != 0 {
		t.Errorf("output-only change: %+v %v", res, err)
	}
	res, _ = planSummary([]byte(`{"resource_changes":[{"change":{"actions":["no-op"]}}]}`))
	if res.HasChanges {
		t.Errorf("no-op plan has changes: %+v", res)
	}
	if _, err := planSummary([]byte("not json")); err == nil {
		t.Error("a plan that is not JSON was read")
	}
	got := applySummary([]byte("...\nApply complete! Resources: 1 imported, 2 added, 3 changed, 4 destroyed.\n"))
	if got.Imports != 1 || got.Additions != 2 || got.Changes != 3 || got.Destructions != 4 {
		t.Errorf("apply summary = %+v", got)
	}
}
