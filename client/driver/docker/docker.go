// Package docker is the client's `docker` task driver: each task is a
// container of the local Docker Engine, reached through its API (the
// version negotiated with the engine). The container is labelled with the
// allocation and the task, limited to the task's cpu and memory, has the
// group's ports mapped, and is removed when the task ends; its output goes
// into the task's rotated log files. A restarted client finds its running
// containers again from the task handles (and, failing that, by label).
//
// Images are pulled with progress reported as task events, counted per
// running task, and, when this client pulled them, removed a while after
// the last task using them ends (Config.ImageGCDelay).
package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/state"
)

// Name is the driver's name, a task's `driver` value.
const Name = "docker"

// Labels sched puts on its containers; a task's own labels may not use
// the prefix.
const (
	labelPrefix    = "com.schedhq."
	LabelAllocID   = labelPrefix + "alloc_id"
	LabelTaskName  = labelPrefix + "task_name"
	LabelJobID     = labelPrefix + "job_id"
	LabelNamespace = labelPrefix + "namespace"
	LabelNodeID    = labelPrefix + "node_id"
)

// Defaults of Config.
const (
	DefaultImageGCDelay     = 3 * time.Minute
	DefaultPullTimeout      = 5 * time.Minute
	DefaultKillWait         = 10 * time.Second
	defaultPingTimeout      = 3 * time.Second
	defaultAPITimeout       = 30 * time.Second
	createTimeout           = 2 * time.Minute
	containerLogMaxSize     = "10m"
	containerLogMaxFiles    = "2"
	minCPUShares            = 2
	engineRetryInterval     = time.Second
	maxEngineRetryInterval  = 10 * time.Second
	progressEventInterval   = 5 * time.Second
	logDrainWait            = 2 * time.Second
	mountTargetAlloc        = "/alloc"
	mountTargetLocal        = "/local"
	mountTargetSecrets      = "/secrets"
	defaultContainerNetwork = "bridge"
)

// DefaultAllowCaps are the capabilities a task may add unless the client
// says otherwise: Docker's default set, as Nomad's allow_caps default.
var DefaultAllowCaps = []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL",
	"MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}

// Config is what the client allows docker tasks, and how it reaches the
// engine. The zero value works: the engine of DOCKER_HOST (or the default
// socket), no privileged containers, DefaultAllowCaps, image GC after
// DefaultImageGCDelay.
type Config struct {
	// Disabled turns the driver off: it fingerprints as not detected and
	// starts nothing.
	Disabled bool
	// Endpoint is the engine's address ("unix:///var/run/docker.sock",
	// "tcp://host:2375"); empty means DOCKER_HOST or the default socket.
	Endpoint string
	// AllowPrivileged lets tasks set privileged = true.
	AllowPrivileged bool
	// AllowCaps are the capabilities cap_add may name (without CAP_);
	// nil means DefaultAllowCaps; "ALL" allows every one.
	AllowCaps []string
	// VolumesEnabled lets `volumes` and bind `mount`s name host paths
	// outside the task directory, and `volume` mounts name engine
	// volumes. Relative sources (inside the task directory) are always
	// allowed.
	VolumesEnabled bool
	// ImageGC removes an image this client pulled once no task has used
	// it for ImageGCDelay. NoImageGC keeps every image.
	NoImageGC    bool
	ImageGCDelay time.Duration
	// PullTimeout bounds a pull when the task sets no
	// image_pull_timeout; zero means DefaultPullTimeout.
	PullTimeout time.Duration
	// KillWait bounds the wait for a SIGKILLed container to stop; zero
	// means DefaultKillWait.
	KillWait time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c *Config) allowCaps() []string {
	if c.AllowCaps == nil {
		return DefaultAllowCaps
	}
	return c.AllowCaps
}

