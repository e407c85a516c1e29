package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/schedhq/sched/state"
)

// machineInfo is what the client learned about its machine.
type machineInfo struct {
	Cores int
	// TotalMHz is Cores × the CPU's MHz; when /proc/cpuinfo gives no
	// speed it is Cores × 1000, and CPUSpeedGuessed says so.
	TotalMHz        int
	CPUSpeedGuessed bool
	CPUModel        string
	MemoryBytes     uint64
	DiskFreeBytes   uint64
	DiskTotalBytes  uint64
	Hostname        string
	OS              string
	KernelName      string
	KernelVersion   string
	Arch            string
}

// procFS is where fingerprinting reads /proc; tests point it elsewhere.
type procFS struct{ root string }

func (p procFS) open(name string) (io.ReadCloser, error) {
	return os.Open(filepath.Join(p.root, name))
}

// fingerprint measures the machine; dataDir is the filesystem whose free
// space counts as the node's disk.
func fingerprint(proc procFS, dataDir string) (*machineInfo, error) {
	fp := &machineInfo{OS: runtime.GOOS, Arch: runtime.GOARCH, Cores: runtime.NumCPU()}
	var errs []error
	if f, err := proc.open("cpuinfo"); err == nil {
		cores, mhz, model := parseCPUInfo(f)
		f.Close()
		if cores > 0 {
			fp.Cores = cores
		}
		fp.CPUModel = model
		if mhz > 0 {
			fp.TotalMHz = int(float64(fp.Cores) * mhz)
		}
	}
	if fp.TotalMHz == 0 {
		fp.TotalMHz, fp.CPUSpeedGuessed = fp.Cores*1000, true
	}
	if f, err := proc.open("meminfo"); err == nil {
		fp.MemoryBytes = parseMemInfo(f)
		f.Close()
	}
	if fp.MemoryBytes == 0 {
		errs = append(errs, errors.New("fingerprint: no MemTotal in /proc/meminfo"))
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dataDir, &st); err != nil {
		errs = append(errs, fmt.Errorf("fingerprint: statfs %s: %w", dataDir, err))
	} else {
		fp.DiskFreeBytes = st.Bavail * uint64(st.Bsize)
		fp.DiskTotalBytes = st.Blocks * uint64(st.Bsize)
	}
	fp.Hostname, _ = os.Hostname()
	var u syscall.Utsname
	if err := syscall.Uname(&u); err == nil {
		fp.KernelName = strings.ToLower(utsString(u.Sysname[:]))
		fp.KernelVersion = utsString(u.Release[:])
		if fp.Hostname == "" {
			fp.Hostname = utsString(u.Nodename[:])
		}
	} else {
		fp.KernelName = runtime.GOOS
	}
	return fp, errors.Join(errs...)
}

// utsString turns a NUL-terminated utsname field into a string; the
// element type differs between architectures (int8 or uint8).
func utsString[T int8 | uint8](b []T) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// parseCPUInfo counts the logical CPUs of /proc/cpuinfo and returns the
// first "cpu MHz" and "model name".
func parseCPUInfo(r io.Reader) (cores int, mhz float64, model string) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			cores++
		case "cpu MHz":
			if mhz == 0 {
				mhz, _ = strconv.ParseFloat(v, 64)
			}
		case "model name":
			if model == "" {
				model = v
			}
		}
	}
	return cores, mhz, model
}

