package agent

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
)

// client.fs_max_reads_per_alloc and client.fs_max_reads reach the
// config; zero (unset) leaves the defaults to the HTTP layer, a negative
// value is refused.
func TestClientFSReadCaps(t *testing.T) {
	c := &Config{}
	if err := c.LoadFile(writeConfig(t, `
data_dir = "/d"
client {
  enabled                = true
  servers                = ["x:1"]
  fs_max_reads_per_alloc = 4
  fs_max_reads           = 9
}
`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if c.Client.FSMaxReadsPerAlloc != 4 || c.Client.FSMaxReads != 9 {
		t.Errorf("caps %d/%d, want 4/9", c.Client.FSMaxReadsPerAlloc, c.Client.FSMaxReads)
	}

	bad := &Config{}
	if err := bad.LoadFile(writeConfig(t, `data_dir = "/d"
client {
  enabled      = true
  servers      = ["x:1"]
  fs_max_reads = -1
}`)); err != nil {
		t.Fatal(err)
	}
	if err := bad.Finish(); err == nil || !strings.Contains(err.Error(), "client.fs_max_reads: must not be negative") {
		t.Errorf("negative cap: %v", err)
	}

	// Before the client runs there is no gate (and nothing to read).
	var x clientAPI
	if x.FSGate() != nil {
		t.Error("a gate before the client runs")
	}
}

// A dev agent's own client refuses a task's named pipe through the fs
// API and holds reads to client.fs_max_reads_per_alloc.
func TestDevAgentFSRefusesPipesAndCapsReads(t *testing.T) {
	a := startDevAgent(t, func(c *Config) { c.Client.FSMaxReadsPerAlloc = 1 })
	c := apiClient(t, a.HTTPAddr())
	if _, _, err := c.Jobs().Register(context.Background(), mockJob("web", 1), nil, nil); err != nil {
		t.Fatal(err)
	}
	id := waitRunning(t, c, "web", 1)[0].ID
	dir, err := a.Client().AllocDir(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "t", "local", "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := "http://" + a.HTTPAddr() + "/v1/client/fs/"
	if code, body := getBody(t, base+"cat/"+id+"?path=t/local/fifo"); code != http.StatusBadRequest || !strings.Contains(body, `path "t/local/fifo" is a named pipe, not a regular file`) {
		t.Fatalf("cat of a pipe: %d %q", code, body)
	}

	// One followed log takes the allocation's only place.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"logs/"+id+"?task=t&follow=true&plain=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	go io.Copy(io.Discard, resp.Body)
	if code, body := getBody(t, base+"ls/"+id+"?path=/"); code != http.StatusTooManyRequests || !strings.Contains(body, "at most 1") {
		t.Fatalf("a read over the cap: %d %q", code, body)
	}
	cancel()
	testutil.WaitFor(t, 5*time.Second, "the place of the ended stream", func() bool {
		code, _ := getBody(t, base+"ls/"+id+"?path=/")
		return code == http.StatusOK
	})
}