// capAllowed reports whether cap_add may name c.
func (c *Config) capAllowed(name string) bool {
	name = strings.TrimPrefix(strings.ToUpper(name), "CAP_")
	for _, a := range c.allowCaps() {
		a = strings.TrimPrefix(strings.ToUpper(a), "CAP_")
		if a == "ALL" || a == name {
			return true
		}
	}
	return false
}

var (
	_ driver.Driver = (*Driver)(nil)
	_ driver.Execer = (*Driver)(nil)
)

// ErrDisabled is the error of a start on a client whose config turns the
// driver off.
var ErrDisabled = errors.New("the docker driver is disabled on this client (client.docker.enabled = false)")

// Driver runs tasks as Docker containers. Build it with New.
type Driver struct {
	cfg    Config
	log    *slog.Logger
	engine *client.Client
	images *imageCoordinator

	// ctx ends when the driver shuts down: the goroutines that wait on
	// containers and copy their logs stop, leaving the containers running.
	ctx    context.Context
	cancel context.CancelFunc

	// creates bounds the containers being created and started at once:
	// an engine given a hundred at a time answers none within a timeout,
	// one given a few answers each in turn.
	creates chan struct{}
	// kick tells the client to fingerprint the driver again: a call the
	// engine did not answer (FingerprintKick).
	kick chan struct{}

	mu    sync.Mutex
	tasks map[string]*task // nil value: being started or recovered
}

// DefaultCreateParallelism is how many containers a driver creates and
// starts at once.
const DefaultCreateParallelism = 4

// New returns a docker driver for cfg. It does not contact the engine:
// Fingerprint does.
func New(cfg Config) (*Driver, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ImageGCDelay <= 0 {
		cfg.ImageGCDelay = DefaultImageGCDelay
	}
	if cfg.PullTimeout <= 0 {
		cfg.PullTimeout = DefaultPullTimeout
	}
	if cfg.KillWait <= 0 {
		cfg.KillWait = DefaultKillWait
	}
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if cfg.Endpoint != "" {
		opts = append(opts, client.WithHost(cfg.Endpoint))
	}
	engine, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker: engine client: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Driver{cfg: cfg, log: cfg.Logger.With("driver", Name), engine: engine,
		ctx: ctx, cancel: cancel, tasks: make(map[string]*task), creates: make(chan struct{}, DefaultCreateParallelism),
		kick: make(chan struct{}, 1)}
	d.images = newImageCoordinator(engine, d.log, cfg.ImageGCDelay, !cfg.NoImageGC)
	return d, nil
}

// Shutdown detaches the driver from its containers without stopping
// them, as a client that exits does, and closes the engine connection.
// Pending image removals are dropped. The driver must not be used after.
func (d *Driver) Shutdown() {
	d.cancel()
	d.mu.Lock()
	ts := make([]*task, 0, len(d.tasks))
	for _, t := range d.tasks {
		if t != nil {
			ts = append(ts, t)
		}
	}
	d.mu.Unlock()
	for _, t := range ts {
		t.logs.close()
	}
	d.images.shutdown()
	_ = d.engine.Close()
}

// Name implements driver.Driver.
func (d *Driver) Name() string { return Name }

// Fingerprint implements driver.Driver: detected and healthy when the
// engine answers a ping.
func (d *Driver) Fingerprint() *state.DriverInfo {
	if d.cfg.Disabled {
		return &state.DriverInfo{HealthDescription: ErrDisabled.Error()}
	}
	ctx, cancel := context.WithTimeout(d.ctx, defaultPingTimeout)
	defer cancel()
	if _, err := d.engine.Ping(ctx); err != nil {
		return &state.DriverInfo{HealthDescription: "Docker engine unreachable: " + err.Error()}
	}
	attrs := map[string]string{
		"driver.docker":                    "1",
		"driver.docker.privileged.enabled": strconv.FormatBool(d.cfg.AllowPrivileged),
		"driver.docker.volumes.enabled":    strconv.FormatBool(d.cfg.VolumesEnabled),
	}
	if v, err := d.engine.ServerVersion(ctx); err == nil {
		attrs["driver.docker.version"] = v.Version
	}
	return &state.DriverInfo{Detected: true, Healthy: true, HealthDescription: "Healthy", Attributes: attrs}
}

