package command

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schedhq/sched/state/mgmt"
)

// `sched tfe-worker` is the task of a Terraform run's plan or apply job
// (docs/terraform.md, package agent/runexec). It is started by the
// raw_exec driver with its run in the environment (mgmt.WorkerEnv*), and:
//
//  1. finds the terraform binary of the run's version: cached under
//     /var/tmp/sched-tfe-tools-<uid> by SHA-256, else fetched from the tool
//     version's URL (a binary, or a zip holding one), checked against the
//     SHA-256, and cached;
//  2. fetches the configuration archive, the run's variables and the
//     current state with the run's secret, unpacks the archive in the task
//     directory (refusing entries that escape it), writes the variables to
//     a .auto.tfvars file, and adds an override file that replaces
//     the configuration's cloud or backend block by a local backend, so
//     terraform reads and writes the state file the worker handed it;
//  3. runs terraform init and plan (and show -json, for the summary) or
//     apply, its output going both to the task's stdout and, in chunks,
//     to the run's log;
//  4. saves the new state (apply) and reports the phase's result.
//
// The secret is never printed. The exit code is 0 once a result was
// reported, failed or not (the run says how it went); 1 when the worker
// could not report, which the executor sees as a job that ended without a
// result.

// tfeWorker is one run phase's worker.
type tfeWorker struct {
	ctx     context.Context
	out     io.Writer
	getenv  func(string) string
	client  *http.Client
	address string
	run     string
	phase   string
	secret  string
	// dir is where the configuration is unpacked and terraform runs.
	dir string
	// cacheDir keeps terraform binaries by SHA-256.
	cacheDir string

	logMu  sync.Mutex
	logBuf []byte
	// sendMu serializes sending the log; logSent is how much of logBuf
	// the run's log holds.
	sendMu  sync.Mutex
	logSent int
}

// tfeWorker runs `sched tfe-worker`.
func (c *cli) tfeWorker(args []string) int {
	if len(args) > 0 {
		fmt.Fprintln(c.stderr, "usage: sched tfe-worker (takes its run from the environment; started by a run's job)")
		return 1
	}
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(c.stderr, "tfe-worker:", err)
		return 1
	}
	w, err := newTFEWorker(c.ctx, c.getenv, c.stdout, filepath.Join(wd, "tfe"), toolsCacheDir())
	if err != nil {
		fmt.Fprintln(c.stderr, "tfe-worker:", err)
		return 1
	}
	if err := w.work(); err != nil {
		fmt.Fprintln(c.stderr, "tfe-worker:", err)
		return 1
	}
	return 0
}

// toolsCacheDir is where workers keep terraform binaries between tasks:
// not the task's own temporary directory (TMPDIR is the task's, and goes
// with it), but /var/tmp, one directory per user (0700), so a task of
// another workload user can put nothing in it.
func toolsCacheDir() string {
	base := "/var/tmp"
	if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
		base = os.TempDir()
	}
	return filepath.Join(base, "sched-tfe-tools-"+strconv.Itoa(os.Getuid()))
}

