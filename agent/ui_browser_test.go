package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/schedhq/sched/http/ui"
	"github.com/schedhq/sched/internal/testutil"
)

// These tests drive the web UI (package http/ui) in a real headless
// Chromium against an in-process dev agent. They skip when no chromium is
// installed, except in CI (CI=true), where they fail: .ci/run installs it.

// browser starts one headless Chromium for the test and returns a tab's
// context; uncaught page exceptions fail the test at its end.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed; CI must install it (apt-get install chromium)")
		}
		t.Skip("chromium is not installed")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Run starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var mu sync.Mutex
	var exceptions []string
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleException {
				mu.Lock()
				exceptions = append(exceptions, m.Text+" "+m.URL)
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range exceptions {
			t.Errorf("uncaught exception in the page: %s", e)
		}
	})
	return ctx
}

// page wraps a tab with the steps the scenarios use; every step is bounded.
type page struct {
	t    *testing.T
	ctx  context.Context
	base string
	// shots, when set, is where screenshots are written.
	shots string
}

func (p *page) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("%s: %v\npage:\n%s", what, err, p.text())
	}
}

// text is the page's visible text, for failure messages.
func (p *page) text() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	return s
}

// open navigates the tab to a hash route of the UI.
func (p *page) open(hash string) {
	p.t.Helper()
	p.do("open "+hash, chromedp.Navigate(p.base+"/ui/"+hash))
}

// route changes the hash in the page, which keeps the loaded document.
func (p *page) route(hash string) {
	p.t.Helper()
	p.eval(`location.hash = ` + jsString(hash))
}

// waitJS waits until the expression is truthy.
func (p *page) waitJS(what, expr string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 40*time.Second)
	defer cancel()
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(35*time.Second)))
		// A poll that starts while a navigation replaces the page's
		// JavaScript context loses it: poll again in the new one.
		if err != nil && strings.Contains(err.Error(), "Cannot find context") && ctx.Err() == nil {
			continue
		}
		if err != nil {
			p.t.Fatalf("waiting for %s: %v\npage:\n%s", what, err, p.text())
		}
		return
	}
}

// waitText waits until the element selected by css contains s.
func (p *page) waitText(css, s string) {
	p.t.Helper()
	p.waitJS(fmt.Sprintf("%q in %s", s, css), fmt.Sprintf(`(document.querySelector(%s)||{}).textContent?.includes(%s)`, jsString(css), jsString(s)))
}

func (p *page) eval(expr string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](expr)); err != nil {
		p.t.Fatalf("eval %s: %v", expr, err)
	}
}

func (p *page) count(css string) int {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(css)+`).length`))
	if err != nil {
		p.t.Fatalf("count %s: %v", css, err)
	}
	return n
}

// click clicks the first enabled element css selects, once there is one.
// It clicks from the page's script: live regions re-render between a
// protocol-level lookup and a mouse event.
func (p *page) click(css string) {
	p.t.Helper()
	p.waitJS("to click "+css, `(() => { const el = document.querySelector(`+jsString(css)+`);
		if (!el || el.disabled) return false; el.click(); return true; })()`)
}

func (p *page) fill(css, value string) {
	p.t.Helper()
	p.do("fill "+css, chromedp.SetValue(chromedp.CSS(css), value))
}