// FingerprintKick receives a value after a call the engine did not
// answer: the client then fingerprints the driver at once (and marks it
// unhealthy on the node) instead of at its next interval.
func (d *Driver) FingerprintKick() <-chan struct{} { return d.kick }

// engineFailed kicks a fingerprint when err says the engine could not be
// reached.
func (d *Driver) engineFailed(err error) {
	if err == nil || !client.IsErrConnectionFailed(err) {
		return
	}
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// handleState is the driver-specific part of a TaskHandle.
type handleState struct {
	ContainerID string  `json:"container_id"`
	ImageID     string  `json:"image_id"`
	Logs        logSpec `json:"logs"`
}

// task is one container the driver runs (or ran, until destroyed).
type task struct {
	id          string
	containerID string
	imageID     string
	startedAt   time.Time
	logs        *logStreamer
	exit        *exitState

	mu       sync.Mutex // guards the CPU sample
	lastCPU  uint64
	lastTime time.Time
}

func (d *Driver) task(id string) (*task, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.tasks[id]
	if t == nil {
		return nil, fmt.Errorf("%s: %w", id, driver.ErrTaskNotFound)
	}
	return t, nil
}

func (d *Driver) reserve(id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.tasks[id]; ok {
		return fmt.Errorf("%s: %w", id, driver.ErrTaskExists)
	}
	d.tasks[id] = nil
	return nil
}

func (d *Driver) commit(id string, t *task) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t == nil {
		delete(d.tasks, id)
		return
	}
	d.tasks[id] = t
}

// StartTask implements driver.Driver: check the config, make sure the
// image is there (pulling it), create and start the container. A failure
// after the container was created removes it.
func (d *Driver) StartTask(cfg *driver.TaskConfig) (*driver.TaskHandle, error) {
	if d.cfg.Disabled {
		return nil, ErrDisabled
	}
	tc, err := parseTaskConfig(cfg.Config, &d.cfg)
	if err != nil {
		return nil, err
	}
	if err := d.reserve(cfg.ID); err != nil {
		return nil, err
	}
	t, err := d.start(cfg, tc)
	d.commit(cfg.ID, t)
	if err != nil {
		d.engineFailed(err)
		return nil, err
	}
	b, err := json.Marshal(handleState{ContainerID: t.containerID, ImageID: t.imageID, Logs: t.logs.spec})
	if err != nil {
		return nil, err
	}
	return &driver.TaskHandle{TaskID: cfg.ID, Driver: Name, StartedAt: t.startedAt, State: b}, nil
}