// newTFEWorker reads the worker's environment.
func newTFEWorker(ctx context.Context, getenv func(string) string, out io.Writer, dir, cacheDir string) (*tfeWorker, error) {
	w := &tfeWorker{ctx: ctx, out: out, getenv: getenv, dir: dir, cacheDir: cacheDir,
		address: strings.TrimSuffix(getenv(mgmt.WorkerEnvAddress), "/"),
		run:     getenv(mgmt.WorkerEnvRun), phase: getenv(mgmt.WorkerEnvPhase), secret: getenv(mgmt.WorkerEnvSecret)}
	var missing []string
	for _, kv := range [][2]string{{mgmt.WorkerEnvAddress, w.address}, {mgmt.WorkerEnvRun, w.run}, {mgmt.WorkerEnvSecret, w.secret},
		{mgmt.WorkerEnvTerraformURL, getenv(mgmt.WorkerEnvTerraformURL)}} {
		if kv[1] == "" {
			missing = append(missing, kv[0])
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing from the environment: %s", strings.Join(missing, ", "))
	}
	if w.phase != mgmt.PhasePlan && w.phase != mgmt.PhaseApply {
		return nil, fmt.Errorf("%s is %q, not plan or apply", mgmt.WorkerEnvPhase, w.phase)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if pem := getenv(mgmt.WorkerEnvCACert); pem != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(pem)) {
			return nil, fmt.Errorf("%s holds no PEM certificate", mgmt.WorkerEnvCACert)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	w.client = &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	return w, nil
}

// work carries out the phase and reports it.
func (w *tfeWorker) work() error {
	res, err := w.execute()
	if err != nil {
		w.logf("\nError: %v\n", err)
		res = mgmt.PlanResult{OK: false, Error: err.Error()}
	}
	if err := w.flushLog(); err != nil {
		fmt.Fprintln(w.out, "tfe-worker: send the log:", err)
	}
	body, _ := json.Marshal(res)
	_, err = w.call(http.MethodPost, "result?phase="+w.phase, body)
	return err
}

// execute runs terraform for the phase.
func (w *tfeWorker) execute() (mgmt.PlanResult, error) {
	stop := w.streamLog()
	defer stop()
	tf, err := w.terraform()
	if err != nil {
		return mgmt.PlanResult{}, err
	}
	archive, err := w.call(http.MethodGet, "configuration", nil)
	if err != nil {
		return mgmt.PlanResult{}, fmt.Errorf("fetch the configuration: %w", err)
	}
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return mgmt.PlanResult{}, err
	}
	if err := unpackConfiguration(archive, w.dir); err != nil {
		return mgmt.PlanResult{}, fmt.Errorf("unpack the configuration: %w", err)
	}
	if err := os.WriteFile(filepath.Join(w.dir, "zzz_sched_backend_override.tf"), []byte(localBackendOverride), 0o600); err != nil {
		return mgmt.PlanResult{}, err
	}
	if err := w.writeVariables(); err != nil {
		return mgmt.PlanResult{}, err
	}
	st, err := w.call(http.MethodGet, "state", nil)
	if err != nil {
		return mgmt.PlanResult{}, fmt.Errorf("fetch the state: %w", err)
	}
	statePath := filepath.Join(w.dir, "terraform.tfstate")
	if len(st) > 0 {
		if err := os.WriteFile(statePath, st, 0o600); err != nil {
			return mgmt.PlanResult{}, err
		}
	}
	if err := w.terraformRun(tf, "init", "-input=false", "-no-color", "-reconfigure"); err != nil {
		return mgmt.PlanResult{}, err
	}
	var flags []string
	if w.getenv(mgmt.WorkerEnvDestroy) == "1" {
		flags = append(flags, "-destroy")
	}
	if w.getenv(mgmt.WorkerEnvNoRefresh) == "1" {
		flags = append(flags, "-refresh=false")
	}
	if w.phase == mgmt.PhasePlan {
		if err := w.terraformRun(tf, append([]string{"plan", "-input=false", "-no-color", "-out=sched.tfplan"}, flags...)...); err != nil {
			return mgmt.PlanResult{}, err
		}
		js, err := w.terraformOutput(tf, "show", "-json", "sched.tfplan")
		if err != nil {
			return mgmt.PlanResult{}, err
		}
		return planSummary(js)
	}
	before := w.logLen()
	if err := w.terraformRun(tf, append([]string{"apply", "-input=false", "-no-color", "-auto-approve"}, flags...)...); err != nil {
		return mgmt.PlanResult{}, err
	}
	newState, err := os.ReadFile(statePath)
	if err != nil {
		return mgmt.PlanResult{}, fmt.Errorf("read the new state: %w", err)
	}
	if !bytes.Equal(newState, st) {
		if _, err := w.call(http.MethodPut, "state", newState); err != nil {
			return mgmt.PlanResult{}, fmt.Errorf("save the new state: %w", err)
		}
	}
	return applySummary(w.logSince(before)), nil
}

// writeVariables writes the run's variables (HCL expressions, their
// names checked by the server) to a .auto.tfvars file of the
// configuration, which terraform reads as it reads -var.
func (w *tfeWorker) writeVariables() error {
	body, err := w.call(http.MethodGet, "variables", nil)
	if err != nil {
		return fmt.Errorf("fetch the run's variables: %w", err)
	}
	var vars []mgmt.RunVariable
	if err := json.Unmarshal(body, &vars); err != nil {
		return fmt.Errorf("the run's variables: %w", err)
	}
	if len(vars) == 0 {
		return nil
	}
	var b strings.Builder
	for _, v := range vars {
		fmt.Fprintf(&b, "%s = %s\n", v.Key, v.Value)
	}
	return os.WriteFile(filepath.Join(w.dir, "zzz_sched_run.auto.tfvars"), []byte(b.String()), 0o600)
}

// localBackendOverride replaces the configuration's cloud or backend
// block: an override file's backend block wins over both.
const localBackendOverride = `terraform {
  backend "local" {}
}
`

// terraformRun runs terraform in the work directory, its output logged.
func (w *tfeWorker) terraformRun(tf string, args ...string) error {
	cmd := w.command(tf, args...)
	lw := logWriter{w}
	cmd.Stdout, cmd.Stderr = lw, lw
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("terraform %s: %w", args[0], err)
	}
	return nil
}

