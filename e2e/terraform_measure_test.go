//go:build e2e

package e2e

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMeasureTerraformApply reports the time of a no-op `terraform apply`
// against sched (local execution: state read, lock, unlock), p50 of 10.
func TestMeasureTerraformApply(t *testing.T) {
	skipUnlessMeasuring(t)
	bin := terraformBin(t)
	ta := startTLSAgent(t, "acme")
	d := newTerraformDir(t, bin, ta, "acme", "measure")
	d.run("init", "-input=false")
	d.run("apply", "-auto-approve", "-input=false")
	var took []time.Duration
	for range 10 {
		start := time.Now()
		out := d.run("apply", "-auto-approve", "-input=false")
		took = append(took, time.Since(start))
		if !strings.Contains(out, "No changes") {
			t.Fatalf("a no-op apply changed something:\n%s", out)
		}
	}
	slices.Sort(took)
	t.Logf("terraform apply (no-op, local execution, state on sched over HTTPS): p50 %v, min %v, max %v of %d",
		took[len(took)/2], took[0], took[len(took)-1], len(took))
}

// TestMeasureTerraformRemoteApply reports the time of a no-op `terraform
// apply` in remote execution (the plan runs as a job on the agent's
// client; no changes, so no apply job) against the same in local
// execution, on one -dev agent over HTTPS, interleaved, p50 of 10 each.
func TestMeasureTerraformRemoteApply(t *testing.T) {
	skipUnlessMeasuring(t)
	bin := terraformBin(t)
	ta := startRemoteRuns(t, bin, "acme")
	local := newTerraformDir(t, bin, ta, "acme", "measure-local")
	remote := newTerraformDir(t, bin, ta, "acme", "measure-remote")
	local.run("init", "-input=false")
	remote.run("init", "-input=false")
	body := `{"data":{"type":"workspaces","attributes":{"execution-mode":"local"}}}`
	if code, out := ta.do(t, "PATCH", "/api/v2/organizations/acme/workspaces/measure-local", body); code != 200 {
		t.Fatalf("local execution: %d %s", code, out)
	}
	local.run("apply", "-auto-approve", "-input=false")
	remote.run("apply", "-auto-approve", "-input=false")
	var tookLocal, tookRemote []time.Duration
	for range 10 {
		for _, c := range []struct {
			d    *terraformDir
			took *[]time.Duration
		}{{local, &tookLocal}, {remote, &tookRemote}} {
			start := time.Now()
			out := c.d.run("apply", "-auto-approve", "-input=false")
			*c.took = append(*c.took, time.Since(start))
			if !strings.Contains(out, "No changes") {
				t.Fatalf("a no-op apply changed something:\n%s", out)
			}
		}
	}
	slices.Sort(tookLocal)
	slices.Sort(tookRemote)
	p50l, p50r := tookLocal[len(tookLocal)/2], tookRemote[len(tookRemote)/2]
	t.Logf("terraform apply (no-op) over HTTPS, interleaved: local execution p50 %v (min %v, max %v); remote execution (plan as a job) p50 %v (min %v, max %v); remote/local %.2f, of %d each",
		p50l, tookLocal[0], tookLocal[len(tookLocal)-1], p50r, tookRemote[0], tookRemote[len(tookRemote)-1], p50r.Seconds()/p50l.Seconds(), len(tookLocal))
}

// TestMeasureStateThroughput reports the upload (state version create with
// the state in base64) and download (hosted-state-download-url) rates of a
// 10 MB state through the HTTPS API of one server.
func TestMeasureStateThroughput(t *testing.T) {
	skipUnlessMeasuring(t)
	ta := startTLSAgent(t, "acme")
	ta.http.Timeout = 5 * time.Minute
	code, body := ta.do(t, "POST", "/api/v2/organizations/acme/workspaces", `{"data":{"type":"workspaces","attributes":{"name":"big"}}}`)
	var ws struct {
		Data struct{ ID string } `json:"data"`
	}
	if code != 201 || json.Unmarshal(body, &ws) != nil {
		t.Fatalf("workspace: %d %s", code, body)
	}
	if code, body := ta.do(t, "POST", "/api/v2/workspaces/"+ws.Data.ID+"/actions/lock", ""); code != 200 {
		t.Fatalf("lock: %d %s", code, body)
	}
	const size = 10 << 20
	var upload, download []time.Duration
	for serial := 1; serial <= 5; serial++ {
		pad := strings.Repeat(fmt.Sprintf("%d", serial%10), size-200)
		st := fmt.Appendf(nil, `{"version":4,"serial":%d,"lineage":"big","outputs":{},"resources":[{"mode":"managed","type":"terraform_data","name":"pad",`+
			`"provider":"provider[\"terraform.io/builtin/terraform\"]","instances":[{"schema_version":0,"attributes":{"input":%q}}]}]}`, serial, pad)
		sum := md5.Sum(st)
		doc := fmt.Sprintf(`{"data":{"type":"state-versions","attributes":{"serial":%d,"lineage":"big","md5":%q,"state":%q}}}`,
			serial, hex.EncodeToString(sum[:]), base64.StdEncoding.EncodeToString(st))
		start := time.Now()
		code, body := ta.do(t, "POST", "/api/v2/workspaces/"+ws.Data.ID+"/state-versions", doc)
		upload = append(upload, time.Since(start))
		var sv struct {
			Data struct {
				Attributes struct {
					Download string `json:"hosted-state-download-url"`
				} `json:"attributes"`
			} `json:"data"`
		}
		if code != 201 || json.Unmarshal(body, &sv) != nil {
			t.Fatalf("upload %d: %d %.300s", serial, code, body)
		}
		start = time.Now()
		code, got := ta.do(t, "GET", strings.TrimPrefix(sv.Data.Attributes.Download, "https://"+ta.host), "")
		download = append(download, time.Since(start))
		if code != 200 || !bytes.Equal(got, st) {
			t.Fatalf("download %d: %d, %d bytes", serial, code, len(got))
		}
	}
	slices.Sort(upload)
	slices.Sort(download)
	mb := float64(size) / 1e6
	t.Logf("10 MB state: upload p50 %v (%.1f MB/s), download p50 %v (%.1f MB/s), of %d each",
		upload[len(upload)/2], mb/upload[len(upload)/2].Seconds(), download[len(download)/2], mb/download[len(download)/2].Seconds(), len(upload))
}
