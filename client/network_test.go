package client

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

// fakeNetHost records what networks asks of the host.
type fakeNetHost struct {
	dir     string
	ns      map[string]bool
	bridges map[string]bool
}

func newFakeNetHost(dir string) *fakeNetHost {
	return &fakeNetHost{dir: dir, ns: map[string]bool{}, bridges: map[string]bool{}}
}

func (f *fakeNetHost) nsPathFor(id string) string { return filepath.Join(f.dir, "sched-"+id) }
func (f *fakeNetHost) checkNS(p string) error {
	if !f.ns[p] {
		return os.ErrNotExist
	}
	return nil
}
func (f *fakeNetHost) ensureBridge(name string, _ netip.Addr, _ netip.Prefix) error {
	f.bridges[name] = true
	return nil
}
func (f *fakeNetHost) setup(an *allocNetwork, _ int) error { f.ns[an.NetNS] = true; return nil }
func (f *fakeNetHost) teardown(an *allocNetwork) error     { delete(f.ns, an.NetNS); return nil }
func (f *fakeNetHost) removeBridge(name string, _ netip.Addr, _ netip.Prefix) error {
	delete(f.bridges, name)
	return nil
}

func nopLog(string, ...any) {}

// TestNetworksAllocateAndRestore: addresses are handed out lowest first,
// past the bridge's own; a networks reading the same directory (a
// restarted client) finds each allocation's address and hands none out
// twice; the subnet running out is a clear error; the bridge goes with
// the last allocation.
func TestNetworksAllocateAndRestore(t *testing.T) {
	dir := t.TempDir()
	host := newFakeNetHost(t.TempDir())
	cfg := BridgeConfig{Name: "sbtest", Subnet: "10.9.8.0/29"}
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	n := newNetworks(dir, cfg, host, nopLog)
	ids := []string{state.NewID(), state.NewID(), state.NewID()}
	want := []string{"10.9.8.2", "10.9.8.3", "10.9.8.4"}
	for i, id := range ids {
		an, err := n.setup(id, "bridge", nil)
		if err != nil {
			t.Fatal(err)
		}
		if an.IP != want[i] || an.Veth != vethName(id) || n.nsPath(id) != host.nsPathFor(id) {
			t.Fatalf("allocation %d: %+v", i, an)
		}
	}
	if !host.bridges["sbtest"] {
		t.Fatal("no bridge made")
	}
	// A restarted client: the same addresses, and a new one is the next.
	n2 := newNetworks(dir, cfg, host, nopLog)
	an, err := n2.setup(ids[1], "bridge", nil)
	if err != nil || an.IP != "10.9.8.3" {
		t.Fatalf("restored: %+v, %v", an, err)
	}
	n2.teardown(ids[0])
	fourth := state.NewID()
	if an, err := n2.setup(fourth, "bridge", nil); err != nil || an.IP != "10.9.8.2" {
		t.Fatalf("the freed address is not handed out again: %+v, %v", an, err)
	}
	for _, id := range []string{state.NewID(), state.NewID()} {
		if _, err := n2.setup(id, "bridge", nil); err != nil {
			t.Fatal(err)
		}
	}
	_, err = n2.setup(state.NewID(), "bridge", nil)
	if !errors.Is(err, errNoAddress) {
		t.Fatalf("a full /29: %v, want errNoAddress", err)
	}
	for _, id := range append([]string{fourth}, ids[1:]...) {
		n2.teardown(id)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 || !host.bridges["sbtest"] {
		t.Fatalf("records %d, bridge %v: want the two left", len(ents), host.bridges)
	}
	n2.loadLocked()
	for id := range n2.live {
		n2.teardown(id)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 || host.bridges["sbtest"] || len(host.ns) != 0 {
		t.Fatalf("after the last teardown: records %d, bridges %v, namespaces %v", len(ents), host.bridges, host.ns)
	}
}

// TestBridgeConfigCheck: bad names and subnets are refused.
func TestBridgeConfigCheck(t *testing.T) {
	for _, c := range []BridgeConfig{
		{Name: "a-name-far-too-long"}, {Name: "br/0"}, {Subnet: "10.0.0.0/8"}, {Subnet: "10.0.0.0/30"},
		{Subnet: "fd00::/64"}, {Subnet: "nope"},
	} {
		if err := c.check(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	var c BridgeConfig
	if err := c.check(); err != nil || c.Name != DefaultBridgeName || c.Subnet != DefaultBridgeSubnet {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
}

// failingNetHost fails every namespace it is asked to make.
type failingNetHost struct{ *fakeNetHost }

func (f failingNetHost) setup(an *allocNetwork, n int) error {
	f.fakeNetHost.setup(an, n) // made halfway
	return errors.New("veth: operation not permitted")
}

// TestNetworksSetupFailureLeavesNothing: a namespace that cannot be
// made fails the setup with the cause, and leaves no record, namespace,
// address or bridge behind; a host port another process holds fails it
// too, naming the port.
func TestNetworksSetupFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	host := failingNetHost{newFakeNetHost(t.TempDir())}
	cfg := BridgeConfig{}
	cfg.check()
	n := newNetworks(dir, cfg, host, nopLog)
	id := state.NewID()
	if _, err := n.setup(id, "bridge", nil); err == nil || !strings.Contains(err.Error(), "operation not permitted") {
		t.Fatalf("setup: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 || len(host.ns) != 0 || len(host.bridges) != 0 || n.nsPath(id) != "" {
		t.Fatalf("left: records %d, namespaces %v, bridges %v", len(ents), host.ns, host.bridges)
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	ok := newNetworks(t.TempDir(), cfg, newFakeNetHost(t.TempDir()), nopLog)
	_, err = ok.setup(state.NewID(), "bridge", []netPort{{Label: "http", HostIP: "127.0.0.1", HostPort: port, To: 8080}})
	if err == nil || !strings.Contains(err.Error(), "port http") {
		t.Fatalf("setup with a taken host port: %v", err)
	}
	if len(ok.live) != 0 {
		t.Fatalf("a failed setup is still recorded: %v", ok.live)
	}
}
