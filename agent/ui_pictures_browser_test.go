package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The pictures of the web UI (issue 32): children nested under their
// parent, a job's allocation-status bar, the topology, CPU and memory
// charts, and a terminal over the exec WebSocket.

const uiSleeperHCL = `job "sleeper" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "exec sleep 3600"]
      }
      resources {
        cpu    = 200
        memory = 64
      }
    }
  }
}
`

// shotsDir is where the tests write their screenshots, when asked to
// (SCHED_UI_SCREENSHOTS=1), or "".
func shotsDir(t *testing.T) string {
	if os.Getenv("SCHED_UI_SCREENSHOTS") != "1" {
		return ""
	}
	dir := filepath.Join("..", "docs", "ui")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestUIPictures walks the pictures on a dev agent with ACLs off:
// children under their parent on the jobs list and all of them on the
// parent's page; the job's allocation-status bar; the topology with its
// bars split by allocation, following a new job without a reload, and a
// part clicked through to its allocation; the allocation's and the
// node's charts filling with samples; "preempted by" when the allocation
// says so; a terminal that runs a shell and follows the panel's size.
func TestUIPictures(t *testing.T) {
	ctx := browser(t)
	a := startDevAgent(t)
	base := "http://" + a.HTTPAddr()
	p := &page{t: t, ctx: ctx, base: base, shots: shotsDir(t)}
	registerHCL(t, base, "", uiSleeperHCL)
	registerHCL(t, base, "", strings.NewReplacer(`job "tmpl"`, `job "cron"`, `parameterized {`, "periodic {\n    crons = [\"0 0 1 1 *\"]",
		`payload = "optional"`, `prohibit_overlap = false`).Replace(uiTemplateHCL))
	for range 4 {
		call(t, base, "", "POST", "/v1/job/cron/periodic/force", map[string]any{}, nil)
	}

	// The list: the parent, its four children counted, the latest three
	// linked; no child on a row of its own.
	p.open("#/jobs")
	p.waitJS("the parent's children row", `(() => { const r = document.querySelector("#jobs tr.children");
		return !!r && r.textContent.includes("4 children") && r.querySelectorAll('a[href^="#/job/default/cron%2Fperiodic-"]').length === 3; })()`)
	if n := p.count(`#jobs tbody tr:not(.children) a[href^="#/job/default/cron%2F"]`); n != 0 {
		t.Errorf("%d children listed on rows of their own", n)
	}
	p.waitJS("the sleeper's small status bar", `!!document.querySelector('#jobs .statusbar.small rect[data-state=running]')`)
	p.shot("jobs-children")
	p.route("#/job/default/cron")
	p.waitJS("all four children on the parent's page", `document.querySelectorAll('#job-children a[href^="#/job/default/cron%2Fperiodic-"]').length === 4`)
	// A child launched meanwhile appears through the event stream.
	p.eval(`window.__parentPage = true`)
	call(t, base, "", "POST", "/v1/job/cron/periodic/force", map[string]any{}, nil)
	p.waitJS("the fifth child, in the same document", `window.__parentPage === true && document.querySelectorAll('#job-children a[href^="#/job/default/cron%2Fperiodic-"]').length === 5`)

	// The job's allocation-status bar: one running allocation, all of it.
	p.route("#/job/default/sleeper")
	p.waitJS("a running bar across the whole width", `(() => { const r = document.querySelector('#job-summary .statusbar rect[data-state=running]');
		return !!r && r.getAttribute("width") === "100.000" && r.dataset.count === "1"; })()`)
	p.waitText("#job-summary .legend", "1 running")

	// The topology: one datacenter, one pool, the node with the sleeper's
	// part in its bars; a job registered meanwhile appears through the
	// event stream, in the same document.
	p.route("#/topology")
	p.waitJS("the node with the sleeper's part", `document.querySelectorAll(".topo-dc").length === 1 && document.querySelectorAll(".topo-node").length === 1 &&
		document.querySelectorAll('.topo-node .splitbar a[href^="#/alloc/"]').length === 2`)
	p.waitText("#topo-sum", "1 node in 1 datacenter, 1 allocation;")
	p.eval(`window.__sameDocument = true`)
	registerHCL(t, base, "", uiServiceHCL)
	p.waitJS("the new allocation's parts", `document.querySelectorAll('.topo-node .splitbar a[href^="#/alloc/"]').length === 4`)
	p.waitText("#topo-sum", "2 allocations")
	p.waitJS("the same document", `window.__sameDocument === true && location.hash === "#/topology"`)
	p.shot("topology")
	var allocs []struct {
		ID, JobID string
	}
	call(t, base, "", "GET", "/v1/allocations", nil, &allocs)
	sleeper := ""
	for _, al := range allocs {
		if al.JobID == "sleeper" {
			sleeper = al.ID
		}
	}
	if sleeper == "" {
		t.Fatalf("no allocation of sleeper in %+v", allocs)
	}
	p.eval(`document.querySelector('.topo-node .splitbar a[data-alloc=` + jsString(sleeper) + `]').dispatchEvent(new MouseEvent("click", {bubbles: true}))`)
	p.waitJS("the allocation's page", `location.hash === "#/alloc/`+sleeper+`"`)

	// Charts: samples of the stats endpoint, one every 2 s.
	p.waitJS("two samples in each chart", `document.querySelectorAll("#alloc-use figure").length === 2 &&
		[...document.querySelectorAll("#alloc-use figure")].every(f => Number(f.dataset.samples) >= 2)`)
	p.waitJS("a line and a memory figure", `!!document.querySelector("#alloc-use polyline") && /\d/.test(document.querySelectorAll("#alloc-use figcaption strong")[1]?.textContent || "")`)

	// The terminal: a shell in the task, its size the panel's.
	p.click(`form[data-form=exec] [type=submit]`)
	p.waitJS("the session open", `document.querySelector("#term")?.dataset.state === "open" && !!document.querySelector("#term").dataset.size`)
	p.waitJS("the shell's prompt", `/[#$] +$/.test(document.querySelector("#term").textContent)`)
	typeLine := func(line string) {
		p.eval(`document.querySelector("#term").focus()`)
		p.do("type "+line, chromedp.KeyEvent(line+"\r"))
	}
	typeLine("echo hi-$((40+2))")
	p.waitText("#term", "hi-42")
	typeLine("stty size")
	p.waitJS("stty reports the panel's size", `(() => { const t = document.querySelector("#term"); const [r, c] = t.dataset.size.split("x");
		return t.textContent.includes("\n" + r + " " + c); })()`)
	p.shot("exec")
	p.eval(`document.querySelector("#term").style.height = "160px"`)
	p.waitJS("a smaller size sent", `(() => { const [r] = document.querySelector("#term").dataset.size.split("x"); return Number(r) < 10; })()`)
	typeLine("clear; stty size")
	p.waitJS("stty reports the new size", `(() => { const t = document.querySelector("#term"); const [r, c] = t.dataset.size.split("x");
		return t.textContent.includes(r + " " + c); })()`)
	typeLine("exit 3")
	p.waitText("#term-status", "exited with code 3")

	// Preempted by: shown when the allocation names its preempter (the
	// answer is edited in the page, as a preempted allocation's would
	// read).
	p.eval(`{ const f = window.fetch; window.fetch = async (u, o) => {
		const r = await f(u, o);
		if (!String(u).includes("/v1/allocation/` + sleeper + `")) return r;
		const doc = await r.json(); doc.PreemptedByAllocation = "feedface-0000-4000-8000-000000000000";
		return new Response(JSON.stringify(doc), { status: r.status, headers: r.headers }); }; }`)
	p.route("#/jobs")
	p.waitJS("the jobs list", `!!document.querySelector("#jobs table")`)
	p.route("#/alloc/" + sleeper)
	p.waitJS("preempted by", `document.querySelector("#preempted-by")?.getAttribute("href") === "#/alloc/feedface-0000-4000-8000-000000000000"`)

	// The node's charts add up its allocations' samples.
	p.route("#/node/" + a.Client().NodeID())
	p.waitJS("two samples in each of the node's charts", `document.querySelectorAll("#node-use figure").length === 2 &&
		[...document.querySelectorAll("#node-use figure")].every(f => Number(f.dataset.samples) >= 2)`)
	p.waitJS("the node's memory in use", `!/^0 B$|—/.test(document.querySelectorAll("#node-use figcaption strong")[1]?.textContent || "—")`)
	p.shot("node-charts")
}