func (d *Driver) start(cfg *driver.TaskConfig, tc *taskConfig) (*task, error) {
	emit := cfg.Emit
	if emit == nil {
		emit = func(string) {}
	}
	timeout := tc.ImagePullTimeout
	if timeout <= 0 {
		timeout = d.cfg.PullTimeout
	}
	began := time.Now()
	imageID, err := d.images.acquire(d.ctx, pullRequest{Ref: tc.Image, Auth: tc.Auth, Force: tc.ForcePull,
		Timeout: timeout, Emit: emit})
	if err != nil {
		return nil, err
	}
	cc, hc, err := d.containerSpec(cfg, tc)
	if err != nil {
		d.images.release(imageID)
		return nil, err
	}
	imaged := time.Now()
	select {
	case d.creates <- struct{}{}:
	case <-d.ctx.Done():
		d.images.release(imageID)
		return nil, d.ctx.Err()
	}
	// The slot is held for the create and the start, the engine's work;
	// not for the log stream, nor for the removal after a failure.
	slot := true
	freeSlot := func() {
		if slot {
			slot = false
			<-d.creates
		}
	}
	defer freeSlot()
	slotted := time.Now()
	// Creating and starting wait on the engine's storage: a busy engine
	// takes far longer than one API call usually does.
	ctx, cancel := context.WithTimeout(d.ctx, createTimeout)
	defer cancel()
	name := containerName(cfg)
	created, err := d.engine.ContainerCreate(ctx, cc, hc, nil, nil, name)
	if err != nil && strings.Contains(err.Error(), "Conflict") {
		// A container of this task left by a client that died between
		// creating it and recording its handle: it is ours, remove it.
		if rerr := d.removeStale(ctx, name, cfg); rerr == nil {
			created, err = d.engine.ContainerCreate(ctx, cc, hc, nil, nil, name)
		}
	}
	if err != nil {
		// The engine may have made it after all (the call timed out):
		// remove the container of that name if it carries this task's
		// labels.
		freeSlot()
		rctx, rcancel := context.WithTimeout(context.Background(), 2*defaultAPITimeout)
		_ = d.removeStale(rctx, name, cfg)
		rcancel()
		d.images.release(imageID)
		return nil, fmt.Errorf("docker: create container of image %s: %w", tc.Image, err)
	}
	fail := func(err error) (*task, error) {
		freeSlot()
		d.remove(created.ID)
		d.images.release(imageID)
		return nil, err
	}
	createdAt := time.Now()
	if err := d.engine.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return fail(fmt.Errorf("docker: start container %.12s: %w", created.ID, err))
	}
	startedAt := time.Now()
	freeSlot()
	spec := newLogSpec(cfg)
	logs, err := d.streamLogs(created.ID, spec, time.Time{})
	if err != nil {
		return fail(fmt.Errorf("docker: task logs: %w", err))
	}
	// Where a start's time went, for the operator tuning an engine (and
	// for sched-bench's drivers scenario): the engine's create and start
	// against the driver's own calls and its wait for a slot.
	d.log.Debug("docker: container started", "task", cfg.ID, "image", imaged.Sub(began), "wait_slot", slotted.Sub(imaged),
		"create", createdAt.Sub(slotted), "start", startedAt.Sub(createdAt), "logs", time.Since(startedAt))
	t := &task{id: cfg.ID, containerID: created.ID, imageID: imageID, startedAt: time.Now(),
		logs: logs, exit: newExitState()}
	go d.watch(t)
	return t, nil
}

// containerName is Nomad's: <task>-<alloc id>.
func containerName(cfg *driver.TaskConfig) string {
	return cfg.TaskName + "-" + cfg.AllocID
}

