package agent

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/schedhq/sched/internal/testutil"
)

// These tests drive the web UI of an agent with ACLs off, as every -dev
// agent runs: no sign-in wall, Nomad's /ui/<page> addresses, the icon,
// and what a plain headless screenshot captures (issue 32).

const uiManyHCL = `job "many" {
  group "g" {
    count = 30
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

// TestUIWithoutACLs: with ACLs off, /ui/ lands on the jobs list with Sign
// in still offered; /ui/jobs is the page of #/jobs; the icon is served;
// an allocation's ports show the node's address; a node's allocations
// come a page at a time; a periodic job's buttons have nothing between
// them.
func TestUIWithoutACLs(t *testing.T) {
	ctx := browser(t)
	a := startDevAgent(t)
	base := "http://" + a.HTTPAddr()
	p := &page{t: t, ctx: ctx, base: base}
	registerHCL(t, base, "", uiServiceHCL)
	registerHCL(t, base, "", uiManyHCL)
	registerHCL(t, base, "", strings.NewReplacer(`job "tmpl"`, `job "cron"`, `parameterized {`, "periodic {\n    crons = [\"0 0 1 1 *\"]",
		`payload = "optional"`, `prohibit_overlap = true`).Replace(uiTemplateHCL))

	p.do("open /", chromedp.Navigate(base+"/"))
	p.waitJS("the jobs list, not the sign-in page", `location.hash === "#/jobs" && !!document.querySelector('#jobs a[href="#/job/default/svc"]')`)
	p.waitText("#who", "Sign in")

	p.do("open /ui/jobs", chromedp.Navigate(base+"/ui/jobs"))
	p.waitJS("the jobs list at /ui/jobs", `location.pathname === "/ui/" && location.hash === "#/jobs" && !!document.querySelector('#jobs a[href="#/job/default/many"]')`)
	p.do("open /ui/job/default/cron", chromedp.Navigate(base+"/ui/job/default/cron"))
	p.waitJS("the job's page at /ui/job/default/cron", `location.hash === "#/job/default/cron" && !!document.querySelector("[data-action=force]")`)
	if got := strings.TrimSpace(p.textOf("#job-actions")); strings.Contains(got, ",") {
		t.Errorf("the job's buttons read %q: a stray comma", got)
	}
	if n := p.count(`link[rel=icon][href="/ui/favicon.svg"]`); n != 1 {
		t.Errorf("%d icon links, want 1", n)
	}
	for _, path := range []string{"/favicon.ico", "/ui/favicon.svg"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/svg+xml" {
			t.Errorf("GET %s = %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}

	// The service's port: the node's address, not a placeholder.
	p.route("#/job/default/svc")
	p.click(`#job-allocs a[href^="#/alloc/"]`)
	p.waitJS("the port's address", `/^127\.0\.0\.1:\d+$/.test(document.querySelector("#alloc-addrs tbody td:nth-child(3)")?.textContent || "")`)

	// 30 allocations and the service's one on the node: 25 a page.
	p.route("#/node/" + a.Client().NodeID())
	p.waitJS("a full first page and a next one", `document.querySelectorAll("#node-allocs tbody tr").length === 25 && !!document.querySelector("[data-action=allocs-page]")`)
	p.waitText("#node-allocs .pager", "1–25 of 31")
	p.click(`[data-action=allocs-page][data-page="1"]`)
	p.waitJS("the second page", `document.querySelectorAll("#node-allocs tbody tr").length === 6 && document.querySelector("#node-allocs .pager")?.textContent.includes("26–31 of 31")`)
}

// TestUIPlainHeadlessRender: `chromium --headless --dump-dom` of the
// jobs page, which captures the page as --screenshot does, when the page
// has loaded, holds the jobs list, not "Loading…".
func TestUIPlainHeadlessRender(t *testing.T) {
	browser(t) // skips without chromium
	path, _ := exec.LookPath("chromium")
	a := startDevAgent(t)
	base := "http://" + a.HTTPAddr()
	registerHCL(t, base, "", uiServiceHCL)
	testutil.WaitFor(t, 20*time.Second, "the job registered", func() bool {
		code, body := getBody(t, base+"/v1/jobs")
		return code == http.StatusOK && strings.Contains(body, `"svc"`)
	})
	for _, target := range []string{base + "/ui/", base + "/ui/jobs"} {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		out, err := exec.CommandContext(ctx, path, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", target).Output()
		cancel()
		if err != nil {
			t.Fatalf("chromium --dump-dom %s: %v", target, err)
		}
		dom := string(out)
		if strings.Contains(dom, "Loading…") || !strings.Contains(dom, `href="#/job/default/svc"`) {
			t.Errorf("chromium --headless --dump-dom %s: the page is not drawn:\n%s", target, dom)
		}
	}
}
