package client

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

func fakeProc(t *testing.T, cpuinfo, meminfo string) procFS {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"cpuinfo": cpuinfo, "meminfo": meminfo} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return procFS{root: dir}
}

const twoCores = `processor	: 0
model name	: Test CPU
cpu MHz		: 2400.000

processor	: 1
model name	: Test CPU
cpu MHz		: 2400.000
`

func TestFingerprintFromProc(t *testing.T) {
	fp, err := fingerprint(fakeProc(t, twoCores, "MemTotal:       2048000 kB\nMemFree: 1 kB\n"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if fp.Cores != 2 || fp.TotalMHz != 4800 || fp.CPUSpeedGuessed || fp.MemoryBytes != 2048000*1024 {
		t.Fatalf("fingerprint = %+v", fp)
	}
	if fp.DiskFreeBytes == 0 || fp.KernelName == "" || fp.Hostname == "" {
		t.Fatalf("disk, kernel or hostname missing: %+v", fp)
	}
	a := fp.attributes()
	for k, want := range map[string]string{"cpu.numcores": "2", "cpu.totalcompute": "4800", "cpu.frequency": "2400",
		"memory.totalbytes": "2097152000", "cpu.modelname": "Test CPU", "os.name": "linux", "kernel.name": "linux"} {
		if a[k] != want {
			t.Errorf("attribute %s = %q, want %q", k, a[k], want)
		}
	}
	for _, k := range []string{"unique.hostname", "unique.storage.bytesfree", "cpu.arch", "kernel.version"} {
		if a[k] == "" {
			t.Errorf("attribute %s missing", k)
		}
	}
	if _, ok := a["cpu.frequency.source"]; ok {
		t.Error("a measured speed is marked as assumed")
	}
}

func TestFingerprintWithoutSpeedAssumes1000MHz(t *testing.T) {
	fp, _ := fingerprint(fakeProc(t, "processor : 0\nprocessor : 1\nprocessor : 2\n", "MemTotal: 1 kB\n"), t.TempDir())
	if fp.TotalMHz != 3000 || !fp.CPUSpeedGuessed {
		t.Fatalf("got %d MHz (guessed %v), want 3000 guessed", fp.TotalMHz, fp.CPUSpeedGuessed)
	}
	if src := fp.attributes()["cpu.frequency.source"]; !strings.Contains(src, "assumed 1000 MHz") {
		t.Fatalf("cpu.frequency.source = %q", src)
	}
}

func TestNodeIdentityIsKept(t *testing.T) {
	dir := t.TempDir()
	id1, sec1, err := nodeIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	id2, sec2, err := nodeIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !state.IsID(id1) || !state.IsID(sec1) || id1 == sec1 {
		t.Fatalf("id %q secret %q", id1, sec1)
	}
	if id1 != id2 || sec1 != sec2 {
		t.Fatalf("identity changed across loads: %s/%s then %s/%s", id1, sec1, id2, sec2)
	}
	if err := os.WriteFile(filepath.Join(dir, "node-id"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := nodeIdentity(dir); err == nil {
		t.Fatal("a corrupt node-id was accepted (or silently replaced)")
	}
}

func TestNewClientBuildsNode(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "", func(cfg *Config) {
		cfg.NodeName, cfg.NodeClass, cfg.NodePool, cfg.Datacenter = "n-1", "web", "edge", "dc7"
		cfg.Meta = map[string]string{"rack": "r1"}
		cfg.Reserved.CPU, cfg.Reserved.ReservedPorts = 100, "22"
		cfg.HTTPAddr = "127.0.0.1:9999"
	})
	n := c.Node()
	if n.ID != c.NodeID() || n.SecretID != c.SecretID() || n.Name != "n-1" || n.NodeClass != "web" || n.NodePool != "edge" || n.Datacenter != "dc7" {
		t.Fatalf("node = %+v", n)
	}
	if n.Meta["rack"] != "r1" || n.ReservedResources.CPU != 100 || n.ReservedResources.ReservedPorts != "22" || n.HTTPAddr != "127.0.0.1:9999" {
		t.Fatalf("node = %+v", n)
	}
	if n.NodeResources.CPU <= 0 || n.NodeResources.MemoryMB <= 0 || n.NodeResources.DiskMB <= 0 {
		t.Fatalf("resources = %+v", n.NodeResources)
	}
	for _, d := range []string{"mock", "raw_exec"} {
		if info := n.Drivers[d]; info == nil || !info.Detected || n.Attributes["driver."+d] != "1" {
			t.Fatalf("driver %s: %+v, attribute %q", d, info, n.Attributes["driver."+d])
		}
	}
	fs.mu.Lock()
	reg := fs.nodes[c.NodeID()]
	fs.mu.Unlock()
	if reg == nil || reg.SecretID != c.SecretID() || reg.Attributes["cpu.numcores"] == "" {
		t.Fatalf("the servers got %+v", reg)
	}
}
