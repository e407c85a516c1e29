package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/client/workloaduser"
)

// A root client gives each allocation a workload uid of 80000-89999 by
// default; a file may move or turn off the range; -dev runs tasks as the
// agent's own user; a range reaching root or upside down is refused.
func TestClientUsersBlock(t *testing.T) {
	load := func(t *testing.T, dev bool, body string) (*Config, error) {
		t.Helper()
		c := &Config{}
		if dev {
			c.applyDev()
		}
		if err := c.LoadFile(writeConfig(t, body)); err != nil {
			t.Fatal(err)
		}
		return c, c.Finish()
	}
	const client = "data_dir = \"/d\"\nclient {\n  enabled = true\n  servers = [\"10.0.0.1:4646\"]\n"
	prod, err := load(t, false, client+"}\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := prod.Client.Users.Range(); got != (workloaduser.Range{Min: 80000, Max: 89999}) {
		t.Errorf("default range %v", got)
	}
	moved, err := load(t, false, client+"  users {\n    dynamic_user_min = 100000\n    dynamic_user_max = 100009\n  }\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := moved.Client.Users.Range(); got != (workloaduser.Range{Min: 100000, Max: 100009}) {
		t.Errorf("configured range %v", got)
	}
	off, err := load(t, false, client+"  users {\n    dynamic = false\n  }\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := off.Client.Users.Range(); !got.IsZero() {
		t.Errorf("dynamic = false gives range %v", got)
	}
	dev, err := load(t, true, "client {\n  raw_exec {\n    enabled = true\n  }\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := dev.Client.Users.Range(); !got.IsZero() {
		t.Errorf("-dev gives range %v", got)
	}
	for body, want := range map[string]string{
		"  users {\n    dynamic_user_min = 0\n    dynamic_user_max = -1\n  }\n":        "dynamic_user_max: -1",
		"  users {\n    dynamic_user_min = 90000\n    dynamic_user_max = 80000\n  }\n": "below dynamic_user_min",
	} {
		if _, err := load(t, false, client+body+"}\n"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

// driver_fingerprint_interval is a duration of 1s to 1h; unset it is
// zero, the client's default (30s); anything else is refused naming the
// key.
func TestClientDriverFingerprintInterval(t *testing.T) {
	load := func(body string) (*Config, error) {
		c := &Config{}
		if err := c.LoadFile(writeConfig(t, "data_dir = \"/d\"\nclient {\n  enabled = true\n  servers = [\"10.0.0.1:4646\"]\n"+body+"}\n")); err != nil {
			return nil, err
		}
		return c, c.Finish()
	}
	def, err := load("")
	if err != nil {
		t.Fatal(err)
	}
	if def.Client.DriverFingerprintInterval != 0 {
		t.Errorf("unset: %v, want 0 (the client's default)", def.Client.DriverFingerprintInterval)
	}
	for body, want := range map[string]time.Duration{
		"  driver_fingerprint_interval = \"10s\"\n": 10 * time.Second,
		"  driver_fingerprint_interval = \"1s\"\n":  time.Second,
		"  driver_fingerprint_interval = \"1h\"\n":  time.Hour,
	} {
		c, err := load(body)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if got := c.Client.DriverFingerprintInterval; got != want {
			t.Errorf("%q: %v, want %v", body, got, want)
		}
	}
	for body, want := range map[string]string{
		"  driver_fingerprint_interval = \"500ms\"\n": "client.driver_fingerprint_interval: 500ms is not between 1s and 1h0m0s",
		"  driver_fingerprint_interval = \"2h\"\n":    "client.driver_fingerprint_interval: 2h0m0s is not between",
		"  driver_fingerprint_interval = \"-5s\"\n":   "client.driver_fingerprint_interval: -5s is not between",
		"  driver_fingerprint_interval = \"0s\"\n":    "", // explicit zero: the default
		"  driver_fingerprint_interval = \"soon\"\n":  "client.driver_fingerprint_interval: \"soon\" is not a duration",
		"  driver_fingerprint_interval = 30\n":        "driver_fingerprint_interval",
	} {
		_, err := load(body)
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", body, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", body, err, want)
		}
	}
}
