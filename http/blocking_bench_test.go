package http

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/schedhq/sched/http/internal/apitest"
)

// Environment of the benchmark's client process (blockingClientMain).
const (
	envBlockingClientAddr  = "SCHED_BLOCKING_CLIENT_ADDR"
	envBlockingClientN     = "SCHED_BLOCKING_CLIENT_N"
	envBlockingClientQuery = "SCHED_BLOCKING_CLIENT_QUERY"
	// envBlockingWaiters overrides the benchmark's number of waiters.
	envBlockingWaiters = "SCHED_BLOCKING_WAITERS"
)

// BenchmarkBlockingWaiters parks many blocking reads of one list on a real
// HTTP server, then wakes them all with one write, and reports what the
// server process holds while they wait and at the peak of answering them,
// and how long the last answer took after the write.
//
// The waiters are connections from a child process (this test binary
// re-run as TestBlockingWaitersClient), so that the RSS measured here is
// the server's alone. Run it once:
//
//	go test ./http -run '^$' -bench BlockingWaiters -benchtime 1x
//
// SCHED_BLOCKING_WAITERS sets the number of waiters (default 10,000).
func BenchmarkBlockingWaiters(b *testing.B) {
	const jobs = 2000
	waiters := 10000
	if v := os.Getenv(envBlockingWaiters); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want a positive count", envBlockingWaiters, v)
		}
		waiters = n
	}
	raiseFileLimit(b, uint64(waiters)+1024)

	h := newHarness(b)
	for i := range jobs {
		h.register(apitest.TestJob(fmt.Sprintf("job-%05d", i)))
	}
	srv := httptest.NewServer(h.srv.Handler())
	defer srv.Close()
	answerBytes := len(h.OK(http.MethodGet, "/v1/jobs", nil, nil).Body.Bytes())

	for range b.N {
		index := h.Store.Index("jobs")
		if i := h.Store.Index("job_summary"); i > index {
			index = i
		}
		runtime.GC()
		debug.FreeOSMemory()
		before := procStatusMB(b, "VmRSS")

		child := exec.Command(os.Args[0], "-test.run=^TestBlockingWaitersClient$", "-test.v")
		child.Env = append(os.Environ(),
			envBlockingClientAddr+"="+srv.Listener.Addr().String(),
			envBlockingClientN+"="+strconv.Itoa(waiters),
			envBlockingClientQuery+"=/v1/jobs?index="+strconv.FormatUint(index, 10)+"&wait=5m")
		child.Stderr = os.Stderr
		out, err := child.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := child.Start(); err != nil {
			b.Fatal(err)
		}
		lines := make(chan string, 4)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		expect := func(want string, within time.Duration) {
			b.Helper()
			deadline := time.After(within)
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						b.Fatalf("client exited before %q", want)
					}
					if strings.HasPrefix(l, want) {
						return
					}
					if strings.HasPrefix(l, "error") {
						b.Fatalf("client: %s", l)
					}
				case <-deadline:
					b.Fatalf("no %q from the client within %v", want, within)
				}
			}
		}
		expect("sent", 5*time.Minute)
		// Every request is parked once the in-flight gauge reaches the
		// count and the server's memory stops moving.
		deadline := time.Now().Add(5 * time.Minute)
		for blockingInFlight(h.srv) < float64(waiters) {
			if time.Now().After(deadline) {
				b.Fatalf("only %v of %d waiting after 5m", blockingInFlight(h.srv), waiters)
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(2 * time.Second)
		runtime.GC()
		waiting := procStatusMB(b, "VmRSS")
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		goroutines := runtime.NumGoroutine()
		// What the process keeps once the runtime has returned the pages
		// it holds free (the scavenger does so by itself over minutes):
		// waiting is that plus garbage of the requests' parsing not yet
		// given back.
		debug.FreeOSMemory()
		waitingScavenged := procStatusMB(b, "VmRSS")
		if path := os.Getenv("SCHED_BLOCKING_HEAPPROFILE"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}

		resetPeakRSS(b)
		start := time.Now()
		h.register(apitest.TestJob(fmt.Sprintf("the-write-%d", time.Now().UnixNano())))
		expect("answered", 5*time.Minute)
		answered := time.Since(start)
		peak := procStatusMB(b, "VmHWM")
		if err := child.Wait(); err != nil {
			b.Fatalf("client: %v", err)
		}

		b.ReportMetric(before, "rss-before-MB")
		b.ReportMetric(waiting, "rss-waiting-MB")
		b.ReportMetric(waitingScavenged, "rss-waiting-scavenged-MB")
		b.ReportMetric(peak, "rss-peak-after-write-MB")
		b.ReportMetric(answered.Seconds(), "s-to-answer-all")
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-waiting-MB")
		b.ReportMetric(float64(ms.StackInuse)/(1<<20), "stack-waiting-MB")
		b.ReportMetric(float64(goroutines), "goroutines-waiting")
		b.ReportMetric(float64(waiters), "waiters")
		b.ReportMetric(float64(answerBytes)/1024, "answer-KB")
	}
}

// TestBlockingWaitersClient is BenchmarkBlockingWaiters' client process:
// it opens SCHED_BLOCKING_CLIENT_N connections, sends the query on each,
// prints "sent" once every request is written and "answered" once every
// answer has been read in full. Run alone, it skips.
func TestBlockingWaitersClient(t *testing.T) {
	addr := os.Getenv(envBlockingClientAddr)
	if addr == "" {
		t.Skip("the client process of BenchmarkBlockingWaiters")
	}
	n, _ := strconv.Atoi(os.Getenv(envBlockingClientN))
	query := os.Getenv(envBlockingClientQuery)
	raiseFileLimit(t, uint64(n)+1024)
	req := []byte("GET " + query + " HTTP/1.1\r\nHost: bench\r\n\r\n")
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Printf("error dial %d: %v\n", i, err)
			os.Exit(1)
		}
		if _, err := c.Write(req); err != nil {
			fmt.Printf("error write %d: %v\n", i, err)
			os.Exit(1)
		}
		conns[i] = c
	}
	fmt.Println("sent")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for _, c := range conns {
		wg.Go(func() {
			defer c.Close()
			resp, err := http.ReadResponse(bufio.NewReaderSize(c, 4096), nil)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				if err == nil && resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			if err != nil {
				mu.Lock()
				failed = append(failed, err.Error())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		fmt.Printf("error %d answers failed, first: %s\n", len(failed), failed[0])
		os.Exit(1)
	}
	fmt.Println("answered")
}

// blockingInFlight reads the server's blocking_queries_in_flight gauge.
func blockingInFlight(s *Server) float64 {
	var m dto.Metric
	s.metrics.blocking.Write(&m)
	return m.GetGauge().GetValue()
}

// procStatusMB reads a size field (VmRSS, VmHWM) of /proc/self/status in
// megabytes.
func procStatusMB(t testing.TB, field string) float64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for line := range bytes.Lines(data) {
		name, rest, ok := strings.Cut(string(line), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
		if err != nil {
			t.Fatalf("%s: %v", field, err)
		}
		return kb / 1024
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// resetPeakRSS starts VmHWM again from the current RSS.
func resetPeakRSS(t testing.TB) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Logf("cannot reset the peak RSS (%v): VmHWM is the process's peak", err)
	}
}

// raiseFileLimit lifts RLIMIT_NOFILE to at least n where the hard limit
// allows.
func raiseFileLimit(t testing.TB, n uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	lim.Cur = min(max(n, lim.Cur), lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < n {
		t.Skipf("cannot open %d files (limit %d): %v", n, lim.Cur, err)
	}
}
