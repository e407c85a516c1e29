package client

import (
	"errors"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestResolveVolumeMounts(t *testing.T) {
	node := &state.Node{HostVolumes: map[string]*state.ClientHostVolumeConfig{
		"shared": {Name: "shared", Path: "/srv/shared"},
		"certs":  {Name: "certs", Path: "/etc/certs", ReadOnly: true},
	}}
	tg := &state.TaskGroup{Volumes: map[string]*state.VolumeRequest{
		"data":  {Name: "data", Type: "host", Source: "shared"},
		"ro":    {Name: "ro", Type: "host", Source: "shared", ReadOnly: true},
		"certs": {Name: "certs", Type: "host", Source: "certs", ReadOnly: true},
		"rw":    {Name: "rw", Type: "host", Source: "certs"},
		"gone":  {Name: "gone", Type: "host", Source: "nowhere"},
		"csi":   {Name: "csi", Type: "csi", Source: "ebs"},
	}}
	mount := func(vol, dst string, ro bool) *state.Task {
		return &state.Task{Name: "t", VolumeMounts: []*state.VolumeMount{{Volume: vol, Destination: dst, ReadOnly: ro}}}
	}
	for _, c := range []struct {
		name     string
		task     *state.Task
		hostPath string
		taskPath string
		ro       bool
		err      string
	}{
		{"read-write", mount("data", "/data", false), "/srv/shared", "/data", false, ""},
		{"mount says read-only", mount("data", "/data", true), "/srv/shared", "/data", true, ""},
		{"request says read-only", mount("ro", "/data", false), "/srv/shared", "/data", true, ""},
		{"read-only volume read-only", mount("certs", "/certs", false), "/etc/certs", "/certs", true, ""},
		{"destination kept inside", mount("data", "../../etc", false), "/srv/shared", "/etc", false, ""},
		{"read-write on read-only volume", mount("rw", "/certs", false), "", "", false, `host volume "certs" is read-only`},
		{"undeclared", mount("cache", "/cache", false), "", "", false, `volume "cache" is not declared`},
		{"missing on node", mount("gone", "/x", false), "", "", false, `host volume "nowhere", which this node does not have`},
		{"csi", mount("csi", "/x", false), "", "", false, `type "csi"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms, err := ResolveVolumeMounts(node, tg, c.task)
			if c.err != "" {
				if err == nil || !errors.Is(err, ErrVolume) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want ErrVolume with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != 1 || ms[0].HostPath != c.hostPath || ms[0].TaskPath != c.taskPath || ms[0].ReadOnly != c.ro {
				t.Fatalf("mounts = %+v, want %s at %s ro=%v", ms[0], c.hostPath, c.taskPath, c.ro)
			}
		})
	}
	if ms, err := ResolveVolumeMounts(nil, tg, &state.Task{Name: "t"}); ms != nil || err != nil {
		t.Errorf("no mounts: %v, %v", ms, err)
	}
}

func TestCheckHostVolumes(t *testing.T) {
	dir := t.TempDir()
	ok := map[string]*state.ClientHostVolumeConfig{"d": {Path: dir}}
	if errs := checkHostVolumes(ok); len(errs) != 0 {
		t.Fatalf("valid volume refused: %v", errs)
	}
	for name, hv := range map[string]*state.ClientHostVolumeConfig{
		"relative": {Path: "data"}, "missing": {Path: dir + "/missing"}, "file": {Path: "/etc/hostname"}, "null": nil,
	} {
		errs := checkHostVolumes(map[string]*state.ClientHostVolumeConfig{name: hv})
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), `host_volume "`+name+`"`) {
			t.Errorf("%s: errs = %v, want one naming the volume", name, errs)
		}
	}
	if vols := hostVolumes(ok); vols["d"].Name != "d" || ok["d"].Name != "" {
		t.Errorf("hostVolumes: %+v (config changed: %q)", vols["d"], ok["d"].Name)
	}
}