// terraformOutput runs terraform and returns its stdout (stderr logged).
func (w *tfeWorker) terraformOutput(tf string, args ...string) ([]byte, error) {
	cmd := w.command(tf, args...)
	cmd.Stderr = logWriter{w}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("terraform %s: %w", args[0], err)
	}
	return out, nil
}

func (w *tfeWorker) command(tf string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(w.ctx, tf, args...)
	cmd.Dir = w.dir
	home := w.getenv("HOME")
	if home == "" {
		home = w.dir
	}
	// Only what terraform needs: none of the worker's own environment
	// (its run secret) reaches the configuration.
	cmd.Env = []string{"HOME=" + home, "PATH=" + w.getenv("PATH"), "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1"}
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// call sends a request to one of the run's worker endpoints and returns
// the answer's body; a 204 is an empty body. Transient failures (no
// answer, 5xx, 429) are retried a few times.
func (w *tfeWorker) call(method, endpoint string, body []byte) ([]byte, error) {
	var last error
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			select {
			case <-w.ctx.Done():
				return nil, w.ctx.Err()
			case <-time.After(time.Duration(attempt) * 300 * time.Millisecond):
			}
		}
		req, err := http.NewRequestWithContext(w.ctx, method, w.address+mgmt.WorkerPath(w.run, endpoint), bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set(mgmt.WorkerSecretHeader, w.secret)
		resp, err := w.client.Do(req)
		if err != nil {
			last = err
			continue
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		switch {
		case err != nil:
			last = err
		case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
			last = fmt.Errorf("%s %s: %s", method, endpoint, resp.Status)
		case resp.StatusCode >= 300:
			return nil, fmt.Errorf("%s %s: %s: %s", method, endpoint, resp.Status, bytes.TrimSpace(data))
		default:
			return data, nil
		}
	}
	return nil, last
}

// logWriter tees terraform's output to the task's stdout and the run's
// log.
type logWriter struct{ w *tfeWorker }

func (l logWriter) Write(p []byte) (int, error) {
	l.w.logMu.Lock()
	defer l.w.logMu.Unlock()
	_, _ = l.w.out.Write(p)
	l.w.logBuf = append(l.w.logBuf, p...)
	return len(p), nil
}

func (w *tfeWorker) logf(format string, args ...any) {
	_, _ = logWriter{w}.Write([]byte(fmt.Sprintf(format, args...)))
}

// logLen is the length of the output so far.
func (w *tfeWorker) logLen() int {
	w.logMu.Lock()
	defer w.logMu.Unlock()
	return len(w.logBuf)
}

// logSince is the output from byte n on.
func (w *tfeWorker) logSince(n int) []byte {
	w.logMu.Lock()
	defer w.logMu.Unlock()
	return append([]byte(nil), w.logBuf[n:]...)
}

// streamLog sends the log every half second until stopped.
func (w *tfeWorker) streamLog() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = w.flushLog()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// flushLog sends what the run's log does not hold yet, in chunks.
func (w *tfeWorker) flushLog() error {
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	for {
		w.logMu.Lock()
		chunk := w.logBuf[w.logSent:min(len(w.logBuf), w.logSent+mgmt.MaxRunLogChunk)]
		w.logMu.Unlock()
		if len(chunk) == 0 {
			return nil
		}
		if _, err := w.call(http.MethodPost, "log?phase="+w.phase, chunk); err != nil {
			return err
		}
		w.logSent += len(chunk)
	}
}

// terraform returns the path of the run's terraform binary, fetching it
// into the cache when it is not there.
func (w *tfeWorker) terraform() (string, error) {
	url, sum := w.getenv(mgmt.WorkerEnvTerraformURL), strings.ToLower(w.getenv(mgmt.WorkerEnvTerraformSHA))
	key := sum
	if key == "" {
		h := sha256.Sum256([]byte(url))
		key = "url-" + hex.EncodeToString(h[:8])
	}
	if strings.ContainsAny(key, `/\.`) {
		return "", fmt.Errorf("%s %q is not a SHA-256", mgmt.WorkerEnvTerraformSHA, sum)
	}
	path := filepath.Join(w.cacheDir, key, "terraform")
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		return path, nil
	}
	w.logf("Fetching terraform %s from %s\n", w.getenv(mgmt.WorkerEnvTerraformVersion), url)
	req, err := http.NewRequestWithContext(w.ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("fetch terraform: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("fetch terraform from %s: %s", url, resp.Status)
	}
	const maxBinary = 512 << 20
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBinary+1))
	if err != nil {
		return "", fmt.Errorf("fetch terraform: %w", err)
	}
	if len(data) > maxBinary {
		return "", fmt.Errorf("terraform from %s is over %d bytes", url, maxBinary)
	}
	if sum != "" {
		got := sha256.Sum256(data)
		if hex.EncodeToString(got[:]) != sum {
			return "", fmt.Errorf("terraform from %s has SHA-256 %x, not the tool version's %s", url, got, sum)
		}
	}
	if bytes.HasPrefix(data, []byte("PK\x03\x04")) {
		if data, err = unzipTerraform(data); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(w.cacheDir, 0o700); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".terraform-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	// Rename is atomic: two workers fetching at once both end with a
	// whole binary.
	return path, os.Rename(tmp.Name(), path)
}

