package client

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netHost makes and removes what an allocation's network needs on the
// host. linuxNetHost does it with netlink; tests may fake it.
type netHost interface {
	// nsPathFor is where the allocation's namespace is kept.
	nsPathFor(allocID string) string
	// checkNS fails unless path holds a network namespace.
	checkNS(path string) error
	// ensureBridge makes the bridge (address gw in pfx, up) unless it
	// exists.
	ensureBridge(name string, gw netip.Addr, pfx netip.Prefix) error
	// setup makes an's namespace (loopback up) and, in bridge mode, its
	// veth pair, address and default route.
	setup(an *allocNetwork, prefixLen int) error
	// teardown removes an's veth pair and namespace; what is already
	// gone is no error.
	teardown(an *allocNetwork) error
	// removeBridge removes the bridge and its iptables rules.
	removeBridge(name string, gw netip.Addr, pfx netip.Prefix) error
}

// linuxNetHost is the real netHost. Namespaces are bind mounts in
// NSDir, named "sched-<alloc id>".
type linuxNetHost struct {
	// NSDir is where namespaces are kept; empty means /var/run/netns.
	NSDir string
}

var _ netHost = linuxNetHost{}

func (h linuxNetHost) nsPathFor(allocID string) string {
	dir := h.NSDir
	if dir == "" {
		dir = "/var/run/netns"
	}
	return filepath.Join(dir, "sched-"+allocID)
}

// nsfsMagic is the file system type of a namespace file.
const nsfsMagic = 0x6e736673

func (linuxNetHost) checkNS(path string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return err
	}
	if st.Type != nsfsMagic {
		return fmt.Errorf("%s is not a network namespace", path)
	}
	return nil
}

// newNamedNS makes a network namespace and keeps it at path. The work is
// done on a thread of its own that is never handed back to the Go
// scheduler (the goroutine ends locked), so no other goroutine ever runs
// in the new namespace.
func newNamedNS(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("namespace file: %w", err)
	}
	f.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: this thread ends with the goroutine.
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		if err := unix.Mount(self, path, "", unix.MS_BIND, ""); err != nil {
			errc <- fmt.Errorf("keep the namespace at %s: %w", path, err)
			return
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

func (h linuxNetHost) setup(an *allocNetwork, prefixLen int) error {
	if err := newNamedNS(an.NetNS); err != nil {
		return err
	}
	ns, err := netns.GetFromPath(an.NetNS)
	if err != nil {
		return err
	}
	defer ns.Close()
	in, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", an.NetNS, err)
	}
	defer in.Close()
	lo, err := in.LinkByName("lo")
	if err == nil {
		err = in.LinkSetUp(lo)
	}
	if err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	if an.Mode != "bridge" {
		return nil
	}
	br, err := netlink.LinkByName(an.Bridge)
	if err != nil {
		return fmt.Errorf("bridge %s: %w", an.Bridge, err)
	}
	veth := &netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: an.Veth, MasterIndex: br.Attrs().Index, MTU: br.Attrs().MTU},
		PeerName:  "eth0", PeerNamespace: netlink.NsFd(int(ns)),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("veth %s: %w", an.Veth, err)
	}
	host, err := netlink.LinkByName(an.Veth)
	if err == nil {
		err = netlink.LinkSetUp(host)
	}
	if err != nil {
		return fmt.Errorf("veth %s up: %w", an.Veth, err)
	}
	eth0, err := in.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("eth0 in %s: %w", an.NetNS, err)
	}
	ip := net.ParseIP(an.IP)
	if ip == nil {
		return fmt.Errorf("address %q", an.IP)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: net.CIDRMask(prefixLen, 32)}}
	if err := in.AddrAdd(eth0, addr); err != nil {
		return fmt.Errorf("address %s on eth0: %w", addr, err)
	}
	if err := in.LinkSetUp(eth0); err != nil {
		return fmt.Errorf("eth0 up: %w", err)
	}
	gw, err := bridgeGateway(br)
	if err != nil {
		return err
	}
	if err := in.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: gw}); err != nil {
		return fmt.Errorf("default route via %s: %w", gw, err)
	}
	return nil
}

