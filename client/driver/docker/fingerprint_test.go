package docker

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedhq/sched/client/driver"
)

// fakeEngine answers the Engine API's ping and version on a fixed
// address, and can go away (its listener closed: connections refused)
// and come back on the same address.
type fakeEngine struct {
	t    *testing.T
	addr string

	mu  sync.Mutex
	srv *http.Server
}

func newFakeEngine(t *testing.T) *fakeEngine {
	f := &fakeEngine{t: t, addr: "127.0.0.1:" + strconv.Itoa(freePort(t))}
	f.up()
	t.Cleanup(f.down)
	return f
}

func (f *fakeEngine) up() {
	f.t.Helper()
	var l net.Listener
	var err error
	// The port was just free; the previous listener may take a moment to
	// let it go.
	deadline := time.Now().Add(5 * time.Second)
	for l, err = net.Listen("tcp", f.addr); err != nil && time.Now().Before(deadline); l, err = net.Listen("tcp", f.addr) {
		time.Sleep(20 * time.Millisecond) // retry interval of a deadline-bounded wait
	}
	if err != nil {
		f.t.Fatal(err)
	}
	mux := http.NewServeMux()
	ping := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		w.Write([]byte("OK"))
	}
	mux.HandleFunc("/_ping", ping)
	mux.HandleFunc("/{v}/_ping", ping)
	mux.HandleFunc("/{v}/version", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"Version":"20.10.99-fake","ApiVersion":"1.41"}`))
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	f.mu.Lock()
	f.srv = srv
	f.mu.Unlock()
}

func (f *fakeEngine) down() {
	f.mu.Lock()
	srv := f.srv
	f.srv = nil
	f.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// TestFingerprintFollowsTheEngine: the driver is healthy while the
// engine answers, unhealthy (with the reason) once it is gone, healthy
// again when it is back; a call the engine does not answer kicks the
// client to fingerprint at once.
func TestFingerprintFollowsTheEngine(t *testing.T) {
	eng := newFakeEngine(t)
	d, err := New(Config{Endpoint: "tcp://" + eng.addr})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown()
	var _ interface{ FingerprintKick() <-chan struct{} } = d
	if fp := d.Fingerprint(); !fp.Healthy || fp.Attributes["driver.docker.version"] != "20.10.99-fake" {
		t.Fatalf("fingerprint with the engine up: %+v", fp)
	}
	eng.down()
	fp := d.Fingerprint()
	if fp.Healthy || fp.Detected || !strings.Contains(fp.HealthDescription, "unreachable") {
		t.Fatalf("fingerprint with the engine gone: %+v", fp)
	}
	select {
	case <-d.FingerprintKick():
		t.Fatal("a kick before any failed call")
	default:
	}
	dir := t.TempDir()
	_, err = d.StartTask(&driver.TaskConfig{ID: "a1/web", AllocID: "a1", TaskName: "web",
		Config: map[string]any{"image": "sched-test-busybox:1"}, TaskDir: dir, LogDir: dir})
	if err == nil {
		t.Fatal("a task started on an engine that is gone")
	}
	select {
	case <-d.FingerprintKick():
	case <-time.After(5 * time.Second):
		t.Fatalf("no fingerprint kick after the failed start (%v)", err)
	}
	eng.up()
	if fp := d.Fingerprint(); !fp.Healthy || !fp.Detected {
		t.Fatalf("fingerprint with the engine back: %+v", fp)
	}
}
