// Package dockertest gives tests a Docker engine and a tiny image built
// locally, without pulling anything: FROM scratch plus Debian's static
// busybox (/bin/busybox, package busybox-static) with its applets linked
// in /bin. A test without an engine or without busybox is skipped, with a
// message saying what is missing, except when the environment variable CI
// is set: there it fails.
package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
)

// Image is the tag of the test image.
const Image = "sched-test-busybox:1"

// BusyboxPath is where Debian's busybox-static puts its binary.
const BusyboxPath = "/bin/busybox"

// applets are linked to busybox in the image's /bin.
var applets = []string{"sh", "httpd", "sleep", "echo", "cat", "tail", "head", "ls", "env", "true",
	"false", "kill", "ps", "mkdir", "id", "wget", "printf", "yes", "dd", "trap", "test"}

var (
	buildOnce sync.Once
	buildErr  error
)

// unavailable skips t, or fails it under CI.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI is set: .ci/run installs busybox-static and needs a Docker engine)", msg)
	}
	t.Skip(msg)
}

// Engine returns a client of the local engine, skipping t when none
// answers.
func Engine(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		unavailable(t, "no Docker engine client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Ping(ctx); err != nil {
		c.Close()
		unavailable(t, "no Docker engine answers: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// BusyboxImage builds the test image once per process and returns its
// tag, skipping t when there is no engine or no busybox.
func BusyboxImage(t testing.TB) string {
	t.Helper()
	c := Engine(t)
	if _, err := os.Stat(BusyboxPath); err != nil {
		unavailable(t, "no static busybox at %s (apt-get install busybox-static): %v", BusyboxPath, err)
	}
	buildOnce.Do(func() { buildErr = build1(c) })
	if buildErr != nil {
		t.Fatalf("build the test image: %v", buildErr)
	}
	return Image
}

func build1(c *client.Client) error {
	bin, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dockerfile := "FROM scratch\nCOPY bin /bin\nCOPY etc /etc\nCMD [\"/bin/sh\"]\n"
	files := []struct {
		name string
		mode int64
		body []byte
	}{
		{"Dockerfile", 0o644, []byte(dockerfile)},
		{"bin/busybox", 0o755, bin},
		{"etc/passwd", 0o644, []byte("root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")},
		{"etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n")},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(f.body); err != nil {
			return err
		}
	}
	for _, a := range applets {
		if err := tw.WriteHeader(&tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777}); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := c.ImageBuild(ctx, &buf, build.ImageBuildOptions{Tags: []string{Image}, Remove: true, ForceRemove: true})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	var log strings.Builder
	for {
		var m struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		log.WriteString(m.Stream)
		if m.Error != "" {
			return fmt.Errorf("%s\n%s", m.Error, log.String())
		}
	}
	_, err = c.ImageInspect(ctx, Image)
	return err
}

// Containers lists the containers (running or not) carrying label
// key=value.
func Containers(t testing.TB, c *client.Client, key, value string) []container.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", key+"="+value))})
	if err != nil {
		t.Fatalf("list containers labelled %s=%s: %v", key, value, err)
	}
	return cs
}

// AssertNoContainers fails t when a container labelled key=value exists,
// and removes it so one test's leak does not spill into the next.
func AssertNoContainers(t testing.TB, c *client.Client, key, value string) {
	t.Helper()
	cs := Containers(t, c, key, value)
	for _, ct := range cs {
		t.Errorf("leaked container %.12s (%v, %s) labelled %s=%s", ct.ID, ct.Names, ct.State, key, value)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = c.ContainerRemove(ctx, ct.ID, container.RemoveOptions{Force: true})
		cancel()
	}
}
