package docker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/state"
)

// Every key is read in the shapes HCL and JSON give it; each bad value
// is an ErrBadConfig naming the key.
func TestParseTaskConfig(t *testing.T) {
	pol := &Config{}
	tc, err := parseTaskConfig(map[string]any{
		"image": "web:1", "command": "sh", "args": []any{"-c", 1.0}, "entrypoint": []any{"/bin/tini", "--"},
		"work_dir": "/w", "ports": []any{"http"}, "volumes": []any{"data:/data:ro"}, "force_pull": true,
		"mount":  []any{map[string]any{"type": "tmpfs", "target": "/tmp"}, map[string]any{"source": "cache", "target": "/c", "readonly": true}},
		"labels": []any{map[string]any{"team": "a"}}, "auth": []any{map[string]any{"username": "u", "password": "p"}},
		"network_mode": "host", "cap_add": []any{"net_bind_service"}, "cap_drop": []any{"ALL"}, "image_pull_timeout": "90s",
	}, pol)
	if err != nil {
		t.Fatal(err)
	}
	if tc.Image != "web:1" || strings.Join(tc.Args, ",") != "-c,1" || len(tc.Entrypoint) != 2 || !tc.ForcePull ||
		len(tc.Mounts) != 2 || tc.Mounts[1].Type != "bind" || !tc.Mounts[1].ReadOnly || tc.Labels["team"] != "a" ||
		tc.Auth == nil || tc.Auth.Username != "u" || tc.ImagePullTimeout != 90*time.Second || tc.NetworkMode != "host" {
		t.Fatalf("parsed %+v", tc)
	}
	long := strings.Repeat("x", maxStringLen+1)
	many := make([]any, maxListLen+1)
	for i := range many {
		many[i] = "a"
	}
	for _, c := range []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{}, "image is required"},
		{map[string]any{"image": 3}, "image must be a string"},
		{map[string]any{"image": "a b"}, "is not an image reference"},
		{map[string]any{"image": "x", "bogus": 1, "also": 2}, "unknown key(s) also, bogus"},
		{map[string]any{"image": "x", "args": many}, "args has 65 entries"},
		{map[string]any{"image": long}, "image is longer than 4096 bytes"},
		{map[string]any{"image": "x", "privileged": true}, "privileged containers are not allowed"},
		{map[string]any{"image": "x", "privileged": "maybe"}, "privileged must be true or false"},
		{map[string]any{"image": "x", "cap_add": []any{"SYS_ADMIN"}}, "cap_add: SYS_ADMIN is not in"},
		{map[string]any{"image": "x", "cap_add": []any{"a b"}}, `cap_add: "a b" is not a capability name`},
		{map[string]any{"image": "x", "volumes": []any{"nocolon"}}, `volumes: "nocolon" is not`},
		{map[string]any{"image": "x", "volumes": []any{"a:/b:rx"}}, `mode "rx" is not ro or rw`},
		{map[string]any{"image": "x", "mount": []any{map[string]any{"type": "nfs", "target": "/a", "source": "s"}}}, `type "nfs" is not bind, volume or tmpfs`},
		{map[string]any{"image": "x", "mount": []any{map[string]any{"source": "s", "target": "rel"}}}, "must be an absolute path"},
		{map[string]any{"image": "x", "mount": []any{map[string]any{"target": "/a"}}}, "a bind mount needs a source"},
		{map[string]any{"image": "x", "mount": []any{map[string]any{"target": "/a", "size": 1}}}, `unknown key "size"`},
		{map[string]any{"image": "x", "labels": []any{map[string]any{"com.schedhq.alloc_id": "1"}}}, "keeps for its own labels"},
		{map[string]any{"image": "x", "auth": []any{map[string]any{}, map[string]any{}}}, "auth is given 2 times"},
		{map[string]any{"image": "x", "auth": []any{map[string]any{"token": "t"}}}, `auth: unknown key "token"`},
		{map[string]any{"image": "x", "network_mode": "bad mode"}, "network_mode"},
		{map[string]any{"image": "x", "image_pull_timeout": "2h"}, "image_pull_timeout"},
		{map[string]any{"image": "x", "image_pull_timeout": "soon"}, "image_pull_timeout"},
	} {
		_, err := parseTaskConfig(c.cfg, pol)
		if !errors.Is(err, driver.ErrBadConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want ErrBadConfig with %q", c.cfg, err, c.want)
		}
	}
	if _, err := parseTaskConfig(map[string]any{"image": "x", "privileged": true, "cap_add": []any{"SYS_ADMIN"}},
		&Config{AllowPrivileged: true, AllowCaps: []string{"ALL"}}); err != nil {
		t.Fatalf("allowed by the client: %v", err)
	}
}

// A port label maps the allocation's host port to its `to` (or itself).
func TestPortBindings(t *testing.T) {
	ports := []state.AllocatedPort{{Label: "http", Value: 23000, To: 80, HostIP: "10.0.0.1"}, {Label: "db", Value: 23001}}
	got, err := portBindings([]string{"http", "db"}, ports)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != (boundPort{Label: "http", HostIP: "10.0.0.1", Host: 23000, Container: 80}) || got[1].Container != 23001 {
		t.Fatalf("bindings %+v", got)
	}
	if _, err := portBindings([]string{"admin"}, ports); !errors.Is(err, driver.ErrBadConfig) || !strings.Contains(err.Error(), `"admin" is not a port of the group's network (it has [db http])`) {
		t.Fatalf("unknown label: %v", err)
	}
}

// The engine's log stream is split into stdout and stderr without the
// timestamps, and the last timestamp is the resume point.
func TestLogCopyDemux(t *testing.T) {
	var in bytes.Buffer
	frame := func(stream byte, s string) {
		hdr := [8]byte{stream}
		binary.BigEndian.PutUint32(hdr[4:], uint32(len(s)))
		in.Write(hdr[:])
		in.WriteString(s)
	}
	frame(1, "2026-01-02T03:04:05.000000001Z hello\n")
	frame(2, "2026-01-02T03:04:06.5Z oops\n")
	frame(1, "no-timestamp\n")
	ls := &logStreamer{spec: logSpec{Dir: t.TempDir(), Task: "t"}}
	var out, errb bytes.Buffer
	if err := ls.copy(&in, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if out.String() != "hello\nno-timestamp\n" || errb.String() != "oops\n" {
		t.Fatalf("stdout %q stderr %q", out.String(), errb.String())
	}
	ls.save(true)
	want := time.Date(2026, 1, 2, 3, 4, 6, 500000001, time.UTC)
	if got := ls.spec.resumeFrom(); !got.Equal(want) {
		t.Fatalf("resume from %v, want %v", got, want)
	}
	var huge bytes.Buffer
	hdr := [8]byte{1}
	binary.BigEndian.PutUint32(hdr[4:], maxFrame+1)
	huge.Write(hdr[:])
	if err := ls.copy(&huge, &out, &errb); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("oversized entry: %v", err)
	}
}