// shot writes a screenshot of the page when screenshots were asked for.
func (p *page) shot(name string) {
	p.t.Helper()
	if p.shots == "" {
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(p.shots, name+".png"), b, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// textOfJS is the string value of a JavaScript expression.
func (p *page) textOfJS(expr string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		p.t.Fatalf("%s: %v", expr, err)
	}
	return s
}

// textOf is the text of the element css selects.
func (p *page) textOf(css string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(`+jsString(css)+`).textContent`))
	if err != nil {
		p.t.Fatalf("text of %s: %v", css, err)
	}
	return s
}

// registerHCL registers a job from its HCL through the API.
func registerHCL(t *testing.T, base, secret, src string) {
	t.Helper()
	var job json.RawMessage
	call(t, base, secret, "POST", "/v1/jobs/parse", map[string]any{"JobHCL": src}, &job)
	call(t, base, secret, "POST", "/v1/jobs", map[string]any{"Job": job}, nil)
}

func jsString(s string) string { b, _ := json.Marshal(s); return string(b) }

// call sends a JSON request with a token (both headers: /v1 reads
// X-Sched-Token, /api/v2 Authorization) and decodes a 2xx answer into out.
func call(t *testing.T, base, secret, method, path string, body, out any) {
	t.Helper()
	var payload []byte
	if body != nil {
		payload, _ = json.Marshal(body)
	}
	var code int
	var b []byte
	// /api/v2 limits a token to 30 requests a second; the browser shares
	// the bucket.
	testutil.WaitFor(t, 10*time.Second, "no rate limit on "+path, func() bool {
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(payload))
		req.Header.Set("X-Sched-Token", secret)
		req.Header.Set("Authorization", "Bearer "+secret)
		if strings.HasPrefix(path, "/api/v2") {
			req.Header.Set("Content-Type", "application/vnd.api+json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		code = resp.StatusCode
		b, _ = io.ReadAll(resp.Body)
		return code != http.StatusTooManyRequests
	})
	if code/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

const uiServiceHCL = `job "svc" {
  group "g" {
    network {
      port "http" {}
    }
    service {
      name     = "frontend"
      port     = "http"
      provider = "sched"
    }
    task "t" {
      driver = "mock"
      config {
        run_for = "1h"
      }
      resources {
        cpu    = 10
        memory = 10
      }
    }
  }
}
`

const uiTemplateHCL = `job "tmpl" {
  type = "batch"
  parameterized {
    payload = "optional"
  }
  group "g" {
    task "t" {
      driver = "mock"
      config {
        run_for = "100ms"
      }
      resources {
        cpu    = 10
        memory = 10
      }
    }
  }
}
`

const uiJobHCL = `job "web" {
  datacenters = ["*"]
  group "web" {
    count = 1
    update {
      canary           = 1
      max_parallel     = 1
      min_healthy_time = "100ms"
      healthy_deadline = "20s"
    }
    task "server" {
      driver = "mock"
      config {
        stdout_string = "%s\n"
        stderr_string = "a warning on stderr\n"
      }
      resources {
        cpu    = 10
        memory = 10
      }
    }
  }
}
`

// TestUIInBrowser walks the scenarios in one browser: sign in,
// register a job through the UI's form, watch its allocation turn running
// without a reload, read its logs, promote a canary, create a project and
// grant a team access, and check that a read-only token sees no write
// buttons and gets a clear 403. With SCHED_UI_SCREENSHOTS=1 it also writes
// the screenshots of docs/ui/.
func TestUIInBrowser(t *testing.T) {
	ctx := browser(t)
	a := startDevAgent(t, func(c *Config) { c.ACL.Enabled = true })
	base := "http://" + a.HTTPAddr()
	p := &page{t: t, ctx: ctx, base: base}
	if os.Getenv("SCHED_UI_SCREENSHOTS") == "1" {
		p.shots = filepath.Join("..", "docs", "ui")
		if err := os.MkdirAll(p.shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	var boot struct{ SecretID string }
	call(t, base, "", "POST", "/v1/acl/bootstrap", map[string]any{}, &boot)
	admin := boot.SecretID
	call(t, base, admin, "POST", "/v1/acl/policy/readonly", map[string]any{"Name": "readonly",
		"Rules": `namespace "default" { policy = "read" }`}, nil)
	var ro struct{ SecretID string }
	call(t, base, admin, "POST", "/v1/acl/token", map[string]any{"Name": "viewer", "Type": "client", "Policies": []string{"readonly"}}, &ro)
	call(t, base, admin, "POST", "/api/v2/organizations", map[string]any{"data": map[string]any{"type": "organizations",
		"attributes": map[string]any{"name": "acme", "email": "ops@example.com"}}}, nil)
	call(t, base, admin, "POST", "/api/v2/organizations/acme/teams", map[string]any{"data": map[string]any{"type": "teams",
		"attributes": map[string]any{"name": "developers"}}}, nil)

	// / redirects to the UI, which asks for a token first.
	p.do("open /", chromedp.Navigate(base+"/"))
	p.waitJS("the sign-in page", `location.pathname === "/ui/" && location.hash === "#/signin" && !!document.querySelector("#secret")`)
	p.shot("signin")
	// Anonymous on a page that needs a token: the API's 403, explained.
	// And the keyboard: the first Tab reaches the skip link, Enter on it
	// moves focus to the content.
	p.do("a new document", chromedp.Navigate("about:blank"))
	p.open("#/jobs")
	p.waitText("#jobs .error", "Permission denied")
	p.do("tab", chromedp.KeyEvent("\t"))
	p.waitJS("the skip link focused", `document.activeElement?.classList.contains("skip")`)
	p.do("enter", chromedp.KeyEvent("\r"))
	p.waitJS("the content focused", `document.activeElement?.id === "main" && location.hash === "#/jobs"`)
	p.route("#/signin")
	p.waitJS("the secret field", `!!document.querySelector("#secret")`)
	p.fill("#secret", "not-a-token")
	p.click(`form[data-form=signin] [type=submit]`)
	p.waitText("#signin-error", "Sign-in failed")
	p.fill("#secret", admin)
	p.click(`form[data-form=signin] [type=submit]`)
	p.waitJS("the jobs page", `location.hash.startsWith("#/jobs") && document.querySelector("h1")?.textContent === "Jobs"`)
	p.waitText("#who", "Sign out")
	if got := p.count(`#nav a[href="#/admin/organizations"]`); got != 1 {
		t.Errorf("a management token sees %d Admin links, want 1", got)
	}

	// Register through the form; the job page then follows the allocation
	// from pending to running with blocking queries, in the same document.
	p.click(`a[href^="#/jobs/new"]`)
	p.fill("#spec", fmt.Sprintf(uiJobHCL, "hello from the browser"))
	p.click(`form[data-form=register] [type=submit]`)
	p.waitJS("the job page", `location.hash === "#/job/default/web"`)
	p.eval(`window.__sameDocument = true`)
	p.waitJS("a running allocation", `[...document.querySelectorAll("#job-allocs .badge")].some(b => b.textContent === "running")`)
	p.waitText("#job-summary", "web")
	p.shot("job")

	// The allocation's page streams its stdout.
	p.click(`#job-allocs a[href^="#/alloc/"]`)
	p.waitText("#logs", "hello from the browser")
	p.waitText("#alloc-tasks", "Started")
	// A management token may exec: the terminal panel is offered.
	p.waitJS("the exec panel", `!document.querySelector("#alloc-exec-section").hidden && !!document.querySelector("form[data-form=exec]")`)
	allocHash := p.textOfJS(`location.hash`)
	p.shot("allocation")
	p.click(`form[data-form=logs] input[value=stderr]`)
	p.click(`form[data-form=logs] [type=submit]`)
	p.waitJS("stderr", `document.querySelector("#logs").textContent === "a warning on stderr\n"`)

	// A new version makes a canary; promote it from the job page.
	p.route("#/jobs/new?namespace=default")
	p.waitJS("the job form", `!!document.querySelector("#spec")`)
	p.fill("#spec", fmt.Sprintf(uiJobHCL, "hello from version one"))
	// Plan first: the dry run shows what would change.
	p.click(`[data-action=plan]`)
	p.waitText("#result", "hello from version one")
	p.click(`form[data-form=register] [type=submit]`)
	p.waitJS("the job page", `location.hash === "#/job/default/web"`)
	p.waitJS("the promote button", `!!document.querySelector("[data-action=promote]:not([disabled])")`)
	p.waitText("#job-versions", "hello from version one")
	p.shot("deployment")
	p.click("[data-action=promote]")
	p.waitJS("a successful deployment", `document.querySelector("#job-deployment")?.textContent.includes("successful") && !document.querySelector("[data-action=promote]")`)
	p.waitJS("the document the test started in", `window.__sameDocument === true`)

	// Stop and start again (the confirmation dialog answered yes).
	p.eval(`window.confirm = () => true`)
	p.click("[data-action=stop]")
	p.waitJS("the start button", `!!document.querySelector("[data-action=start]")`)
	p.click("[data-action=start]")
	p.waitJS("the stop button", `!!document.querySelector("[data-action=stop]")`)
	p.waitJS("a running allocation", `[...document.querySelectorAll("#job-allocs .badge")].some(b => b.textContent === "running")`)

	// A canary deployment failed from the page.
	registerHCL(t, base, admin, fmt.Sprintf(uiJobHCL, "hello from a version to fail"))
	p.waitJS("the new canary's deployment", `document.querySelector("#job-deployment")?.textContent.includes("requires manual promotion") && !!document.querySelector("[data-action=fail]")`)
	p.click("[data-action=fail]")
	p.waitJS("a failed deployment", `[...document.querySelectorAll("#job-deployment .badge")].some(b => b.textContent === "failed") && !document.querySelector("[data-action=fail]")`)

	// A job that cannot be placed explains why, on its page and its
	// evaluation's.
	registerHCL(t, base, admin, strings.NewReplacer(`job "web"`, `job "huge"`, "memory = 10", "memory = 100000000").Replace(fmt.Sprintf(uiJobHCL, "x")))
	p.route("#/job/default/huge")
	p.waitText("#job-evals .warn", "Placement failures")
	p.waitText("#job-evals .warn", "exhausted")
	p.click(`#job-evals .warn a[href^="#/eval/"]`)
	p.waitText("#eval-fail", "Resources exhausted: memory")
	p.shot("evaluation")

	// A service's registrations, reached from the catalog.
	registerHCL(t, base, admin, uiServiceHCL)
	p.route("#/services")
	p.click(`#services a[href="#/service/default/frontend"]`)
	p.waitJS("the service's registration", `!!document.querySelector('#service a[href^="#/alloc/"]')`)
	p.click(`#service a[href^="#/alloc/"]`)
	p.waitText("#alloc-addrs", "http")

	// Dispatch a parameterized job and force a periodic one.
	registerHCL(t, base, admin, uiTemplateHCL)
	registerHCL(t, base, admin, strings.NewReplacer(`job "tmpl"`, `job "cron"`, `parameterized {`, "periodic {\n    crons = [\"0 0 1 1 *\"]",
		`payload = "optional"`, `prohibit_overlap = true`).Replace(uiTemplateHCL))
	p.route("#/job/default/tmpl")
	p.eval(`window.prompt = () => "payload from the UI"`)
	p.click("[data-action=dispatch]")
	p.waitJS("the dispatched child's page", `location.hash.startsWith("#/job/default/tmpl%2Fdispatch-") && document.querySelector("#job-info")?.textContent.includes("tmpl")`)
	p.route("#/job/default/cron")
	p.waitText("#job-info", "0 0 1 1 *")
	p.click("[data-action=force]")
	p.waitJS("the forced child", `!!document.querySelector('#job-children a[href^="#/job/default/cron%2Fperiodic-"]')`)

	// The jobs list follows the cluster: a job registered elsewhere
	// appears without a reload.
	p.route("#/jobs?namespace=*")
	p.waitJS("the job in the list", `!!document.querySelector('#jobs a[href="#/job/default/web"]')`)
	registerHCL(t, base, admin, strings.Replace(fmt.Sprintf(uiJobHCL, "api"), `job "web"`, `job "api"`, 1))
	p.waitJS("the job registered through the API", `!!document.querySelector('#jobs a[href="#/job/default/api"]')`)
	p.shot("jobs")
	p.waitJS("the document the test started in", `window.__sameDocument === true`)
	// Pages of one job: next, then back.
	p.route("#/jobs?namespace=*&per_page=1")
	// A job a page: its row (a parent has its children's row under it).
	p.waitJS("one job and a next page", `document.querySelectorAll("#jobs tbody tr:not(.children)").length === 1 && !!document.querySelector("[data-action=next]")`)
	first := p.textOf("#jobs tbody tr td")
	p.click("[data-action=next]")
	p.waitJS("the second page", `document.querySelectorAll("#jobs tbody tr:not(.children)").length === 1 && document.querySelector("#jobs tbody tr td").textContent !== `+jsString(first))
	p.click("[data-action=prev]")
	p.waitJS("the first page again", `document.querySelector("#jobs tbody tr td")?.textContent === `+jsString(first))
	// The filter box takes the API's expressions; a wrong one gets the
	// API's message.
	p.fill("input[name=filter]", `Name == "api"`)
	p.click(`form[data-form=filter] [type=submit]`)
	p.waitJS("the filtered list", `document.querySelectorAll("#jobs tbody tr:not(.children)").length === 1 && document.querySelector("#jobs tbody td")?.textContent === "api"`)
	p.route("#/jobs?filter=" + url.QueryEscape("Name ==="))
	p.waitText("#jobs .error", "filter")
	p.route("#/job/default/nosuch")
	p.waitText("main .error", "Not found")
	p.route("#/jobs?status=pending&namespace=*")
	p.waitJS("only the pending job", `[...document.querySelectorAll("#jobs tbody tr td:first-child")].map(td => td.textContent).join() === "huge"`)
	p.route("#/node/" + a.Client().NodeID())
	p.waitJS("the node's resource bars", `document.querySelectorAll("#node-res meter").length === 3`)
	p.waitJS("the node's allocations", `document.querySelectorAll("#node-allocs tbody tr").length >= 1`)
	// The bars read the nested resource shapes: capacity and use are
	// numbers, not zero.
	p.waitJS("the node's CPU and memory capacity and use", `[...document.querySelectorAll("#node-res meter")].slice(0, 2).every(m => m.max > 0 && m.value > 0)`)
	p.shot("node")
	p.click(`[data-action=eligibility][data-to=ineligible]`)
	p.waitText("#node-info", "ineligible")
	p.click(`[data-action=eligibility][data-to=eligible]`)
	p.waitJS("an eligible node", `!!document.querySelector("[data-action=eligibility][data-to=ineligible]")`)

	// Management: create a project, grant a team write access.
	p.route("#/org/acme")
	p.waitJS("the projects page", `!!document.querySelector("form[data-form=create]")`)
	p.fill("#p-name", "web-tier")
	p.fill("#p-desc", "Front end")
	p.click(`form[data-form=create] [type=submit]`)
	p.waitJS("the project page", `location.hash.startsWith("#/project/prj-") && document.querySelector("h1")?.textContent === "web-tier"`)
	p.eval(`{ const s = document.querySelector("form[data-form=grant] select[name=team]");
		s.value = [...s.options].find(o => o.textContent === "developers").value;
		document.querySelector("form[data-form=grant] select[name=access]").value = "write"; }`)
	p.click(`form[data-form=grant] [type=submit]`)
	p.waitJS("the developers' record", `[...document.querySelectorAll("main tbody tr")].some(tr =>
		tr.cells[0].textContent === "developers" && tr.querySelector("select[data-change=level]").value === "write")`)
	p.waitText("main", "workspace runs: apply")
	p.shot("project")
	// Custom permissions, then removal.
	devRow := `[...document.querySelectorAll("main tbody tr")].find(tr => tr.cells[0].textContent === "developers")`
	p.eval(`{ const s = ` + devRow + `.querySelector("select[data-change=level]"); s.value = "custom"; s.dispatchEvent(new Event("change", {bubbles: true})); }`)
	p.waitJS("the custom permissions form", `!!`+devRow+`?.querySelector("form[data-form=custom]")`)
	p.eval(devRow + `.querySelector("[name='workspace-access.locking']").checked = true`)
	p.eval(devRow + `.querySelector("form[data-form=custom] [type=submit]").click()`)
	p.waitJS("locking granted", `!!`+devRow+`?.textContent.includes("workspace locking: yes")`)
	p.eval(devRow + `.querySelector("[data-action=remove]").click()`)
	p.waitJS("the developers' record gone", `document.querySelector("main h1")?.textContent === "web-tier" && !`+devRow)
	// Edit the project, and move a workspace into it.
	call(t, base, admin, "POST", "/api/v2/organizations/acme/workspaces", map[string]any{"data": map[string]any{"type": "workspaces",
		"attributes": map[string]any{"name": "site"}}}, nil)
	p.route("#/org/acme")
	p.waitJS("the project's link", `(() => { const a = [...document.querySelectorAll('a[href^="#/project/prj-"]')].find(a => a.textContent === "web-tier");
		if (a) a.click(); return !!a; })()`)
	p.waitJS("the move form", `!!document.querySelector("form[data-form=move]")`)
	p.eval(`{ const s = document.querySelector("form[data-form=move] select"); s.value = [...s.options].find(o => o.textContent === "site").value; }`)
	p.click(`form[data-form=move] [type=submit]`)
	p.waitJS("the workspace in the project", `[...document.querySelectorAll("main section:last-of-type tbody td")].some(td => td.textContent === "site")`)
	p.eval(`document.querySelector("main details").open = true`)
	p.fill("#e-desc", "Front end, edited")
	p.click(`form[data-form=edit] [type=submit]`)
	p.waitText("main .kv", "Front end, edited")
	// Search, sort, and delete from the list.
	call(t, base, admin, "POST", "/api/v2/organizations/acme/projects", map[string]any{"data": map[string]any{"type": "projects",
		"attributes": map[string]any{"name": "scratch"}}}, nil)
	names := `[...document.querySelectorAll('main tbody a[href^="#/project/"]')].map(a => a.textContent).join(",")`
	p.route("#/org/acme?sort=-name")
	p.waitJS("projects by name, reversed", names+` === "web-tier,scratch,Default Project"`)
	// The Default Project cannot be deleted: no Delete on its row, one on each other.
	if n := p.count(`main tbody tr [data-action=delete]`); n != 2 {
		t.Errorf("%d Delete buttons on the projects list, want 2 (none for the Default Project)", n)
	}
	p.waitJS("no Delete on the Default Project's row", `![...document.querySelectorAll("main tbody tr")].find(tr => tr.textContent.includes("Default Project"))?.querySelector("[data-action=delete]")`)
	p.fill("input[name=q]", "SCR")
	p.click(`form[data-form=search] [type=submit]`)
	p.waitJS("the search's one match", names+` === "scratch"`)
	p.click(`main tbody [data-action=delete]`)
	p.waitJS("no match left", `!document.querySelector('main tbody') && document.querySelector("main")?.textContent.includes("No projects.")`)
	// A site administrator creates an organization, and deletes a tool
	// version.
	p.route("#/orgs")
	p.fill("#org-name", "beta")
	p.fill("#org-email", "beta@example.com")
	p.click(`form[data-form=org] [type=submit]`)
	p.waitJS("the new organization's projects", `location.hash === "#/org/beta" && document.querySelector("main h1")?.textContent === "Projects"`)
	call(t, base, admin, "POST", "/api/v2/admin/tool-versions", map[string]any{"data": map[string]any{"type": "tool-versions",
		"attributes": map[string]any{"version": "1.9.9", "url": "https://releases.example.com/tool_1.9.9.zip", "sha": strings.Repeat("ab", 32)}}}, nil)
	p.route("#/admin/tool-versions")
	p.waitText("main table", "1.9.9")
	p.click(`main tbody [data-action=delete]`)
	p.waitJS("the version gone", `!document.querySelector("main table")?.textContent.includes("1.9.9")`)
	for _, tab := range []string{"organizations", "workspaces", "tool-versions", "policy-versions"} {
		p.route("#/admin/" + tab)
		p.waitJS("the admin page "+tab, `document.querySelector("nav.tabs a[aria-current]")?.getAttribute("href") === "#/admin/`+tab+`" && !!document.querySelector("main table, main p.muted")`)
	}
	p.route("#/admin/workspaces")
	p.waitText("main table", "site")
	p.shot("admin")
	p.route("#/org/acme")
	p.waitJS("the projects", `document.querySelectorAll('main tbody a[href^="#/project/"]').length === 2`)
	p.shot("projects")

	// A team with read access sees the project and no control.
	var teams, projects struct {
		Data []struct {
			ID         string
			Attributes struct{ Name string }
		}
	}
	call(t, base, admin, "GET", "/api/v2/organizations/acme/teams", nil, &teams)
	call(t, base, admin, "GET", "/api/v2/organizations/acme/projects?q=web-tier", nil, &projects)
	devID := ""
	for _, tm := range teams.Data {
		if tm.Attributes.Name == "developers" {
			devID = tm.ID
		}
	}
	if devID == "" || len(projects.Data) != 1 {
		t.Fatalf("teams %+v, projects %+v", teams, projects)
	}
	prjID := projects.Data[0].ID
	call(t, base, admin, "POST", "/api/v2/team-projects", map[string]any{"data": map[string]any{"type": "team-projects",
		"attributes":    map[string]any{"access": "read"},
		"relationships": map[string]any{"project": map[string]any{"data": map[string]any{"type": "projects", "id": prjID}}, "team": map[string]any{"data": map[string]any{"type": "teams", "id": devID}}}}}, nil)
	var teamTok struct {
		Data struct{ Attributes struct{ Token string } }
	}
	call(t, base, admin, "POST", "/api/v2/teams/"+devID+"/authentication-token", map[string]any{"data": map[string]any{"type": "authentication-tokens"}}, &teamTok)
	p.click("#signout")
	p.waitJS("the sign-in page", `location.hash === "#/signin"`)
	p.fill("#secret", teamTok.Data.Attributes.Token)
	p.click(`form[data-form=signin] [type=submit]`)
	p.waitJS("the organizations, the first page a team token may read", `location.hash === "#/orgs" && !!document.querySelector('main a[href="#/org/acme"]')`)
	if n := p.count(`#nav a[href="#/orgs"]`); n != 1 {
		t.Errorf("a team token sees %d Organizations links, want 1", n)
	}
	p.route("#/project/" + prjID)
	p.waitJS("the project as the team sees it", `document.querySelector("main h1")?.textContent === "web-tier" &&
		[...document.querySelectorAll("main tbody tr")].some(tr => tr.cells[0].textContent === "developers" && tr.cells[1].textContent === "read")`)
	if n := p.count(`main button, main details, main form`); n != 0 {
		t.Errorf("a team with read access sees %d controls on the project page, want none", n)
	}
	p.route("#/org/acme")
	p.waitJS("the projects", `!!document.querySelector('main tbody a[href="#/project/`+prjID+`"]')`)
	if n := p.count(`main form[data-form=create], main [data-action=delete]`); n != 0 {
		t.Errorf("a team with read access sees %d create or delete controls on the projects page", n)
	}

	// A read-only token: no write buttons, and a clear 403.
	p.click("#signout")
	p.waitJS("the sign-in page", `location.hash === "#/signin"`)
	// Typed, and sent with Enter.
	p.waitJS("the secret field focused", `document.activeElement?.id === "secret"`)
	p.do("type the secret", chromedp.KeyEvent(ro.SecretID+"\r"))
	p.waitJS("the jobs list", `!!document.querySelector('#jobs a[href="#/job/default/web"]')`)
	if n := p.count(`a[href^="#/jobs/new"]`); n != 0 {
		t.Errorf("a read-only token sees the Run a job link")
	}
	if n := p.count(`#nav a[href="#/admin/organizations"]`); n != 0 {
		t.Errorf("a read-only token sees the Admin link")
	}
	p.route("#/job/default/web")
	p.waitText("#job-info", "running")
	p.waitJS("the allocations", `document.querySelectorAll("#job-allocs tbody tr").length >= 1`)
	if n := p.count(`main button`); n != 0 {
		t.Errorf("a read-only token sees %d buttons on the job page, want none", n)
	}
	// Without alloc-exec, no terminal.
	p.route(allocHash)
	p.waitText("#alloc-tasks", "Started")
	if n := p.count(`#alloc-exec-section:not([hidden]), form[data-form=exec]`); n != 0 {
		t.Errorf("a read-only token sees the exec panel (%d elements)", n)
	}
	p.route("#/nodes")
	p.waitText("main .error", "Permission denied")
	p.shot("denied")
	// The management API refuses a token without a subject there: a
	// clear message, not a blank page.
	p.route("#/orgs")
	p.waitText("main .error", "Permission denied")

	if p.shots != "" {
		// The jobs list at a phone's width.
		p.route("#/jobs")
		p.waitJS("the jobs list", `!!document.querySelector('#jobs a[href="#/job/default/web"]')`)
		p.do("narrow", chromedp.EmulateViewport(390, 844))
		p.shot("jobs-390px")
		p.route("#/job/default/web")
		p.waitJS("the allocations", `document.querySelectorAll("#job-allocs tbody tr").length >= 1`)
		p.shot("job-390px")
	}
}

