package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/schedhq/sched/internal/testutil"
)

// The topology of more nodes than fit a screen: the first screenful is
// drawn with the page's mark and the rest in the tasks that follow, so
// once every card is drawn (the sched:topology-all mark) each node is on
// the page once, in its datacenter and pool, in name order, with its
// allocations in its bars, read from the compact allocation list.
func TestUITopologyManyNodes(t *testing.T) {
	ctx := browser(t)
	// The simulated nodes send no heartbeat: they stay up for the test.
	a := startDevAgent(t, func(c *Config) { c.Server.MinHeartbeatTTL = 10 * time.Minute })
	base := "http://" + a.HTTPAddr()
	const sims = 300
	node := func(i int) map[string]any {
		return map[string]any{"Node": map[string]any{
			"ID": fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), "Name": fmt.Sprintf("sim-%04d", sims-1-i),
			"Datacenter": fmt.Sprintf("dc%d", 1+i%2), "SecretID": fmt.Sprintf("%08x-1111-4000-8000-%012x", i, i),
			"Attributes":    map[string]string{"kernel.name": "linux", "cpu.arch": "amd64"},
			"NodeResources": map[string]any{"CPU": 4000, "MemoryMB": 8192, "DiskMB": 100000},
			"Drivers":       map[string]any{"mock": map[string]any{"Detected": true, "Healthy": true}},
		}}
	}
	// The first once the scheduler leads (a 503 before).
	testutil.WaitFor(t, 30*time.Second, "the first node registered", func() bool {
		b, _ := json.Marshal(node(0))
		resp, err := http.Post(base+"/v1/node/register", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	for i := 1; i < sims; i++ {
		call(t, base, "", "POST", "/v1/node/register", node(i), nil)
	}
	call(t, base, "", "POST", "/v1/jobs", map[string]any{"Job": map[string]any{
		"ID": "spread", "Type": "service", "Datacenters": []string{"*"},
		"TaskGroups": []map[string]any{{"Name": "g", "Count": 40, "Tasks": []map[string]any{{"Name": "t", "Driver": "mock",
			"Config": map[string]any{"run_for": "1h"}, "Resources": map[string]any{"CPU": 100, "MemoryMB": 64}}}}}}}, nil)
	var allocs []struct{ ID, NodeID, ClientStatus string }
	testutil.WaitFor(t, time.Minute, "40 allocations placed", func() bool {
		call(t, base, "", "GET", "/v1/allocations?filter="+url.QueryEscape(`JobID == "spread"`), nil, &allocs)
		return len(allocs) == 40
	})
	var nodes []struct{ ID, Name, Datacenter string }
	call(t, base, "", "GET", "/v1/nodes", nil, &nodes)

	p := &page{t: t, ctx: ctx, base: base}
	// A tab's first page with a token but no session read yet (a new tab
	// given the token) loads its module while the session is read: the
	// jobs list, loaded with the shell, and the topology, loaded on use.
	// With ACLs off the token is refused and forgotten; the page draws.
	for _, hash := range []string{"#/jobs", "#/topology"} {
		p.open("#/signin")
		p.eval(`sessionStorage.clear(); sessionStorage.setItem("sched.token", "not-a-token")`)
		p.do("leave", chromedp.Navigate("about:blank"))
		p.open(hash)
		p.waitJS(hash+" drawn on a tab's first visit with a token", `performance.getEntriesByName("sched:drawn").length > 0`)
	}
	p.do("leave", chromedp.Navigate("about:blank"))
	p.open("#/topology")
	p.waitJS("every node card", `performance.getEntriesByName("sched:topology-all").length > 0`)
	if got := p.textOfJS(`String(performance.getEntriesByName("sched:drawn").length)`); got != "1" {
		t.Errorf("sched:drawn marked %s times", got)
	}
	if n := p.count(".topo-node"); n != len(nodes) {
		t.Errorf("%d node cards, want %d", n, len(nodes))
	}
	if n := p.count(".topo-dc"); n != 2 {
		t.Errorf("%d datacenters drawn, want 2", n)
	}
	// Each card once, in its datacenter's section, in name order within
	// its pool.
	bad := p.textOfJS(`(() => { const seen = new Set(); const out = [];
		for (const pool of document.querySelectorAll(".topo-nodes")) {
			let last = "";
			for (const card of pool.querySelectorAll(".topo-node")) {
				const name = card.querySelector("h4 a").textContent;
				if (seen.has(card.dataset.node)) out.push("twice: " + name);
				seen.add(card.dataset.node);
				if (name < last) out.push("out of order: " + last + " before " + name);
				last = name;
			}
		}
		return out.slice(0, 5).join("; "); })()`)
	if bad != "" {
		t.Errorf("cards: %s", bad)
	}
	for _, n := range nodes {
		dc := p.textOfJS(`document.querySelector('[data-node="` + n.ID + `"]')?.closest(".topo-dc")?.dataset.dc || ""`)
		if dc != n.Datacenter {
			t.Errorf("node %s drawn in datacenter %q, want %q", n.Name, dc, n.Datacenter)
			break
		}
	}
	// Every allocation in its node's CPU and memory bars.
	for _, al := range allocs {
		got := p.textOfJS(`String(document.querySelectorAll('[data-node="` + al.NodeID + `"] .splitbar a[data-alloc="` + al.ID + `"]').length)`)
		if got != "2" {
			t.Errorf("allocation %s: %s parts on node %s, want 2", al.ID, got, al.NodeID)
		}
	}
	p.waitText("#topo-sum", fmt.Sprintf("%d nodes in 2 datacenters, 40 allocations;", len(nodes)))
	if got := p.textOfJS(`performance.getEntriesByType("resource").filter(e => e.name.includes("/v1/allocations?")).map(e => new URL(e.name).search).join(" ")`); !strings.Contains(got, "compact=true") {
		t.Errorf("the page's allocation list: %q, want the compact form", got)
	}
}
