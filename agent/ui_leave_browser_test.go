package agent

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// Leaving a page that follows the cluster (the topology's event stream,
// a list's blocking query) by loading another document must end its
// requests: a browser keeps at most six connections to one host, and
// pages left with their streams open once used them all up, so the next
// page stayed on "Loading…" for good.
func TestUILeavingAPageEndsItsRequests(t *testing.T) {
	ctx := browser(t)
	a := startDevAgent(t)
	base := "http://" + a.HTTPAddr()
	p := &page{t: t, ctx: ctx, base: base}
	for i := range 8 {
		p.do(fmt.Sprintf("leave (%d)", i), chromedp.Navigate("about:blank"))
		p.open("#/topology")
		p.waitJS(fmt.Sprintf("the topology drawn (%d)", i), `performance.getEntriesByName("sched:drawn").length > 0`)
	}
	p.do("leave", chromedp.Navigate("about:blank"))
	p.open("#/jobs")
	p.waitJS("the jobs page after the topology's visits", `performance.getEntriesByName("sched:drawn").length > 0 && document.querySelector("h1")?.textContent === "Jobs"`)
}
