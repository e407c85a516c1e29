package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/state"
)

// An allocation whose group asks for network mode "bridge" or "none" and
// that runs exec tasks gets a network namespace of its own, made here
// before its tasks start and shared by its exec tasks (the exec driver's
// init joins it):
//
//   - "none": the namespace has only its loopback interface, up.
//   - "bridge": also a veth pair, one end in the host's bridge (Bridge,
//     default "sched0" on 172.26.96.0/20, made on first use with the
//     subnet's first address), the other the namespace's eth0 with an
//     address of the subnet and a default route through the bridge. Each
//     of the group's ports is forwarded from its host address and port to
//     the namespace's address and the port's `to` (its own value when
//     `to` is unset), by the client itself (network_forward.go).
//
// What an allocation got (its namespace, address, veth and ports) is kept
// in <data_dir>/client/network/<alloc id>.json: the addresses in use are
// those files, so a restarted client hands none out twice, finds each
// namespace again and listens on its ports again. It is all removed when
// the allocation's tasks have finished (or it is destroyed), and the
// bridge (with its iptables rules) goes with the last allocation that
// used it.
//
// docker tasks keep their own network (their `network_mode`), and
// raw_exec tasks run in the host's: neither joins the namespace.

// Defaults of BridgeConfig.
const (
	DefaultBridgeName   = "sched0"
	DefaultBridgeSubnet = "172.26.96.0/20"
)

// BridgeConfig is the host bridge of exec tasks in network mode bridge.
type BridgeConfig struct {
	// Name of the bridge interface; empty means DefaultBridgeName. At
	// most 15 bytes.
	Name string
	// Subnet is the bridge's IPv4 network, a CIDR between /16 and /29:
	// the bridge takes its first address, allocations the others. Empty
	// means DefaultBridgeSubnet.
	Subnet string
}

// check fills the defaults and validates.
func (b *BridgeConfig) check() error {
	if b.Name == "" {
		b.Name = DefaultBridgeName
	}
	if b.Subnet == "" {
		b.Subnet = DefaultBridgeSubnet
	}
	if len(b.Name) > 15 || !validIfName(b.Name) {
		return fmt.Errorf("client: bridge network name %q is not an interface name (1-15 letters, digits, '-', '_', '.')", b.Name)
	}
	p, err := netip.ParsePrefix(b.Subnet)
	if err != nil || !p.Addr().Is4() {
		return fmt.Errorf("client: bridge network subnet %q is not an IPv4 CIDR", b.Subnet)
	}
	if p.Bits() < 16 || p.Bits() > 29 {
		return fmt.Errorf("client: bridge network subnet %q must be between /16 and /29", b.Subnet)
	}
	return nil
}

func validIfName(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return s != "" && s != "." && s != ".."
}

// netPort is one port forwarded from the host into an allocation's
// namespace.
type netPort struct {
	Label    string `json:"label"`
	HostIP   string `json:"host_ip"`
	HostPort int    `json:"host_port"`
	To       int    `json:"to"`
}

// allocNetwork is what an allocation got, as persisted.
type allocNetwork struct {
	AllocID string `json:"alloc_id"`
	Mode    string `json:"mode"`
	// NetNS is the namespace's path (a bind mount of it that keeps it
	// alive): /var/run/netns/<name>, so `ip netns` lists it.
	NetNS string `json:"netns"`
	// Bridge mode only: the namespace's address, the host's end of the
	// veth pair, the bridge and the forwarded ports.
	IP     string    `json:"ip,omitempty"`
	Veth   string    `json:"veth,omitempty"`
	Bridge string    `json:"bridge,omitempty"`
	Ports  []netPort `json:"ports,omitempty"`
}

// networks is the client's allocation networks. Its methods are safe for
// concurrent use; setting up and tearing down are serialized.
type networks struct {
	dir    string
	bridge BridgeConfig
	host   netHost
	log    func(msg string, args ...any)

	mu     sync.Mutex
	loaded bool
	live   map[string]*allocNetwork
	fwd    map[string]*forwarder
}

// newNetworks returns the networks kept under dir.
func newNetworks(dir string, bridge BridgeConfig, host netHost, log func(string, ...any)) *networks {
	return &networks{dir: dir, bridge: bridge, host: host, log: log,
		live: map[string]*allocNetwork{}, fwd: map[string]*forwarder{}}
}