// TestUIAssetsAreServedByTheAgent: the agent serves the UI without a
// token even with ACLs on (the files hold no data), redirects / to it,
// and still refuses anonymous API calls behind it.
func TestUIAssetsAreServedByTheAgent(t *testing.T) {
	a := startDevAgent(t, func(c *Config) { c.ACL.Enabled = true })
	base := "http://" + a.HTTPAddr()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != ui.Prefix {
		t.Fatalf("GET / = %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Anonymous, and with a token the cluster does not know (which the API
	// refuses): the files are public either way.
	for _, secret := range []string{"", "not-a-token"} {
		for name := range ui.Assets() {
			req, _ := http.NewRequest(http.MethodGet, base+ui.Prefix+name, nil)
			if secret != "" {
				req.Header.Set("X-Sched-Token", secret)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s%s with token %q = %d", ui.Prefix, name, secret, resp.StatusCode)
			}
		}
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/jobs", nil)
	req.Header.Set("X-Sched-Token", "not-a-token")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET /v1/jobs with an unknown token behind the UI: %v %v, want 403", resp, err)
	} else {
		resp.Body.Close()
	}
	if code, body := getBody(t, base+"/v1/jobs"); code != http.StatusForbidden {
		t.Errorf("anonymous GET /v1/jobs behind the UI = %d %s, want 403", code, body)
	}
	if code, _ := getBody(t, base+"/v1/nosuch"); code != http.StatusNotFound {
		t.Errorf("GET /v1/nosuch = %d, want the API's 404", code)
	}
}

// TestUIMeasureJobsList measures, with SCHED_UI_MEASURE=1, the time from
// navigation to the first rendered page of the jobs list with 5,000 jobs
// in the cluster (per_page 25), and the JavaScript and CSS bytes the UI
// serves. It logs the figures and asserts none of them.
func TestUIMeasureJobsList(t *testing.T) {
	if os.Getenv("SCHED_UI_MEASURE") != "1" {
		t.Skip("set SCHED_UI_MEASURE=1 to measure")
	}
	ctx := browser(t)
	a := startDevAgent(t, func(c *Config) { c.ACL.Enabled = true })
	base := "http://" + a.HTTPAddr()
	var boot struct{ SecretID string }
	call(t, base, "", "POST", "/v1/acl/bootstrap", map[string]any{}, &boot)
	p := &page{t: t, ctx: ctx, base: base}
	p.open("#/signin")
	p.eval(`sessionStorage.setItem("sched.token", ` + jsString(boot.SecretID) + `)`)
	measure := func(hash string) float64 {
		// A new document each time: navigating to the same URL with a
		// fragment would stay in the old one.
		p.do("leave", chromedp.Navigate("about:blank"))
		p.open(hash)
		p.waitJS("the page's data drawn", `performance.getEntriesByName("sched:drawn").length > 0`)
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		defer cancel()
		ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.getEntriesByName("sched:drawn")[0].startTime`))
		if err != nil {
			t.Fatal(err)
		}
		if os.Getenv("SCHED_UI_MEASURE_DETAIL") == "1" {
			d, _ := chromedp.Run(ctx, chromedp.Evaluate[string](loadTimeline))
			t.Logf("%s: %s", hash, d)
		}
		return ms
	}
	series := func(hash string) string {
		var runs []string
		for range 5 {
			runs = append(runs, fmt.Sprintf("%.0f", measure(hash)))
		}
		return strings.Join(runs, ", ")
	}
	t.Logf("control, an empty static document (the browser's floor): %s ms from navigation", floorControl(t, p))
	t.Logf("control, no jobs: first visit (empty cache, session not yet known): %.0f ms", measure("#/jobs"))
	t.Logf("control, no jobs in the cluster: first render of #/jobs: %s ms from navigation", series("#/jobs"))

	const jobs = 5000
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < jobs; i += 8 {
				job := map[string]any{"ID": fmt.Sprintf("job-%05d", i), "Type": "service", "Datacenters": []string{"*"},
					"TaskGroups": []map[string]any{{"Name": "g", "Count": 0, "Tasks": []map[string]any{{"Name": "t", "Driver": "mock",
						"Resources": map[string]any{"CPU": 10, "MemoryMB": 10}}}}}}
				b, _ := json.Marshal(map[string]any{"Job": job})
				req, _ := http.NewRequest(http.MethodPost, base+"/v1/jobs", bytes.NewReader(b))
				req.Header.Set("X-Sched-Token", boot.SecretID)
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode != 200 {
						err = fmt.Errorf("register %d: %s", i, resp.Status)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("registered %d jobs in %v", jobs, time.Since(start).Round(time.Millisecond))
	// Measure once the scheduler has finished with them: the jobs' index
	// stays put through a one-second blocking query.
	var index string
	testutil.WaitFor(t, 2*time.Minute, "the cluster to settle", func() bool {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/evaluations?per_page=1&index="+index+"&wait=1s", nil)
		req.Header.Set("X-Sched-Token", boot.SecretID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		got := resp.Header.Get("X-Sched-Index")
		settled := got == index
		index = got
		return settled
	})

	// What the API alone takes for each list the page asks for.
	for _, q := range []string{"namespace=default&per_page=25", "namespace=*&per_page=25", "namespace=default&per_page=25&filter=" + url.QueryEscape(`(Name matches "job-04")`)} {
		var runs []string
		for range 5 {
			req, _ := http.NewRequest(http.MethodGet, base+"/v1/jobs?"+q, nil)
			req.Header.Set("X-Sched-Token", boot.SecretID)
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			runs = append(runs, fmt.Sprintf("%.1f", float64(time.Since(start).Microseconds())/1000))
		}
		t.Logf("GET /v1/jobs?%s: %s ms", q, strings.Join(runs, ", "))
	}
	{
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		defer cancel()
		wire, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => { let js = 0, css = 0, files = 0;
			for (const e of performance.getEntriesByType("resource")) {
				if (e.name.endsWith(".js")) { js += e.encodedBodySize; files++; }
				if (e.name.endsWith(".css")) { css += e.encodedBodySize; files++; }
			}
			return [js, css, files]; })()`))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("the jobs page fetched %.0f files: %.0f bytes of JavaScript and %.0f of CSS on the wire (gzip)", wire[2], wire[0], wire[1])
	}
	for _, hash := range []string{"#/jobs", "#/jobs?namespace=*", `#/jobs?filter=Name+matches+"job-04"`, "#/job/default/job-04321", "#/evals", "#/nodes"} {
		t.Logf("first render of %s (5,000 jobs): %s ms from navigation", hash, series(hash))
	}
	sum := func(sizes map[string]int) (js, css int) {
		for name, size := range sizes {
			switch filepath.Ext(name) {
			case ".js":
				js += size
			case ".css":
				css += size
			}
		}
		return js, css
	}
	js, css := sum(ui.Assets())
	gzJS, gzCSS := sum(ui.GzipSizes())
	t.Logf("all UI files: %d bytes of JavaScript and %d of CSS; gzipped as served: %d and %d", js, css, gzJS, gzCSS)
}