// bridgeGateway is the bridge's IPv4 address.
func bridgeGateway(br netlink.Link) (net.IP, error) {
	addrs, err := netlink.AddrList(br, netlink.FAMILY_V4)
	if err != nil || len(addrs) == 0 {
		return nil, fmt.Errorf("bridge %s has no IPv4 address", br.Attrs().Name)
	}
	return addrs[0].IP, nil
}

func (h linuxNetHost) ensureBridge(name string, gw netip.Addr, pfx netip.Prefix) error {
	br, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if !errors.As(err, &nf) {
			return err
		}
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
		if br, err = netlink.LinkByName(name); err != nil {
			return err
		}
	} else if br.Type() != "bridge" {
		return fmt.Errorf("%s exists and is a %s, not a bridge", name, br.Type())
	}
	want := &netlink.Addr{IPNet: &net.IPNet{IP: gw.AsSlice(), Mask: net.CIDRMask(pfx.Bits(), 32)}}
	addrs, err := netlink.AddrList(br, netlink.FAMILY_V4)
	if err != nil {
		return err
	}
	have := false
	for _, a := range addrs {
		have = have || a.IPNet.String() == want.IPNet.String()
	}
	if !have {
		if err := netlink.AddrAdd(br, want); err != nil {
			return fmt.Errorf("address %s: %w", want, err)
		}
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return err
	}
	return bridgeRules(name, pfx, true)
}

func (h linuxNetHost) teardown(an *allocNetwork) error {
	var errs []error
	if an.Veth != "" {
		if l, err := netlink.LinkByName(an.Veth); err == nil {
			if err := netlink.LinkDel(l); err != nil {
				errs = append(errs, fmt.Errorf("veth %s: %w", an.Veth, err))
			}
		}
	}
	if an.NetNS != "" {
		if err := unix.Unmount(an.NetNS, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", an.NetNS, err))
		}
		if err := os.Remove(an.NetNS); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (h linuxNetHost) removeBridge(name string, _ netip.Addr, pfx netip.Prefix) error {
	var errs []error
	if err := bridgeRules(name, pfx, false); err != nil {
		errs = append(errs, err)
	}
	if l, err := netlink.LinkByName(name); err == nil {
		if err := netlink.LinkDel(l); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// bridgeRules adds (or deletes) the bridge's iptables rules when the host
// has iptables: masquerading of what its namespaces send out of the host,
// and acceptance in FORWARD (Docker's policy there is DROP). Each rule is
// marked with the comment "sched bridge <name>". Without iptables nothing
// is added: ports still work (the client forwards them itself), the
// namespaces only cannot reach beyond the host.
func bridgeRules(name string, pfx netip.Prefix, add bool) error {
	ipt, err := exec.LookPath("iptables")
	if err != nil {
		return nil
	}
	mark := []string{"-m", "comment", "--comment", "sched bridge " + name}
	rules := [][]string{
		append([]string{"-t", "nat", "POSTROUTING", "-s", pfx.String(), "!", "-o", name, "-j", "MASQUERADE"}, mark...),
		append([]string{"-t", "filter", "FORWARD", "-i", name, "-j", "ACCEPT"}, mark...),
		append([]string{"-t", "filter", "FORWARD", "-o", name, "-j", "ACCEPT"}, mark...),
	}
	run := func(op string, r []string) error {
		args := append([]string{"-w", "5", r[0], r[1], op, r[2]}, r[3:]...)
		if op == "-I" {
			args = append([]string{"-w", "5", r[0], r[1], op, r[2], "1"}, r[3:]...)
		}
		out, err := exec.Command(ipt, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	var errs []error
	for _, r := range rules {
		present := run("-C", r) == nil
		switch {
		case add && !present:
			op := "-A"
			if r[1] == "filter" {
				op = "-I"
			}
			if err := run(op, r); err != nil {
				errs = append(errs, err)
			}
		case !add:
			for i := 0; present && i < 8; i++ {
				if err := run("-D", r); err != nil {
					errs = append(errs, err)
					break
				}
				present = run("-C", r) == nil
			}
		}
	}
	return errors.Join(errs...)
}
