package agent

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestUIQuotas: the quotas page shows each quota's usage against its
// limits, per region, and follows it: a job placed in the quota's
// namespace moves the bar.
func TestUIQuotas(t *testing.T) {
	ctx := browser(t)
	a := startDevAgent(t)
	base := "http://" + a.HTTPAddr()
	p := &page{t: t, ctx: ctx, base: base}
	call(t, base, "", "POST", "/v1/quota/team", map[string]any{"Name": "team", "Limits": []map[string]any{
		{"Region": "global", "RegionLimit": map[string]any{"MemoryMB": 1024, "Allocations": 10}}}}, nil)
	call(t, base, "", "POST", "/v1/namespace/team", map[string]any{"Name": "team", "Quota": "team"}, nil)

	p.do("open /ui/quotas", chromedp.Navigate(base+"/ui/quotas"))
	p.waitJS("the quota with nothing used", `!!document.querySelector("#quota-team") && document.querySelector("#quota-team").textContent.includes("Memory: 0 / 1024 MB")`)
	if got := p.textOf("nav"); !strings.Contains(got, "Quotas") {
		t.Errorf("nav %q has no Quotas", got)
	}
	registerHCL(t, base, "", `job "q" {
  namespace = "team"
  datacenters = ["*"]
  group "g" {
    count = 2
    task "t" {
      driver = "mock"
      config { run_for = "1h" }
      resources {
        cpu    = 100
        memory = 256
      }
    }
  }
}`)
	p.waitJS("the bar moved by the job's two allocations", `document.querySelector("#quota-team").textContent.includes("Memory: 512 / 1024 MB (50%)") && document.querySelector("#quota-team").textContent.includes("Allocations: 2 / 10")`)
}