// parseMemInfo returns MemTotal of /proc/meminfo in bytes.
func parseMemInfo(r io.Reader) uint64 {
	s := bufio.NewScanner(r)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, "MemTotal:") {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(line, "MemTotal:"))
		if len(f) == 0 {
			return 0
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// attributes are the node attributes of fp, as constraints see them
// (${attr.<key>}).
func (fp *machineInfo) attributes() map[string]string {
	a := map[string]string{
		"kernel.name":               fp.KernelName,
		"kernel.version":            fp.KernelVersion,
		"os.name":                   fp.OS,
		"cpu.arch":                  fp.Arch,
		"cpu.numcores":              strconv.Itoa(fp.Cores),
		"cpu.totalcompute":          strconv.Itoa(fp.TotalMHz),
		"memory.totalbytes":         strconv.FormatUint(fp.MemoryBytes, 10),
		"unique.hostname":           fp.Hostname,
		"unique.storage.bytesfree":  strconv.FormatUint(fp.DiskFreeBytes, 10),
		"unique.storage.bytestotal": strconv.FormatUint(fp.DiskTotalBytes, 10),
	}
	if fp.Cores > 0 {
		a["cpu.frequency"] = strconv.Itoa(fp.TotalMHz / fp.Cores)
	}
	if fp.CPUModel != "" {
		a["cpu.modelname"] = fp.CPUModel
	}
	if fp.CPUSpeedGuessed {
		// Constraints on speed should know it is a guess.
		a["cpu.frequency.source"] = "assumed 1000 MHz per core: /proc/cpuinfo has no cpu MHz"
	}
	return a
}

// nodeIdentity returns the node's ID and secret, made once and kept in
// <data_dir>/client/node-id and secret-id so a restart is the same node.
func nodeIdentity(clientDir string) (id, secret string, err error) {
	if id, err = persistedUUID(filepath.Join(clientDir, "node-id")); err != nil {
		return "", "", err
	}
	if secret, err = persistedUUID(filepath.Join(clientDir, "secret-id")); err != nil {
		return "", "", err
	}
	return id, secret, nil
}

// persistedUUID reads the UUID in path, or makes one and writes it there.
func persistedUUID(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		if id := string(bytes.TrimSpace(b)); state.IsID(id) {
			return id, nil
		}
		return "", fmt.Errorf("%s does not hold a UUID", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	id := state.NewID()
	if err := writeFileAtomic(path, []byte(id+"\n"), 0o600); err != nil {
		return "", err
	}
	return id, nil
}

// defaultIP returns the node's default address for ports: the first IPv4
// (else IPv6) address of iface, or fallback when iface is empty.
func defaultIP(iface, fallback string) (string, error) {
	if iface == "" {
		return fallback, nil
	}
	ifc, err := net.InterfaceByName(iface)
	if err != nil {
		return "", fmt.Errorf("network_interface %q: %w", iface, err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return "", fmt.Errorf("network_interface %q: %w", iface, err)
	}
	var v6 string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if n.IP.To4() != nil {
				return n.IP.String(), nil
			}
			if v6 == "" {
				v6 = n.IP.String()
			}
		}
	}
	if v6 == "" {
		return "", fmt.Errorf("network_interface %q has no address", iface)
	}
	return v6, nil
}

// buildNode turns the config, the fingerprint and the drivers'
// fingerprints into the node the client registers.
func (c *Client) buildNode(fp *machineInfo) *state.Node {
	cfg := c.cfg
	attrs := fp.attributes()
	drivers := make(map[string]*state.DriverInfo, len(cfg.Drivers))
	for _, d := range cfg.Drivers {
		info := d.Fingerprint()
		if info == nil {
			info = &state.DriverInfo{}
		}
		drivers[d.Name()] = info
		if info.Detected {
			attrs["driver."+d.Name()] = "1"
		}
		for k, v := range info.Attributes {
			attrs[k] = v
		}
	}
	name := cfg.NodeName
	if name == "" {
		name = fp.Hostname
	}
	hostNets := make(map[string]*state.HostNetwork, len(cfg.HostNetworks))
	for k, hn := range cfg.HostNetworks {
		cp := *hn
		cp.Name = k
		hostNets[k] = &cp
	}
	reserved := cfg.Reserved
	return &state.Node{
		ID:         c.nodeID,
		SecretID:   c.secretID,
		Name:       name,
		Datacenter: cfg.Datacenter,
		NodePool:   cfg.NodePool,
		NodeClass:  cfg.NodeClass,
		HTTPAddr:   cfg.HTTPAddr,
		Attributes: attrs,
		Meta:       maps.Clone(cfg.Meta),
		NodeResources: &state.NodeResources{
			CPU:      fp.TotalMHz,
			Cores:    fp.Cores,
			MemoryMB: int(fp.MemoryBytes >> 20),
			DiskMB:   int(fp.DiskFreeBytes >> 20),
			Networks: []*state.NetworkResource{{Mode: "host", Device: cfg.NetworkInterface, IP: c.ip}},
		},
		ReservedResources: &reserved,
		Drivers:           drivers,
		HostNetworks:      hostNets,
		HostVolumes:       hostVolumes(cfg.HostVolumes),
		Status:            state.NodeStatusReady,
	}
}

// DefaultDriverFingerprintInterval is how often the client asks its
// drivers again whether they work.
const DefaultDriverFingerprintInterval = 30 * time.Second

// FingerprintKicker is a driver that can tell the client to fingerprint
// it again now (docker, after a call the engine did not answer), instead
// of at the next interval.
type FingerprintKicker interface {
	// FingerprintKick receives a value whenever the driver's health may
	// have changed.
	FingerprintKick() <-chan struct{}
}

// driverFingerprintLoop fingerprints the drivers again every
// Config.DriverFingerprintInterval and whenever one kicks, and registers
// the node again when one of them changed (a docker engine that went away
// or came back): the servers then place only on healthy drivers.
func (c *Client) driverFingerprintLoop(ctx context.Context) {
	var kicks []<-chan struct{}
	for _, d := range c.cfg.Drivers {
		if k, ok := d.(FingerprintKicker); ok {
			kicks = append(kicks, k.FingerprintKick())
		}
	}
	kicked := make(chan struct{}, 1)
	for _, k := range kicks {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case <-k:
					select {
					case kicked <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	tick := time.NewTicker(c.cfg.DriverFingerprintInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-kicked:
		}
		if c.refingerprintDrivers() {
			c.needRegister()
		}
	}
}

// refingerprintDrivers asks every driver again and, when one's detection,
// health, description or attributes changed, replaces the node with one
// that says so. It reports whether the node changed.
func (c *Client) refingerprintDrivers() bool {
	old := c.nodeSnapshot()
	infos := make(map[string]*state.DriverInfo, len(c.cfg.Drivers))
	changed := false
	for _, d := range c.cfg.Drivers {
		info := d.Fingerprint()
		if info == nil {
			info = &state.DriverInfo{}
		}
		infos[d.Name()] = info
		if prev := old.Drivers[d.Name()]; prev == nil || !sameDriverInfo(prev, info) {
			changed = true
			c.log.Info("driver fingerprint changed", "driver", d.Name(), "detected", info.Detected,
				"healthy", info.Healthy, "health", info.HealthDescription)
		}
	}
	if !changed {
		return false
	}
	n := old.Copy()
	attrs := maps.Clone(old.Attributes)
	if attrs == nil {
		attrs = map[string]string{}
	}
	for name, prev := range old.Drivers {
		delete(attrs, "driver."+name)
		if prev != nil {
			for k := range prev.Attributes {
				delete(attrs, k)
			}
		}
	}
	for name, info := range infos {
		if info.Detected {
			attrs["driver."+name] = "1"
		}
		maps.Copy(attrs, info.Attributes)
	}
	n.Attributes, n.Drivers = attrs, infos
	c.nodeMu.Lock()
	c.node = n
	c.nodeMu.Unlock()
	return true
}

// sameDriverInfo compares what a fingerprint says, not when.
func sameDriverInfo(a, b *state.DriverInfo) bool {
	return a.Detected == b.Detected && a.Healthy == b.Healthy &&
		a.HealthDescription == b.HealthDescription && maps.Equal(a.Attributes, b.Attributes)
}
