package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
)

// The engine's floor: what any docker driver (sched's, Nomad's) must ask
// of the engine to run a task, a container created and started, timed
// straight through the Engine API with the spec the driver gives its
// containers (image, command, cpu shares, memory limit, the json-file log
// capped as the driver caps it, the bridge network, the task directories
// bound at /alloc, /local and /secrets). Nothing else is in the figure:
// no image check, no log stream, no scheduling. A driver can come close
// to it, never under it.

// floorLabel marks the floor's containers with sched-bench's pid, so
// that the removal after each measurement takes only this run's.
const floorLabel = "com.schedhq.bench.floor"

// engineFloor creates and starts containers of the bench's docker task.
type engineFloor struct {
	c     *client.Client
	image string
	dir   string // the bound task directories
	seq   int
}

// newEngineFloor connects to the engine (DOCKER_HOST or the default
// socket) and checks that image is there: the scenario pulls nothing.
func newEngineFloor(image string) (*engineFloor, error) {
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker engine client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.ImageInspect(ctx, image); err != nil {
		c.Close()
		if client.IsErrNotFound(err) {
			return nil, fmt.Errorf("image %s is not on the engine: the docker driver's tests build it (go test ./client/driver/docker -run TestRunLogsAndRemove), or pass -docker-image", image)
		}
		return nil, fmt.Errorf("docker engine: image %s: %w", image, err)
	}
	dir, err := os.MkdirTemp("", "sched-bench-floor-")
	if err != nil {
		c.Close()
		return nil, err
	}
	for _, d := range []string{"alloc", "local", "secrets"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			c.Close()
			return nil, err
		}
	}
	return &engineFloor{c: c, image: image, dir: dir}, nil
}

// close removes every container of the floor and the directories.
func (f *engineFloor) close() {
	f.removeAll()
	os.RemoveAll(f.dir)
	f.c.Close()
}

// spec is the container the driver makes of driverTask("docker", image).
func (f *engineFloor) spec() (*container.Config, *container.HostConfig) {
	cc := &container.Config{Image: f.image, Cmd: []string{"sleep", "3600"},
		Env:    []string{"SCHED_ALLOC_DIR=/alloc", "SCHED_TASK_DIR=/local", "SCHED_SECRETS_DIR=/secrets"},
		Labels: map[string]string{floorLabel: strconv.Itoa(os.Getpid())}}
	hc := &container.HostConfig{NetworkMode: "bridge",
		LogConfig: container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "10m", "max-file": "2"}},
		Resources: container.Resources{CPUShares: 20, Memory: 16 << 20, MemorySwap: 16 << 20}}
	for _, m := range []struct{ src, dst string }{{"alloc", "/alloc"}, {"local", "/local"}, {"secrets", "/secrets"}} {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: filepath.Join(f.dir, m.src), Target: m.dst})
	}
	return cc, hc
}

// run creates and starts one container and returns how long that took.
func (f *engineFloor) run(ctx context.Context, name string) (time.Duration, error) {
	cc, hc := f.spec()
	began := time.Now()
	created, err := f.c.ContainerCreate(ctx, cc, hc, nil, nil, name)
	if err != nil {
		return 0, fmt.Errorf("engine floor: create: %w", err)
	}
	if err := f.c.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return 0, fmt.Errorf("engine floor: start %.12s: %w", created.ID, err)
	}
	return time.Since(began), nil
}

// one times one container's create and start, then removes it (not
// timed) so that the next measurement finds the engine as it was.
func (f *engineFloor) one() (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f.seq++
	d, err := f.run(ctx, fmt.Sprintf("sched-bench-floor-%d-%d", os.Getpid(), f.seq))
	f.removeAll()
	return d, err
}

// many creates and starts n containers, k at a time, and returns the time
// until all run; then it removes them (not timed).
func (f *engineFloor) many(n, k int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	defer f.removeAll()
	f.seq++
	slots := make(chan struct{}, max(k, 1))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	began := time.Now()
	for i := range n {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if _, err := f.run(ctx, fmt.Sprintf("sched-bench-floor-%d-%d-%d", os.Getpid(), f.seq, i)); err != nil {
				mu.Lock()
				first = errors.Join(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return time.Since(began), first
}

// removeAll force-removes the floor's containers, four at a time.
func (f *engineFloor) removeAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cs, err := f.c.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", floorLabel+"="+strconv.Itoa(os.Getpid())))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sched-bench: engine floor: list containers:", err)
		return
	}
	slots := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, ct := range cs {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if err := f.c.ContainerRemove(ctx, ct.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !client.IsErrNotFound(err) {
				fmt.Fprintln(os.Stderr, "sched-bench: engine floor: remove:", err)
			}
		}()
	}
	wg.Wait()
}

// intList parses "1,2,4" (empty: none); each must be 1 to 256.
func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 256 {
			return nil, fmt.Errorf("%q is not a number from 1 to 256", f)
		}
		out = append(out, n)
	}
	if len(out) > 16 {
		return nil, fmt.Errorf("%d values, at most 16", len(out))
	}
	return out, nil
}
