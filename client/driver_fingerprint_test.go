package client

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// flakyDriver is a mock driver whose health a test switches, and that
// can kick the client to fingerprint it at once.
type flakyDriver struct {
	*driver.Mock
	down atomic.Bool
	kick chan struct{}
}

var _ FingerprintKicker = (*flakyDriver)(nil)

func (d *flakyDriver) Name() string { return "flaky" }

func (d *flakyDriver) Fingerprint() *state.DriverInfo {
	if d.down.Load() {
		return &state.DriverInfo{HealthDescription: "engine unreachable"}
	}
	return &state.DriverInfo{Detected: true, Healthy: true, HealthDescription: "Healthy",
		Attributes: map[string]string{"driver.flaky.version": "1"}}
}

func (d *flakyDriver) FingerprintKick() <-chan struct{} { return d.kick }

// registeredDriver is the flaky driver as the servers last saw the node.
func registeredDriver(fs *fakeServer, nodeID string) (*state.DriverInfo, map[string]string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := fs.nodes[nodeID]
	if n == nil {
		return nil, nil
	}
	return n.Drivers["flaky"], n.Attributes
}

// waitDriver waits until the servers see the flaky driver healthy (or
// not), with its attributes to match.
func waitDriver(t *testing.T, fs *fakeServer, nodeID string, healthy bool) {
	t.Helper()
	testutil.WaitForErr(t, 10*time.Second, fmt.Sprintf("the servers to see the driver healthy=%v", healthy), func() error {
		info, attrs := registeredDriver(fs, nodeID)
		if info == nil || info.Healthy != healthy || info.Detected != healthy {
			return fmt.Errorf("driver %+v", info)
		}
		if (attrs["driver.flaky"] == "1") != healthy || (attrs["driver.flaky.version"] == "1") != healthy {
			return fmt.Errorf("attributes %v", attrs)
		}
		return nil
	})
}

// TestDriverRefingerprintedPeriodically: a driver that goes unhealthy
// and comes back is seen so by the servers (the node registered again
// with its drivers), without a client restart.
func TestDriverRefingerprintedPeriodically(t *testing.T) {
	fs := newFakeServer(t)
	d := &flakyDriver{Mock: driver.NewMock(), kick: make(chan struct{}, 1)}
	c := testClient(t, fs, "", func(cfg *Config) {
		cfg.Drivers = append(cfg.Drivers, d)
		cfg.DriverFingerprintInterval = 20 * time.Millisecond
	})
	waitDriver(t, fs, c.NodeID(), true)
	d.down.Store(true)
	waitDriver(t, fs, c.NodeID(), false)
	if info, _ := registeredDriver(fs, c.NodeID()); info.HealthDescription != "engine unreachable" {
		t.Errorf("health description %q", info.HealthDescription)
	}
	d.down.Store(false)
	waitDriver(t, fs, c.NodeID(), true)
	if !c.Node().Drivers["flaky"].Healthy {
		t.Error("the client's own node does not show the driver healthy")
	}
}

// TestDriverKickRefingerprints: with a long interval, a driver's kick
// alone gets its new health to the servers; with no change, nothing is
// registered again.
func TestDriverKickRefingerprints(t *testing.T) {
	fs := newFakeServer(t)
	d := &flakyDriver{Mock: driver.NewMock(), kick: make(chan struct{}, 1)}
	c := testClient(t, fs, "", func(cfg *Config) {
		cfg.Drivers = append(cfg.Drivers, d)
		cfg.DriverFingerprintInterval = time.Hour
	})
	waitDriver(t, fs, c.NodeID(), true)
	fs.mu.Lock()
	before := fs.registers
	fs.mu.Unlock()
	if c.refingerprintDrivers() {
		t.Fatal("nothing changed, yet the node did")
	}
	d.down.Store(true)
	d.kick <- struct{}{}
	waitDriver(t, fs, c.NodeID(), false)
	fs.mu.Lock()
	after := fs.registers
	fs.mu.Unlock()
	if after != before+1 {
		t.Errorf("registrations %d -> %d, want one more", before, after)
	}
}
