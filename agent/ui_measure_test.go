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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/schedhq/sched/internal/testutil"
)

// TestUIMeasurePictures measures, with SCHED_UI_MEASURE=1, the first
// meaningful render (the page's sched:drawn mark, from navigation) of the
// jobs list, the topology and an allocation's page on a cluster of 5,000
// jobs and 1,000 simulated nodes (registered and kept alive through the
// API, as sched-bench's are) carrying 2,000 allocations, five runs each.
// It logs the runs and their median and asserts none of them.
func TestUIMeasurePictures(t *testing.T) {
	if os.Getenv("SCHED_UI_MEASURE") != "1" {
		t.Skip("set SCHED_UI_MEASURE=1 to measure")
	}
	ctx := browser(t)
	a := startDevAgent(t, func(c *Config) { c.ACL.Enabled = true })
	base := "http://" + a.HTTPAddr()
	var boot struct{ SecretID string }
	call(t, base, "", "POST", "/v1/acl/bootstrap", map[string]any{}, &boot)
	secret := boot.SecretID
	send := func(method, path string, body any) (*http.Response, error) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
		req.Header.Set("X-Sched-Token", secret)
		resp, err := http.DefaultClient.Do(req)
		if err == nil && resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("%s %s: %s", method, path, resp.Status)
		}
		return resp, err
	}
	// parallel runs do(i) for i in [0, n) on 8 workers.
	parallel := func(n int, do func(i int) error) {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 8 {
					if err := do(i); err != nil {
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
	}

	const nodes, jobs = 1000, 5000
	ids := make([]string, nodes)
	ttl := make([]time.Duration, nodes)
	start := time.Now()
	parallel(nodes, func(i int) error {
		ids[i] = fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
		resp, err := send(http.MethodPost, "/v1/node/register", map[string]any{"Node": map[string]any{
			"ID": ids[i], "Name": fmt.Sprintf("sim-%04d", i), "Datacenter": fmt.Sprintf("dc%d", 1+i%4),
			"SecretID":      fmt.Sprintf("%08x-1111-4000-8000-%012x", i, i),
			"Attributes":    map[string]string{"kernel.name": "linux", "cpu.arch": "amd64", "unique.network.ip-address": fmt.Sprintf("10.0.%d.%d", i/250, i%250)},
			"NodeResources": map[string]any{"CPU": 16000, "MemoryMB": 32768, "DiskMB": 200000},
			"Drivers":       map[string]any{"mock": map[string]any{"Detected": true, "Healthy": true}},
		}})
		if err != nil {
			return err
		}
		var out struct{ HeartbeatTTL time.Duration }
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		ttl[i] = out.HeartbeatTTL
		return nil
	})
	t.Logf("registered %d nodes in %v", nodes, time.Since(start).Round(time.Millisecond))
	// Keep them alive: every node at a third of its TTL, until the test ends.
	beat, stop := context.WithCancel(context.Background())
	var beats sync.WaitGroup
	t.Cleanup(func() { stop(); beats.Wait() })
	every := slices.Min(ttl) / 3
	if every <= 0 {
		every = 3 * time.Second
	}
	beats.Add(1)
	go func() {
		defer beats.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-beat.Done():
				return
			case <-tick.C:
			}
			for _, id := range ids {
				if beat.Err() != nil {
					return
				}
				if resp, err := send(http.MethodPut, "/v1/node/"+id+"/heartbeat", map[string]any{}); err == nil {
					resp.Body.Close()
				}
			}
		}
	}()

	start = time.Now()
	parallel(jobs, func(i int) error {
		count := 0
		if i < 20 {
			count = 100 // 2,000 allocations in all, on the simulated nodes
		}
		resp, err := send(http.MethodPost, "/v1/jobs", map[string]any{"Job": map[string]any{
			"ID": fmt.Sprintf("job-%05d", i), "Type": "service", "Datacenters": []string{"*"},
			"TaskGroups": []map[string]any{{"Name": "g", "Count": count, "Tasks": []map[string]any{{"Name": "t", "Driver": "mock",
				"Config": map[string]any{"run_for": "1h"}, "Resources": map[string]any{"CPU": 100, "MemoryMB": 64}}}}}}})
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	t.Logf("registered %d jobs in %v", jobs, time.Since(start).Round(time.Millisecond))
	var allocs []struct{ ID string }
	testutil.WaitFor(t, 3*time.Minute, "2,000 allocations placed", func() bool {
		call(t, base, secret, "GET", "/v1/allocations?namespace=*", nil, &allocs)
		return len(allocs) >= 2000
	})
	// Measure once the scheduler is done: the evaluations' index stays
	// put through a one-second blocking query.
	var index string
	testutil.WaitFor(t, 2*time.Minute, "the cluster to settle", func() bool {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/evaluations?per_page=1&index="+index+"&wait=1s", nil)
		req.Header.Set("X-Sched-Token", secret)
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

	// What the API alone takes for the topology's allocations: the
	// compact form the page asks for, with and without its filter for the
	// live ones, and the stubs with and without their resources.
	live := url.QueryEscape(`DesiredStatus == "run" and ClientStatus != "complete" and ClientStatus != "failed" and ClientStatus != "lost"`)
	for _, q := range []string{"namespace=*&compact=true&filter=" + live, "namespace=*&compact=true",
		"namespace=*&resources=true&task_states=false&filter=" + live, "namespace=*&resources=true&task_states=false", "namespace=*&task_states=false"} {
		var runs []string
		for range 3 {
			req, _ := http.NewRequest(http.MethodGet, base+"/v1/allocations?"+q, nil)
			req.Header.Set("X-Sched-Token", secret)
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			runs = append(runs, fmt.Sprintf("%.1f ms %d B", float64(time.Since(start).Microseconds())/1000, n))
		}
		t.Logf("GET /v1/allocations?%s: %s", q, strings.Join(runs, ", "))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		t.Logf("load average before measuring: %s", strings.TrimSpace(string(b)))
	}
	p := &page{t: t, ctx: ctx, base: base}
	t.Logf("control, an empty static document (the browser's floor): %s ms from navigation", floorControl(t, p))
	p.open("#/signin")
	p.eval(`sessionStorage.setItem("sched.token", ` + jsString(secret) + `)`)
	// apiCalls is the last run's timeline up to its mark (loadTimeline).
	var apiCalls string
	measure := func(hash string) float64 {
		// A run whose page shows an error (on a loaded machine, a request
		// may fail) is run again, twice at most; a failed run counts as
		// nothing.
		for try := 0; ; try++ {
			p.do("leave", chromedp.Navigate("about:blank"))
			p.open(hash)
			// Drawn, an error, or nothing for 40 s. Generous bounds: the
			// machine may be loaded.
			wctx, wcancel := context.WithTimeout(p.ctx, 40*time.Second)
			var werr error
			for {
				_, werr = chromedp.Run(wctx, chromedp.Poll[bool](`performance.getEntriesByName("sched:drawn").length > 0 || !!document.querySelector("main .error")`,
					chromedp.WithPollingTimeout(35*time.Second)))
				// A poll that starts while the navigation replaces the
				// page's JavaScript context loses it: poll in the new one.
				if werr == nil || !strings.Contains(werr.Error(), "Cannot find context") || wctx.Err() != nil {
					break
				}
			}
			wcancel()
			ectx, ecancel := context.WithTimeout(p.ctx, 60*time.Second)
			drawn, err := chromedp.Run(ectx, chromedp.Evaluate[bool](`performance.getEntriesByName("sched:drawn").length > 0 && !document.querySelector("main .error")`))
			ecancel()
			if err != nil {
				t.Fatal(err)
			}
			if werr == nil && drawn {
				break
			}
			if try == 2 {
				t.Fatalf("%s: %s", hash, p.text())
			}
			t.Logf("%s: the page failed or drew nothing (%v), run again: %s", hash, werr, p.textOfJS(`document.querySelector("main")?.textContent.slice(0, 300) || ""`))
			p.eval(`sessionStorage.setItem("sched.token", ` + jsString(secret) + `)`)
		}
		ctx, cancel := context.WithTimeout(p.ctx, 60*time.Second)
		defer cancel()
		ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.getEntriesByName("sched:drawn")[0].startTime`))
		if err != nil {
			t.Fatal(err)
		}
		apiCalls, _ = chromedp.Run(ctx, chromedp.Evaluate[string](loadTimeline))
		return ms
	}
	for _, hash := range []string{"#/jobs", "#/topology", "#/alloc/" + allocs[0].ID} {
		var runs []float64
		for range 5 {
			runs = append(runs, measure(hash))
		}
		sorted := slices.Clone(runs)
		slices.Sort(sorted)
		var s []string
		for _, r := range runs {
			s = append(s, fmt.Sprintf("%.0f", r))
		}
		t.Logf("first render of %s (%d jobs, %d nodes, %d allocations): %s ms; median %.0f ms", hash, jobs, nodes, len(allocs), strings.Join(s, ", "), sorted[2])
		t.Logf("  its load (last run): %s", apiCalls)
		if hash == "#/topology" {
			p.waitJS("every node card", `performance.getEntriesByName("sched:topology-all").length > 0`)
			t.Logf("  every node card drawn (last run): %s", p.textOfJS(`String(Math.round(performance.getEntriesByName("sched:topology-all")[0]?.startTime ?? -1)) + " ms"`))
		}
	}
}

// loadTimeline is a JavaScript expression: what the document loaded
// before its sched:drawn mark, in ms from navigation: the document's
// answer, the files (how many, how many came from the browser's cache
// with no request, when the last one arrived) and each API request (path,
// start and end, bytes on the wire), then the mark.
const loadTimeline = `(() => {
	const mark = performance.getEntriesByName("sched:drawn")[0].startTime;
	const nav = performance.getEntriesByType("navigation")[0];
	const before = performance.getEntriesByType("resource").filter(e => e.startTime < mark);
	const files = before.filter(e => /\.(js|css)$/.test(e.name));
	const api = before.filter(e => e.name.includes("/v1/") || e.name.includes("/api/v2/"));
	return "document " + Math.round(nav.responseEnd) + " ms; " +
		files.length + " files (" + files.filter(e => e.transferSize === 0).length + " from cache), the last at " +
		Math.round(Math.max(0, ...files.map(e => e.responseEnd))) + " ms; " +
		api.map(e => new URL(e.name).pathname + " " + Math.round(e.startTime) + "–" + Math.round(e.responseEnd) + " ms " + e.encodedBodySize + " B").join(", ") +
		"; drawn at " + Math.round(mark) + " ms";
})()`

// floorControl measures, five times, the time from navigation to a mark
// set by an empty static HTML document served by a plain Go server on
// this machine: a new document with no module, stylesheet or request,
// the browser's own floor, against which the UI's pages are read.
func floorControl(t *testing.T, p *page) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = io.WriteString(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>control</title></head>`+
			`<body><p>control</p><script>performance.mark("sched:drawn")</script></body></html>`)
	}))
	defer srv.Close()
	var runs []string
	for range 5 {
		p.do("leave", chromedp.Navigate("about:blank"))
		p.do("open the empty document", chromedp.Navigate(srv.URL+"/"))
		ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
		ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.getEntriesByName("sched:drawn")[0].startTime`))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, fmt.Sprintf("%.0f", ms))
	}
	return strings.Join(runs, ", ")
}