// removeStale removes the container called name if it carries this
// task's labels.
func (d *Driver) removeStale(ctx context.Context, name string, cfg *driver.TaskConfig) error {
	info, err := d.engine.ContainerInspect(ctx, name)
	if err != nil {
		return err
	}
	if info.Config == nil || info.Config.Labels[LabelAllocID] != cfg.AllocID || info.Config.Labels[LabelTaskName] != cfg.TaskName {
		return fmt.Errorf("docker: container %s exists and is not this task's", name)
	}
	return d.engine.ContainerRemove(ctx, info.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
}

// removeAttempts are the timeouts of the tries to remove a container: a
// busy engine (many containers starting at once) may take minutes.
var removeAttempts = []time.Duration{defaultAPITimeout, 2 * defaultAPITimeout, 4 * defaultAPITimeout}

// remove force-removes a container, trying again while the engine does
// not answer in time, and logs a failure.
func (d *Driver) remove(id string) {
	var err error
	for _, limit := range removeAttempts {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		err = d.engine.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		cancel()
		if err == nil || client.IsErrNotFound(err) || strings.Contains(err.Error(), "already in progress") {
			return
		}
	}
	d.log.Warn("docker: remove container", "container", id, "error", err)
}

// containerSpec builds the container's config from the task's.
func (d *Driver) containerSpec(cfg *driver.TaskConfig, tc *taskConfig) (*container.Config, *container.HostConfig, error) {
	bound, err := portBindings(tc.Ports, cfg.Ports)
	if err != nil {
		return nil, nil, err
	}
	env := containerEnv(cfg.Env, bound)
	labels := map[string]string{}
	for k, v := range tc.Labels {
		labels[k] = v
	}
	labels[LabelAllocID], labels[LabelTaskName] = cfg.AllocID, cfg.TaskName
	labels[LabelJobID], labels[LabelNamespace] = cfg.JobID, cfg.Namespace
	labels[LabelNodeID] = cfg.Env["SCHED_NODE_ID"]
	cc := &container.Config{Image: tc.Image, Env: env, Labels: labels, WorkingDir: tc.WorkDir, User: cfg.User}
	if tc.Command != "" {
		cc.Cmd = append([]string{tc.Command}, tc.Args...)
	} else if len(tc.Args) > 0 {
		cc.Cmd = tc.Args
	}
	if len(tc.Entrypoint) > 0 {
		cc.Entrypoint = tc.Entrypoint
	}
	hc := &container.HostConfig{
		Privileged: tc.Privileged, CapAdd: tc.CapAdd, CapDrop: tc.CapDrop,
		NetworkMode: container.NetworkMode(tc.NetworkMode),
		LogConfig: container.LogConfig{Type: "json-file",
			Config: map[string]string{"max-size": containerLogMaxSize, "max-file": containerLogMaxFiles}},
	}
	if hc.NetworkMode == "" {
		hc.NetworkMode = defaultContainerNetwork
	}
	hc.Resources = resources(cfg)
	if len(bound) > 0 {
		if hc.NetworkMode.IsHost() || hc.NetworkMode.IsNone() || hc.NetworkMode.IsContainer() {
			return nil, nil, bad("ports cannot be mapped with network_mode %q", tc.NetworkMode)
		}
		cc.ExposedPorts = nat.PortSet{}
		hc.PortBindings = nat.PortMap{}
		for _, b := range bound {
			for _, proto := range []string{"tcp", "udp"} {
				p := nat.Port(strconv.Itoa(b.Container) + "/" + proto)
				cc.ExposedPorts[p] = struct{}{}
				hc.PortBindings[p] = append(hc.PortBindings[p], nat.PortBinding{HostIP: b.HostIP, HostPort: strconv.Itoa(b.Host)})
			}
		}
	}
	mounts, err := d.mounts(cfg, tc)
	if err != nil {
		return nil, nil, err
	}
	hc.Mounts = mounts
	return cc, hc, nil
}

// resources are the container's limits: cpu as relative shares (MHz,
// as Nomad), cores as a CPU quota of that many cores, memory as the hard
// limit, or with memory_max above it, memory as the soft reservation and
// memory_max as the hard limit. No swap.
func resources(cfg *driver.TaskConfig) container.Resources {
	r := container.Resources{CPUShares: int64(max(cfg.CPU, minCPUShares))}
	if cfg.Cores > 0 {
		r.NanoCPUs = int64(cfg.Cores) * 1e9
	}
	if cfg.MemoryMB > 0 {
		limit := int64(cfg.MemoryMB) << 20
		if cfg.MemoryMaxMB > cfg.MemoryMB {
			r.MemoryReservation = limit
			limit = int64(cfg.MemoryMaxMB) << 20
		}
		r.Memory, r.MemorySwap = limit, limit
	}
	return r
}

// containerEnv is the task's environment as the container sees it: the
// task directories at their container paths, and each mapped port's
// SCHED_PORT_<label> (and NOMAD_PORT_<label>) the port inside the
// container.
func containerEnv(env map[string]string, bound []boundPort) []string {
	m := make(map[string]string, len(env)+3)
	for k, v := range env {
		m[k] = v
	}
	// Under Nomad's names too (the client sets both: client/env_nomad.go).
	for _, prefix := range []string{"SCHED_", "NOMAD_"} {
		m[prefix+"ALLOC_DIR"], m[prefix+"TASK_DIR"], m[prefix+"SECRETS_DIR"] = mountTargetAlloc, mountTargetLocal, mountTargetSecrets
		for _, b := range bound {
			m[prefix+"PORT_"+b.Label] = strconv.Itoa(b.Container)
		}
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// mounts are the task directories (alloc/, local/, secrets/ at /alloc,
// /local, /secrets, as Nomad), the group's host volumes the task mounts,
// and the task's volumes and mounts. A
// relative source is inside the task directory; anything else needs
// Config.VolumesEnabled.
func (d *Driver) mounts(cfg *driver.TaskConfig, tc *taskConfig) ([]mount.Mount, error) {
	var out []mount.Mount
	for _, m := range []struct{ src, dst string }{{cfg.AllocDir, mountTargetAlloc}, {cfg.LocalDir, mountTargetLocal}, {cfg.SecretsDir, mountTargetSecrets}} {
		if m.src != "" {
			out = append(out, mount.Mount{Type: mount.TypeBind, Source: m.src, Target: m.dst})
		}
	}
	// The group's host volumes (volume_mount), declared by the operator
	// in the client's host_volume blocks: allowed without volumes_enabled.
	for _, m := range cfg.Mounts {
		if m == nil || m.HostPath == "" || !strings.HasPrefix(m.TaskPath, "/") {
			return nil, bad("volume_mount of host volume %q: no host path or no absolute destination", m.Volume)
		}
		out = append(out, mount.Mount{Type: mount.TypeBind, Source: m.HostPath, Target: m.TaskPath, ReadOnly: m.ReadOnly})
	}
	bind := func(src, dst string, ro bool, what string) error {
		abs, err := d.hostPath(cfg, src, what)
		if err != nil {
			return err
		}
		out = append(out, mount.Mount{Type: mount.TypeBind, Source: abs, Target: dst, ReadOnly: ro})
		return nil
	}
	for _, v := range tc.Volumes {
		src, dst, ro, _ := splitVolume(v)
		if err := bind(src, dst, ro, "volumes"); err != nil {
			return nil, err
		}
	}
	for i, m := range tc.Mounts {
		switch m.Type {
		case "bind":
			if err := bind(m.Source, m.Target, m.ReadOnly, fmt.Sprintf("mount[%d]", i)); err != nil {
				return nil, err
			}
		case "volume":
			if !d.cfg.VolumesEnabled {
				return nil, bad("mount[%d]: volume mounts need client.docker.volumes_enabled", i)
			}
			out = append(out, mount.Mount{Type: mount.TypeVolume, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
		case "tmpfs":
			out = append(out, mount.Mount{Type: mount.TypeTmpfs, Target: m.Target, ReadOnly: m.ReadOnly})
		}
	}
	return out, nil
}

// hostPath resolves a bind source: relative to the task directory, and
// kept inside it unless the client enables volumes.
func (d *Driver) hostPath(cfg *driver.TaskConfig, src, what string) (string, error) {
	if strings.HasPrefix(src, "/") {
		if !d.cfg.VolumesEnabled {
			return "", bad("%s: host path %q needs client.docker.volumes_enabled (relative paths, inside the task directory, are always allowed)", what, src)
		}
		return src, nil
	}
	if cfg.TaskDir == "" {
		return "", bad("%s: relative path %q without a task directory", what, src)
	}
	abs := joinInside(cfg.TaskDir, src)
	if abs == "" && !d.cfg.VolumesEnabled {
		return "", bad("%s: %q leaves the task directory (needs client.docker.volumes_enabled)", what, src)
	}
	if abs == "" {
		abs = cfg.TaskDir + "/" + src
	}
	return abs, nil
}

// watch waits for t's container to stop and records its exit: the exit
// code, and "OOM Killed" when the kernel killed it for memory. It retries
// while the engine does not answer, and returns, leaving the exit unset,
// when the driver shuts down.
func (d *Driver) watch(t *task) {
	backoff := engineRetryInterval
	for {
		resC, errC := d.engine.ContainerWait(d.ctx, t.containerID, container.WaitConditionNotRunning)
		select {
		case <-resC:
		case err := <-errC:
			if d.ctx.Err() != nil {
				return
			}
			if client.IsErrNotFound(err) {
				t.logs.drain(logDrainWait)
				t.exit.set(&driver.ExitResult{Err: fmt.Errorf("container %.12s is gone: %w", t.containerID, driver.ErrTaskGone)})
				return
			}
			d.log.Warn("docker: waiting on container", "task", t.id, "error", err)
			select {
			case <-d.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxEngineRetryInterval)
			continue
		}
		res, err := d.exitOf(t.containerID)
		if err != nil {
			if d.ctx.Err() != nil {
				return
			}
			d.log.Warn("docker: inspecting stopped container", "task", t.id, "error", err)
			continue
		}
		t.logs.drain(logDrainWait)
		t.exit.set(res)
		return
	}
}

// exitOf reads a stopped container's exit from the engine.
func (d *Driver) exitOf(id string) (*driver.ExitResult, error) {
	ctx, cancel := context.WithTimeout(d.ctx, defaultAPITimeout)
	defer cancel()
	info, err := d.engine.ContainerInspect(ctx, id)
	if err != nil {
		if client.IsErrNotFound(err) {
			return &driver.ExitResult{Err: fmt.Errorf("container %.12s is gone: %w", id, driver.ErrTaskGone)}, nil
		}
		return nil, err
	}
	if info.State == nil {
		return nil, fmt.Errorf("container %.12s has no state", id)
	}
	if info.State.Running {
		return nil, fmt.Errorf("container %.12s still runs", id)
	}
	res := &driver.ExitResult{ExitCode: info.State.ExitCode}
	if info.State.OOMKilled {
		res.OOMKilled, res.Err = true, driver.ErrOOMKilled
	} else if info.State.Error != "" {
		res.Err = errors.New(info.State.Error)
	}
	return res, nil
}

// RecoverTask implements driver.Driver: it re-attaches to the handle's
// container, or, when the handle's ID is unknown to the engine, to a
// running container labelled with the task. A container that stopped
// while the client was down is removed and the task is gone.
func (d *Driver) RecoverTask(h *driver.TaskHandle) error {
	if d.cfg.Disabled {
		return ErrDisabled
	}
	var hs handleState
	if err := json.Unmarshal(h.State, &hs); err != nil {
		return fmt.Errorf("docker handle of %s: %w", h.TaskID, err)
	}
	if err := d.reserve(h.TaskID); err != nil {
		return err
	}
	t, err := d.recover(h, hs)
	d.commit(h.TaskID, t)
	return err
}

func (d *Driver) recover(h *driver.TaskHandle, hs handleState) (*task, error) {
	ctx, cancel := context.WithTimeout(d.ctx, defaultAPITimeout)
	defer cancel()
	id := hs.ContainerID
	info, err := d.engine.ContainerInspect(ctx, id)
	if client.IsErrNotFound(err) || id == "" {
		id, err = d.findByLabel(ctx, h.TaskID)
		if err == nil {
			info, err = d.engine.ContainerInspect(ctx, id)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: container %.12s: %v: %w", h.TaskID, hs.ContainerID, err, driver.ErrTaskGone)
	}
	if info.State == nil || !info.State.Running {
		d.remove(info.ID)
		return nil, fmt.Errorf("%s: container %.12s stopped while the client was down: %w", h.TaskID, info.ID, driver.ErrTaskGone)
	}
	imageID := info.Image
	d.images.adopt(imageID)
	logs, err := d.streamLogs(info.ID, hs.Logs, hs.Logs.resumeFrom())
	if err != nil {
		d.log.Warn("docker: recovered task's logs are lost", "task", h.TaskID, "error", err)
		logs = &logStreamer{spec: hs.Logs, done: closedChan()}
	}
	t := &task{id: h.TaskID, containerID: info.ID, imageID: imageID, startedAt: h.StartedAt,
		logs: logs, exit: newExitState()}
	go d.watch(t)
	return t, nil
}

// findByLabel finds the running container labelled with task ID
// "<alloc id>/<task>".
func (d *Driver) findByLabel(ctx context.Context, taskID string) (string, error) {
	alloc, name, ok := strings.Cut(taskID, "/")
	if !ok {
		return "", fmt.Errorf("task ID %q is not <alloc>/<task>", taskID)
	}
	f := filters.NewArgs(filters.Arg("label", LabelAllocID+"="+alloc), filters.Arg("label", LabelTaskName+"="+name))
	cs, err := d.engine.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return "", err
	}
	if len(cs) == 0 {
		return "", errors.New("no container with the task's labels")
	}
	return cs[0].ID, nil
}

// WaitTask implements driver.Driver.
func (d *Driver) WaitTask(ctx context.Context, taskID string) (<-chan *driver.ExitResult, error) {
	t, err := d.task(taskID)
	if err != nil {
		return nil, err
	}
	return t.exit.wait(ctx), nil
}

// kill sends sig to the container's main process; a stopped container
// is not an error.
func (d *Driver) kill(t *task, sig string) error {
	if t.exit.get() != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(d.ctx, defaultAPITimeout)
	defer cancel()
	err := d.engine.ContainerKill(ctx, t.containerID, sig)
	if err != nil && (client.IsErrNotFound(err) || strings.Contains(err.Error(), "is not running")) {
		return nil
	}
	return err
}

// StopTask implements driver.Driver: signal (default SIGINT) to the
// container's main process, up to timeout for it to stop, then SIGKILL.
func (d *Driver) StopTask(taskID string, timeout time.Duration, signal string) error {
	t, err := d.task(taskID)
	if err != nil {
		return err
	}
	sig, err := driver.ParseSignal(signal)
	if err != nil {
		return err
	}
	if err := d.kill(t, strconv.Itoa(int(sig))); err != nil {
		return fmt.Errorf("stop %s: %w", taskID, err)
	}
	if t.exit.waitFor(timeout) {
		return nil
	}
	return d.killNow(t)
}

// killNow SIGKILLs t and waits for its exit.
func (d *Driver) killNow(t *task) error {
	if err := d.kill(t, "KILL"); err != nil {
		return fmt.Errorf("kill %s: %w", t.id, err)
	}
	if !t.exit.waitFor(d.cfg.KillWait) {
		return fmt.Errorf("task %s (container %.12s) still running %v after SIGKILL", t.id, t.containerID, d.cfg.KillWait)
	}
	return nil
}

// SignalTask implements driver.Driver.
func (d *Driver) SignalTask(taskID string, signal string) error {
	t, err := d.task(taskID)
	if err != nil {
		return err
	}
	if t.exit.get() != nil {
		return fmt.Errorf("signal %s: task has exited", taskID)
	}
	sig, err := driver.ParseSignal(signal)
	if err != nil {
		return err
	}
	return d.kill(t, strconv.Itoa(int(sig)))
}

// DestroyTask implements driver.Driver: the container is removed and the
// task's hold on its image released; the log files stay.
func (d *Driver) DestroyTask(taskID string, force bool) error {
	t, err := d.task(taskID)
	if err != nil {
		return err
	}
	if t.exit.get() == nil {
		if !force {
			return fmt.Errorf("destroy %s: %w", taskID, driver.ErrTaskRunning)
		}
		if err := d.killNow(t); err != nil {
			return err
		}
	}
	t.logs.close()
	d.remove(t.containerID)
	d.images.release(t.imageID)
	t.logs.spec.removePosition()
	d.commit(taskID, nil)
	return nil
}
