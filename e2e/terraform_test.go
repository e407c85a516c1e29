//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
)

// terraformVersion is the Terraform release the e2e drives: MPL-licensed,
// it builds from the Go module proxy.
const terraformVersion = "1.5.7"

// terraformBin finds terraform v1.5.7: $SCHED_E2E_TERRAFORM, or the cache
// .ci/run fills ($HOME/.cache/sched-e2e/bin/terraform); without either it
// builds it into that cache (some minutes), unless SCHED_E2E_NO_BUILD is
// set, when the test is skipped.
func terraformBin(t *testing.T) string {
	t.Helper()
	home, _ := os.UserHomeDir()
	cache := filepath.Join(home, ".cache", "sched-e2e", "bin")
	candidates := []string{os.Getenv("SCHED_E2E_TERRAFORM"), filepath.Join(cache, "terraform")}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		out, err := exec.Command(c, "version").Output()
		if err == nil && strings.HasPrefix(string(out), "Terraform v"+terraformVersion+"\n") {
			return c
		}
	}
	if os.Getenv("SCHED_E2E_NO_BUILD") != "" {
		t.Skip("terraform v" + terraformVersion + " not found and SCHED_E2E_NO_BUILD is set")
	}
	t.Logf("building terraform v%s into %s (a few minutes)", terraformVersion, cache)
	cmd := exec.Command("go", "install", "github.com/hashicorp/terraform@v"+terraformVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+cache, "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build terraform: %v\n%s", err, out)
	}
	return filepath.Join(cache, "terraform")
}

// tlsAgent is one dev-like server agent serving HTTPS with the quick-start
// CA, and what a Terraform user needs to reach it.
type tlsAgent struct {
	*agent
	pki   *clusterPKI
	host  string // localhost:port, Terraform's hostname
	token string // the bootstrap (management) token
	http  *http.Client
}

// startTLSAgent starts a server agent whose HTTP API is HTTPS without
// client certificates, bootstraps ACLs and creates organization org, owned
// by the bootstrap user, with local execution as its default (Terraform
// runs operations itself and keeps its state on sched).
func startTLSAgent(t *testing.T, org string) *tlsAgent {
	t.Helper()
	ta := startTLSAgentMode(t, org, false)
	body := `{"data":{"type":"organizations","attributes":{"default-execution-mode":"local"}}}`
	if code, out := ta.do(t, "PATCH", "/api/v2/organizations/"+org, body); code != 200 {
		t.Fatalf("organization's execution mode: %d %s", code, out)
	}
	return ta
}

// startTLSAgentMode is startTLSAgent; with dev, the agent runs -dev (a
// server and a client with raw_exec, which runs the runs' jobs) and the
// organization keeps remote execution.
func startTLSAgentMode(t *testing.T, org string, dev bool) *tlsAgent {
	t.Helper()
	pki := newClusterPKI(t)
	a := newServer(t)
	args := []string{"agent", "-config", a.config}
	if dev {
		a = newDevAgent(t)
		args = []string{"agent", "-dev", "-config", a.config}
	}
	f, err := os.OpenFile(a.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `
tls {
  http      = true
  ca_file   = %q
  cert_file = %q
  key_file  = %q
}
`, pki.ca, pki.serverCert, pki.serverKey)
	f.Close()
	pem, err := os.ReadFile(pki.ca)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	ta := &tlsAgent{agent: a, pki: pki, host: fmt.Sprintf("localhost:%d", a.httpPort),
		http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}

	a.out = &testutil.SyncBuffer{}
	a.cmd = exec.Command(schedBin, args...)
	a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a.done = make(chan struct{})
	go func() { a.cmd.Wait(); close(a.done) }()
	t.Cleanup(a.kill)
	c, err := api.NewClient(api.Config{Address: "https://" + ta.host, TLS: api.TLSConfig{CACert: pki.ca}})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitForErr(t, 60*time.Second, "the HTTPS agent to answer a consistent read", func() error {
		select {
		case <-a.done:
			t.Fatalf("agent exited during start:\n%s", a.out.String())
		default:
		}
		_, _, err := c.Jobs().List(context.Background(), nil)
		return err
	})
	tok, _, err := c.ACLTokens().Bootstrap(context.Background(), "", nil)
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	ta.token = tok.SecretID
	body := fmt.Sprintf(`{"data":{"type":"organizations","attributes":{"name":%q,"email":"ops@example.com"}}}`, org)
	if code, out := ta.do(t, "POST", "/api/v2/organizations", body); code != 201 {
		t.Fatalf("create organization: %d %s", code, out)
	}
	return ta
}

// do sends an API request with the bootstrap token.
func (ta *tlsAgent) do(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	// The management API limits each token to 30 requests a second, and
	// terraform's own requests under the same token count: a 429 is
	// retried after the pause the server names, as go-tfe does.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, "https://"+ta.host+path, r)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+ta.token)
		req.Header.Set("Content-Type", "application/vnd.api+json")
		resp, err := ta.http.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			return resp.StatusCode, out
		}
		pause := 50 * time.Millisecond
		if v, err := strconv.ParseFloat(resp.Header.Get("X-RateLimit-Reset"), 64); err == nil && v >= 0 && v < 5 {
			pause = time.Duration(v*float64(time.Second)) + 10*time.Millisecond
		}
		time.Sleep(pause) // the pause the server asked for before a retry
	}
}

// terraformDir is a Terraform working directory whose cloud block points
// at ta: the CA trusted through SSL_CERT_FILE, the token in a CLI
// configuration file's credentials block.
type terraformDir struct {
	t   *testing.T
	bin string
	dir string
	env []string
}

