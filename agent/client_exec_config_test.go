package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/client/driver"
)

// TestConfigurationDocExample loads the full example of
// docs/configuration.md: every key it shows parses, and the exec and
// host_volume blocks say what the example says.
func TestConfigurationDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```hcl\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/configuration.md has no hcl example")
	}
	path := filepath.Join(t.TempDir(), "example.hcl")
	os.WriteFile(path, []byte(example), 0o600)
	c := DefaultConfig()
	if err := c.LoadFile(path); err != nil {
		t.Fatalf("the example does not load: %v", err)
	}
	cc := c.Client
	if errs := cc.Exec.finish(); len(errs) > 0 {
		t.Fatalf("exec block: %v", errs)
	}
	if cc.Exec.PIDsLimit != 4096 || cc.Exec.CgroupParent != "/sched" || len(cc.Exec.ChrootEnv) != len(driver.DefaultChrootEnv) {
		t.Errorf("exec block: %+v", cc.Exec)
	}
	if hv := cc.HostVolumes["shared"]; hv == nil || hv.Path != "/srv/shared" || hv.ReadOnly {
		t.Errorf("host_volume shared: %+v", hv)
	}
	if cc.DriverFingerprintInterval != 30*time.Second {
		t.Errorf("driver_fingerprint_interval: %v, want 30s", cc.DriverFingerprintInterval)
	}
}

func TestExecConfigBadInput(t *testing.T) {
	for _, c := range []struct {
		cfg  ExecConfig
		want string
	}{
		{ExecConfig{ChrootEnv: map[string]string{"bin": "/bin"}}, "chroot_env"},
		{ExecConfig{ChrootEnv: map[string]string{"/": "/"}}, "chroot_env"},
		{ExecConfig{CgroupParent: "sched"}, "cgroup_parent"},
		{ExecConfig{CgroupParent: "/sched/../x"}, "cgroup_parent"},
		{ExecConfig{PIDsLimit: -1}, "pids_limit"},
	} {
		errs := c.cfg.finish()
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "client.exec."+c.want) {
			t.Errorf("%+v: errs %v, want one naming client.exec.%s", c.cfg, errs, c.want)
		}
	}
	if errs := checkHostVolumes(map[string]*HostVolumeConfig{"v": {Path: "data"}}); len(errs) != 1 || !strings.Contains(errs[0].Error(), `host_volume "v"`) {
		t.Errorf("relative host volume path: %v", errs)
	}
	var d ExecConfig
	d.finish()
	if !d.Enabled || len(d.DeniedUsers) != 1 || d.DeniedUsers[0] != "root" {
		t.Errorf("defaults: %+v", d)
	}
	off := ExecConfig{Enabled: false, enabledSet: true}
	off.finish()
	if drv := off.driver(driver.NewExec(nil)); !drv.Disabled || drv.Fingerprint().Detected {
		t.Errorf("a disabled exec block gives an enabled driver")
	}
}