// maxNetworkFile bounds a persisted record.
const maxNetworkFile = 1 << 20

// loadLocked reads the persisted records once.
func (n *networks) loadLocked() {
	if n.loaded {
		return
	}
	n.loaded = true
	ents, err := os.ReadDir(n.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if filepath.Ext(e.Name()) != ".json" {
			continue
		}
		p := filepath.Join(n.dir, e.Name())
		fi, err := e.Info()
		if err != nil || fi.Size() > maxNetworkFile {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var an allocNetwork
		if json.Unmarshal(b, &an) != nil || !state.IsID(an.AllocID) {
			n.log("network: unreadable record", "file", p)
			continue
		}
		n.live[an.AllocID] = &an
	}
}

func (n *networks) recordPath(allocID string) string {
	return filepath.Join(n.dir, allocID+".json")
}

func (n *networks) save(an *allocNetwork) error {
	if err := os.MkdirAll(n.dir, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(an)
	if err != nil {
		return err
	}
	return writeFileAtomic(n.recordPath(an.AllocID), b, 0o600)
}

// nsPath is the allocation's namespace, "" when it has none.
func (n *networks) nsPath(allocID string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if an := n.live[allocID]; an != nil {
		return an.NetNS
	}
	return ""
}

// setup gives the allocation its network (mode "none" or "bridge"), or
// finds again the one a previous client run made, and forwards its ports.
func (n *networks) setup(allocID, mode string, ports []netPort) (*allocNetwork, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.loadLocked()
	if an := n.live[allocID]; an != nil {
		if err := n.host.checkNS(an.NetNS); err == nil {
			if err := n.forwardLocked(an); err != nil {
				return nil, err
			}
			return an, nil
		}
		// The namespace is gone (the host restarted): make it again, with
		// the same address.
		n.host.teardown(an)
	}
	an := &allocNetwork{AllocID: allocID, Mode: mode, NetNS: n.host.nsPathFor(allocID)}
	if prev := n.live[allocID]; prev != nil {
		an.IP = prev.IP
	}
	if mode == "bridge" {
		gw, pfx, err := n.bridgeAddr()
		if err != nil {
			return nil, err
		}
		if an.IP == "" {
			ip, err := n.allocateLocked(pfx, gw)
			if err != nil {
				return nil, err
			}
			an.IP = ip.String()
		}
		an.Bridge, an.Veth, an.Ports = n.bridge.Name, vethName(allocID), ports
	}
	// Recorded first, so that a crash halfway leaves a record to clean.
	n.live[allocID] = an
	if err := n.save(an); err != nil {
		delete(n.live, allocID)
		return nil, fmt.Errorf("network of %s: %w", allocID, err)
	}
	fail := func(err error) (*allocNetwork, error) {
		n.teardownLocked(allocID)
		return nil, err
	}
	if mode == "bridge" {
		gw, pfx, _ := n.bridgeAddr()
		if err := n.host.ensureBridge(n.bridge.Name, gw, pfx); err != nil {
			return fail(fmt.Errorf("bridge %s: %w", n.bridge.Name, err))
		}
	}
	if err := n.host.setup(an, n.bridgePrefixLen()); err != nil {
		return fail(err)
	}
	if err := n.forwardLocked(an); err != nil {
		return fail(err)
	}
	return an, nil
}

// bridgeAddr is the bridge's own address (the subnet's first) and the
// subnet.
func (n *networks) bridgeAddr() (netip.Addr, netip.Prefix, error) {
	p, err := netip.ParsePrefix(n.bridge.Subnet)
	if err != nil {
		return netip.Addr{}, netip.Prefix{}, err
	}
	p = p.Masked()
	return p.Addr().Next(), p, nil
}

func (n *networks) bridgePrefixLen() int {
	_, p, _ := n.bridgeAddr()
	return p.Bits()
}

// errNoAddress: every address of the bridge's subnet is held.
var errNoAddress = errors.New("no address free")

// allocateLocked picks the lowest address of pfx that is not the
// network's, the broadcast, gw, nor held by another allocation.
func (n *networks) allocateLocked(pfx netip.Prefix, gw netip.Addr) (netip.Addr, error) {
	held := map[netip.Addr]bool{gw: true}
	for _, an := range n.live {
		if a, err := netip.ParseAddr(an.IP); err == nil {
			held[a] = true
		}
	}
	size := new(big.Int).Lsh(big.NewInt(1), uint(32-pfx.Bits())).Int64()
	a := pfx.Addr().Next()
	for i := int64(1); i < size-1; i, a = i+1, a.Next() {
		if !held[a] {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("bridge %s: %w in %s (%d allocations hold the rest)", n.bridge.Name, errNoAddress, pfx, len(held)-1)
}

// forwardLocked listens on an's ports, unless it already does.
func (n *networks) forwardLocked(an *allocNetwork) error {
	if an.Mode != "bridge" || len(an.Ports) == 0 || n.fwd[an.AllocID] != nil {
		return nil
	}
	f, err := startForwarder(an.IP, an.Ports, n.log)
	if err != nil {
		return fmt.Errorf("forward the ports of %s: %w", an.AllocID, err)
	}
	n.fwd[an.AllocID] = f
	return nil
}

// teardown removes the allocation's network: forwarders, veth pair,
// namespace, record; and the bridge when no allocation uses it any more.
func (n *networks) teardown(allocID string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.loadLocked()
	n.teardownLocked(allocID)
}

func (n *networks) teardownLocked(allocID string) {
	if f := n.fwd[allocID]; f != nil {
		f.close()
		delete(n.fwd, allocID)
	}
	an := n.live[allocID]
	if an == nil {
		return
	}
	if err := n.host.teardown(an); err != nil {
		n.log("network: teardown left something behind", "alloc", allocID, "error", err)
	}
	delete(n.live, allocID)
	if err := os.Remove(n.recordPath(allocID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		n.log("network: record left behind", "alloc", allocID, "error", err)
	}
	if an.Bridge == "" {
		return
	}
	for _, o := range n.live {
		if o.Bridge == an.Bridge {
			return
		}
	}
	gw, pfx, _ := n.bridgeAddr()
	if err := n.host.removeBridge(an.Bridge, gw, pfx); err != nil {
		n.log("network: bridge left behind", "bridge", an.Bridge, "error", err)
	}
}

// close stops every forwarder (the client is shutting down; the
// namespaces and their tasks stay for the next client run).
func (n *networks) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, f := range n.fwd {
		f.close()
		delete(n.fwd, id)
	}
}

// vethName is the host end of an allocation's veth pair: "sv" and the
// first 12 hex digits of its ID (interface names have 15 bytes at most).
func vethName(allocID string) string {
	hex := make([]byte, 0, 12)
	for i := 0; i < len(allocID) && len(hex) < 12; i++ {
		if allocID[i] != '-' {
			hex = append(hex, allocID[i])
		}
	}
	return "sv" + string(hex)
}

// groupNetworkPorts are the group's ports as forwarded into a bridge
// namespace: to the port's `to`, or its own value when `to` is unset.
func groupNetworkPorts(a *state.Allocation, defaultIP string) []netPort {
	var out []netPort
	for _, p := range allocPorts(a, nil) {
		to := p.To
		if to <= 0 {
			to = p.Value
		}
		ip := p.HostIP
		if ip == "" {
			ip = defaultIP
		}
		out = append(out, netPort{Label: p.Label, HostIP: ip, HostPort: p.Value, To: to})
	}
	return out
}

// setupNetwork gives the allocation its network namespace when its group
// asks for mode bridge or none and it runs exec tasks (the only driver
// that joins one).
func (ar *allocRunner) setupNetwork() error {
	tg := ar.group()
	mode := networkMode(tg)
	if ar.c.nets == nil || (mode != "bridge" && mode != "none") || tg == nil ||
		!slices.ContainsFunc(tg.Tasks, func(t *state.Task) bool { return t.Driver == driver.ExecName }) {
		return nil
	}
	_, err := ar.c.nets.setup(ar.id, mode, groupNetworkPorts(ar.alloc(), ar.c.ip))
	if err != nil {
		return fmt.Errorf("network mode %s: %w", mode, err)
	}
	return nil
}

// teardownNetwork removes the allocation's network, if it has one.
func (ar *allocRunner) teardownNetwork() {
	if ar.c.nets != nil {
		ar.c.nets.teardown(ar.id)
	}
}

// netNSPath is the allocation's network namespace for its exec tasks
// ("" when it has none).
func (ar *allocRunner) netNSPath() string {
	if ar.c.nets == nil {
		return ""
	}
	return ar.c.nets.nsPath(ar.id)
}