func newTerraformDir(t *testing.T, bin string, ta *tlsAgent, org, workspace string) *terraformDir {
	t.Helper()
	dir, home := t.TempDir(), t.TempDir()
	rc := filepath.Join(home, "terraform.rc")
	if err := os.WriteFile(rc, fmt.Appendf(nil, "credentials %q {\n  token = %q\n}\n", ta.host, ta.token), 0o600); err != nil {
		t.Fatal(err)
	}
	main := fmt.Sprintf(`
terraform {
  cloud {
    hostname     = %q
    organization = %q
    workspaces {
      name = %q
    }
  }
}

variable "message" {
  type    = string
  default = "one"
}

resource "terraform_data" "note" {
  input = var.message
}

output "message" {
  value = terraform_data.note.output
}

output "secret" {
  value     = "s3cret-${var.message}"
  sensitive = true
}
`, ta.host, org, workspace)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + ta.pki.ca,
		"TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TF_INPUT=0"}
	return &terraformDir{t: t, bin: bin, dir: dir, env: env}
}

// run runs terraform with args and returns its standard output; a failure
// fails the test with both streams.
func (d *terraformDir) run(args ...string) string {
	d.t.Helper()
	out, err := d.try(args...)
	if err != nil {
		d.t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (d *terraformDir) try(args ...string) (string, error) {
	cmd := exec.Command(d.bin, args...)
	cmd.Dir, cmd.Env = d.dir, d.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// TestTerraformCloudBackend drives the real terraform v1.5.7 against sched
// over HTTPS with a cloud block: init creates the workspace, apply writes
// the first state version, state list and a second apply read it back,
// output and state pull show what sched stored.
func TestTerraformCloudBackend(t *testing.T) {
	bin := terraformBin(t)
	ta := startTLSAgent(t, "acme")
	d := newTerraformDir(t, bin, ta, "acme", "e2e")

	d.run("init", "-input=false")
	d.run("apply", "-auto-approve", "-input=false")
	if got := strings.Fields(d.run("state", "list")); !slices.Equal(got, []string{"terraform_data.note"}) {
		t.Errorf("state list = %q", got)
	}
	if got := strings.TrimSpace(d.run("output", "-raw", "message")); got != "one" {
		t.Errorf("output after the first apply = %q", got)
	}
	d.run("apply", "-auto-approve", "-input=false", "-var", "message=two")
	if got := strings.TrimSpace(d.run("output", "-raw", "message")); got != "two" {
		t.Errorf("output after the second apply = %q", got)
	}
	if got := strings.TrimSpace(d.run("output", "-raw", "secret")); got != "s3cret-two" {
		t.Errorf("sensitive output = %q", got)
	}

	var pulled struct {
		Serial  int64                      `json:"serial"`
		Lineage string                     `json:"lineage"`
		Outputs map[string]json.RawMessage `json:"outputs"`
	}
	raw := d.run("state", "pull")
	if err := json.Unmarshal([]byte(raw), &pulled); err != nil || pulled.Lineage == "" || pulled.Serial < 2 {
		t.Fatalf("state pull = %s (%v)", raw, err)
	}

	// What sched holds: the workspace, its current state version (the
	// bytes terraform pulled) and its outputs, the sensitive one hidden.
	code, body := ta.do(t, "GET", "/api/v2/organizations/acme/workspaces/e2e", "")
	var ws struct {
		Data struct {
			ID         string         `json:"id"`
			Attributes map[string]any `json:"attributes"`
		} `json:"data"`
	}
	if code != 200 || json.Unmarshal(body, &ws) != nil || ws.Data.Attributes["locked"] != false {
		t.Fatalf("workspace: %d %s", code, body)
	}
	code, body = ta.do(t, "GET", "/api/v2/workspaces/"+ws.Data.ID+"/current-state-version", "")
	var sv struct {
		Data struct {
			Attributes struct {
				Serial   int64  `json:"serial"`
				Lineage  string `json:"lineage"`
				Download string `json:"hosted-state-download-url"`
			} `json:"attributes"`
		} `json:"data"`
	}
	if code != 200 || json.Unmarshal(body, &sv) != nil {
		t.Fatalf("current state version: %d %s", code, body)
	}
	if sv.Data.Attributes.Serial != pulled.Serial || sv.Data.Attributes.Lineage != pulled.Lineage ||
		!strings.HasPrefix(sv.Data.Attributes.Download, "https://"+ta.host+"/api/v2/state-versions/") {
		t.Errorf("current state version %+v, pulled serial %d lineage %s", sv.Data.Attributes, pulled.Serial, pulled.Lineage)
	}
	code, body = ta.do(t, "GET", strings.TrimPrefix(sv.Data.Attributes.Download, "https://"+ta.host), "")
	if code != 200 || !bytes.Equal(bytes.TrimSpace(body), bytes.TrimSpace([]byte(raw))) {
		t.Errorf("download: %d, %d bytes; state pull gave %d bytes", code, len(body), len(raw))
	}
	code, body = ta.do(t, "GET", "/api/v2/workspaces/"+ws.Data.ID+"/current-state-version-outputs", "")
	if code != 200 || !strings.Contains(string(body), `"value":"two"`) || strings.Contains(string(body), "s3cret") {
		t.Errorf("current outputs: %d %s", code, body)
	}
	code, body = ta.do(t, "GET", "/api/v2/workspaces/"+ws.Data.ID+"/state-versions", "")
	if code != 200 || strings.Count(string(body), `"type":"state-versions"`) < 2 {
		t.Errorf("state versions: %d %s", code, body)
	}
}