// TestUIPolicyRules checks, in the browser, how the UI reads a token's
// policies to decide which buttons to show (js/acl.js): exact names beat
// globs, the glob with most literal characters wins, deny wins, read and
// write expand to their capabilities, JSON rules read as HCL ones.
func TestUIPolicyRules(t *testing.T) {
	ctx := browser(t)
	srv := httptest.NewServer(ui.Handler())
	defer srv.Close()
	p := &page{t: t, ctx: ctx, base: srv.URL}
	p.do("open", chromedp.Navigate(srv.URL+"/ui/js/acl.js"))
	cases := []struct {
		rules []string
		check string // a JavaScript expression over c, a Capabilities
		want  bool
	}{
		{[]string{`namespace "default" { policy = "read" }`}, `c.ns("default", "read-job")`, true},
		{[]string{`namespace "default" { policy = "read" }`}, `c.ns("default", "submit-job")`, false},
		{[]string{`namespace "default" { policy = "read" }`}, `c.ns("other", "read-job")`, false},
		{[]string{`namespace "*" { policy = "write" }` + "\n" + `namespace "secret" { policy = "deny" }`}, `c.ns("web", "submit-job")`, true},
		{[]string{`namespace "*" { policy = "write" }` + "\n" + `namespace "secret" { policy = "deny" }`}, `c.ns("secret", "read-job")`, false},
		{[]string{`namespace "team-*" {
  policy       = "read"
  capabilities = ["submit-job"]
}
namespace "team-a*" { policy = "deny" }`}, `c.ns("team-b", "submit-job")`, true},
		{[]string{`namespace "team-*" { policy = "read" capabilities = ["submit-job"] }` + "\n" + `namespace "team-a*" { policy = "deny" }`}, `c.ns("team-abc", "read-job")`, false},
		{[]string{`namespace "prod" { policy = "read" }` + "\n" + `namespace "*" { policy = "write" }`}, `c.ns("prod", "submit-job")`, false},
		{[]string{`namespace "prod" { policy = "read" }` + "\n" + `namespace "*" { policy = "write" }`}, `c.ns("dev", "submit-job")`, true},
		{[]string{`{"namespace": {"default": {"policy": "write"}}, "node": {"policy": "write"}}`}, `c.ns("default", "dispatch-job") && c.nodeWrite()`, true},
		{[]string{`# comment` + "\n" + `node { policy = "read" }`}, `c.nodeWrite()`, false},
		{[]string{`namespace "default" { policy = "read" }`, `namespace "default" { policy = "write" }`}, `c.ns("default", "submit-job")`, true},
		{[]string{`namespace "default" { policy = "write" }`, `namespace "default" { policy = "deny" }`}, `c.ns("default", "read-job")`, false},
		{[]string{`namespace "default" { policy = "read" }`}, `c.ns("*", "list-jobs")`, true},
		{[]string{`node { policy = "write" }`}, `c.ns("*", "list-jobs")`, false},
	}
	for _, tc := range cases {
		rules, _ := json.Marshal(tc.rules)
		expr := `import("/ui/js/acl.js").then(({ Capabilities }) => { const c = new Capabilities("policies", ` + string(rules) + `); return !!(` + tc.check + `); })`
		ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr, chromedp.EvalAwaitPromise))
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", tc.check, err)
		}
		if got != tc.want {
			t.Errorf("policies %q: %s = %v, want %v", tc.rules, tc.check, got, tc.want)
		}
	}
}