// unzipTerraform returns the terraform binary of a release zip.
func unzipTerraform(data []byte) ([]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("terraform zip: %w", err)
	}
	for _, f := range zr.File {
		if f.Name != "terraform" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(io.LimitReader(rc, 1<<30))
	}
	return nil, errors.New("terraform zip: no terraform binary in it")
}

// Bounds of an unpacked configuration (the server checked the archive on
// upload; the worker checks again, as it writes to disk).
const (
	maxConfigEntries = 10000
	maxConfigBytes   = 256 << 20
)

// unpackConfiguration unpacks a gzipped tar into dir, refusing entries
// whose paths are absolute or escape dir, and links that point out of it.
func unpackConfiguration(archive []byte, dir string) error {
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	entries, total := 0, int64(0)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if entries++; entries > maxConfigEntries {
			return fmt.Errorf("more than %d entries", maxConfigEntries)
		}
		target, err := insideDir(dir, h.Name)
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if total += h.Size; total > maxConfigBytes {
				return fmt.Errorf("more than %d bytes unpacked", maxConfigBytes)
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, os.FileMode(h.Mode)&0o755|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, io.LimitReader(tr, h.Size))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			link := h.Linkname
			if !filepath.IsAbs(link) {
				link = filepath.Join(filepath.Dir(h.Name), link)
			}
			if _, err := insideDir(dir, link); err != nil || filepath.IsAbs(h.Linkname) {
				return fmt.Errorf("%s: a link out of the configuration (%s)", h.Name, h.Linkname)
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: entries of type %q are not taken", h.Name, h.Typeflag)
		}
	}
}

// insideDir resolves an archive path under dir, refusing absolute paths
// and paths that climb out.
func insideDir(dir, name string) (string, error) {
	if name == "" || filepath.IsAbs(name) || strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("%q: absolute paths are not taken", name)
	}
	clean := filepath.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%q: the path leaves the configuration", name)
	}
	return filepath.Join(dir, clean), nil
}

// planJSON is the part of `terraform show -json <plan>` the summary
// reads.
type planJSON struct {
	ResourceChanges []struct {
		Change struct {
			Actions   []string        `json:"actions"`
			Importing json.RawMessage `json:"importing"`
		} `json:"change"`
	} `json:"resource_changes"`
	OutputChanges map[string]struct {
		Actions []string `json:"actions"`
	} `json:"output_changes"`
}

// planSummary counts a plan's changes as TFE's plan resource does: a
// replacement is an addition and a destruction; output changes alone are
// changes too (has-changes), but count no resource.
func planSummary(js []byte) (mgmt.PlanResult, error) {
	var p planJSON
	if err := json.Unmarshal(js, &p); err != nil {
		return mgmt.PlanResult{}, fmt.Errorf("read the plan's JSON: %w", err)
	}
	res := mgmt.PlanResult{OK: true}
	for _, rc := range p.ResourceChanges {
		if len(rc.Change.Importing) > 0 && string(rc.Change.Importing) != "null" {
			res.Imports++
		}
		for _, a := range rc.Change.Actions {
			switch a {
			case "create":
				res.Additions++
			case "update":
				res.Changes++
			case "delete":
				res.Destructions++
			}
		}
	}
	res.HasChanges = res.Additions+res.Changes+res.Destructions+res.Imports > 0
	for _, oc := range p.OutputChanges {
		for _, a := range oc.Actions {
			if a != "no-op" {
				res.HasChanges = true
			}
		}
	}
	return res, nil
}

// applyLine is terraform's closing line of an apply.
var applyLine = regexp.MustCompile(`Resources: (\d+) (?:imported, (\d+) )?added, (\d+) changed, (\d+) destroyed`)

// applySummary reads the counts of an apply's output.
func applySummary(out []byte) mgmt.PlanResult {
	res := mgmt.PlanResult{OK: true}
	m := applyLine.FindSubmatch(out)
	if m == nil {
		return res
	}
	n := func(b []byte) int { v, _ := strconv.Atoi(string(b)); return v }
	if m[2] != nil {
		res.Imports, res.Additions = n(m[1]), n(m[2])
	} else {
		res.Additions = n(m[1])
	}
	res.Changes, res.Destructions = n(m[3]), n(m[4])
	res.HasChanges = res.Additions+res.Changes+res.Destructions+res.Imports > 0
	return res
}