// TestUIOnEveryServer: each server of a cluster serves the UI; on a
// follower, a job run from the form is forwarded to the leader, and the
// follower's jobs list shows a job registered through another server
// without a reload.
func TestUIOnEveryServer(t *testing.T) {
	ctx := browser(t)
	servers := newTestCluster(t, 3)
	leader := leaderOf(t, servers, 20*time.Second)
	var follower, other *testServer
	for _, s := range servers {
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Get(s.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTemporaryRedirect {
			t.Errorf("%s: GET / = %d", s.cfg.Name, resp.StatusCode)
		}
		if code, body := getBody(t, s.url(ui.Prefix)); code != http.StatusOK || !strings.Contains(body, "/ui/v/"+ui.Build()+"/js/app.js") {
			t.Errorf("%s: GET /ui/ = %d", s.cfg.Name, code)
		}
		switch {
		case s == leader:
		case follower == nil:
			follower = s
		default:
			other = s
		}
	}
	p := &page{t: t, ctx: ctx, base: strings.TrimSuffix(follower.url(""), "/")}
	p.open("#/jobs/new")
	p.waitJS("the job form", `!!document.querySelector("#spec")`)
	p.fill("#spec", fmt.Sprintf(uiJobHCL, "on a follower"))
	p.click(`form[data-form=register] [type=submit]`)
	p.waitJS("the job's page, read from the follower", `location.hash === "#/job/default/web" && document.querySelector("#job-info")?.textContent.includes("service")`)
	p.eval(`window.__sameDocument = true`)
	p.route("#/jobs")
	p.waitJS("the job in the follower's list", `!!document.querySelector('#jobs a[href="#/job/default/web"]')`)
	registerHCL(t, strings.TrimSuffix(other.url(""), "/"), "", strings.Replace(fmt.Sprintf(uiJobHCL, "x"), `job "web"`, `job "elsewhere"`, 1))
	p.waitJS("the job registered through another server", `!!document.querySelector('#jobs a[href="#/job/default/elsewhere"]') && window.__sameDocument === true`)
}
