package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/internal/testutil/dockertest"
	"github.com/schedhq/sched/state"
)

// The docker driver on the real binary: a dev agent whose client runs
// tasks in containers of the local engine, from the image dockertest
// builds (nothing is pulled). Every test ends with no container labelled
// with its job.

// dockerJobLabel is the label the driver puts the job's ID in.
const dockerJobLabel = "com.schedhq.job_id"

// dockerJob is a job of one docker task running script in the test
// image.
func dockerJob(id, typ, image, script string, memoryMB int) *state.Job {
	return &state.Job{
		ID: id, Type: typ, Datacenters: []string{"*"},
		TaskGroups: []*state.TaskGroup{{
			Name: "web", Count: 1,
			Networks:      []*state.NetworkResource{{DynamicPorts: []state.Port{{Label: "http", To: 8080}}}},
			RestartPolicy: &state.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: time.Second, Mode: state.RestartPolicyModeFail},
			Tasks: []*state.Task{{
				Name: "server", Driver: "docker",
				Config: map[string]any{
					"image": image, "command": "sh", "args": []any{"-c", script}, "ports": []any{"http"},
				},
				KillTimeout: 2 * time.Second,
				Resources:   &state.Resources{CPU: 100, MemoryMB: memoryMB},
			}},
		}},
	}
}

// stopAndCheckNoContainers stops job and waits until no container of it
// remains; any left after that is a leak.
func stopAndCheckNoContainers(t *testing.T, c *api.Client, engine *client.Client, job string) {
	t.Helper()
	if _, _, err := c.Jobs().Deregister(context.Background(), job, true, nil, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, time.Minute, "the job's containers to be removed", func() bool {
		return len(dockertest.Containers(t, engine, dockerJobLabel, job)) == 0
	})
	dockertest.AssertNoContainers(t, engine, dockerJobLabel, job)
}

// jobContainers lists the job's containers.
func jobContainers(t *testing.T, engine *client.Client, job string) []string {
	var ids []string
	for _, ct := range dockertest.Containers(t, engine, dockerJobLabel, job) {
		ids = append(ids, ct.ID+":"+ct.State)
	}
	return ids
}

// TestDockerServiceAnswersHTTP: a docker service with a mapped port
// (host port dynamic, container port 8080) answers HTTP on the host
// port, alloc exec runs in the container, and its stats come from the
// engine.
func TestDockerServiceAnswersHTTP(t *testing.T) {
	image := dockertest.BusyboxImage(t)
	engine := dockertest.Engine(t)
	a := newDevAgent(t)
	a.startDev()
	c := a.client()
	job := "dockerweb"
	if _, _, err := c.Jobs().Register(context.Background(), dockerJob(job, state.JobTypeService, image,
		`echo docker-ok > /local/index.html; exec httpd -f -p $SCHED_PORT_http -h /local`, 64), nil, nil); err != nil {
		t.Fatal(err)
	}
	allocs := runningAllocs(t, c, job, 1)
	port := allocPort(allocs[0], "http")
	if port == 0 {
		t.Fatalf("no http port in %+v", allocs[0].AllocatedResources)
	}
	var body string
	testutil.WaitForErr(t, 30*time.Second, fmt.Sprintf("HTTP on host port %d", port), func() error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", port))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	if body != "docker-ok\n" {
		t.Fatalf("body %q", body)
	}
	if cs := jobContainers(t, engine, job); len(cs) != 1 {
		t.Fatalf("containers of the job: %v", cs)
	}
	// alloc exec runs inside the container: its file system, its env.
	var out testutil.SyncBuffer
	code, err := c.Allocations().Exec(context.Background(), allocs[0].ID, &api.ExecOptions{Task: "server",
		Command:     []string{"sh", "-c", "cat /local/index.html; echo $SCHED_PORT_http; exit 5"},
		ExecStreams: api.ExecStreams{Stdout: &out, Stderr: &out}}, nil)
	if err != nil || code != 5 || out.String() != "docker-ok\n8080\n" {
		t.Fatalf("alloc exec: code %d, err %v, output %q", code, err, out.String())
	}
	var tty testutil.SyncBuffer
	code, err = c.Allocations().Exec(context.Background(), allocs[0].ID, &api.ExecOptions{Task: "server",
		Command: []string{"sh", "-c", "test -t 1 && echo on-a-tty"}, TTY: true,
		ExecStreams: api.ExecStreams{Stdout: &tty, Stderr: &tty}}, nil)
	if err != nil || code != 0 || !strings.Contains(tty.String(), "on-a-tty") {
		t.Fatalf("alloc exec -t: code %d, err %v, output %q", code, err, tty.String())
	}
	stats, err := c.Allocations().Stats(context.Background(), allocs[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := stats.Tasks["server"]
	if ts == nil || ts.ResourceUsage == nil || ts.ResourceUsage.MemoryStats.RSS == 0 {
		t.Fatalf("stats of the docker task: %+v", stats)
	}
	stopAndCheckNoContainers(t, c, engine, job)
}

// TestDockerOOMKilled: a docker task over its memory limit is killed and
// the task event says "OOM Killed".
func TestDockerOOMKilled(t *testing.T) {
	image := dockertest.BusyboxImage(t)
	engine := dockertest.Engine(t)
	a := newDevAgent(t)
	a.startDev()
	c := a.client()
	job := "dockeroom"
	if _, _, err := c.Jobs().Register(context.Background(), dockerJob(job, state.JobTypeBatch, image, `exec tail /dev/zero`, 16), nil, nil); err != nil {
		t.Fatal(err)
	}
	var ev *state.TaskEvent
	testutil.WaitForErr(t, 2*time.Minute, "the task to be OOM killed", func() error {
		allocs, _, err := c.Jobs().Allocations(context.Background(), job, false, nil)
		if err != nil || len(allocs) == 0 {
			return fmt.Errorf("allocations: %v", err)
		}
		al, _, err := c.Allocations().Info(context.Background(), allocs[0].ID, nil)
		if err != nil {
			return err
		}
		ts := al.TaskStates["server"]
		if ts == nil {
			return fmt.Errorf("no task state")
		}
		for _, e := range ts.Events {
			if e.Type == state.TaskTerminated {
				ev = e
			}
		}
		if ev == nil || ts.State != state.TaskStateDead {
			return fmt.Errorf("task %s, events %d", ts.State, len(ts.Events))
		}
		if !ts.Failed {
			return fmt.Errorf("task dead but not failed")
		}
		return nil
	})
	if ev.Details["oom_killed"] != "true" || !strings.Contains(ev.DisplayMessage, "OOM Killed") {
		t.Fatalf("terminated event %+v, want OOM Killed", ev)
	}
	stopAndCheckNoContainers(t, c, engine, job)
}

// TestDockerClientRestartReattaches: a client SIGKILLed and restarted on
// the same data dir finds its running container again: the same
// container, not restarted, still stoppable.
func TestDockerClientRestartReattaches(t *testing.T) {
	image := dockertest.BusyboxImage(t)
	engine := dockertest.Engine(t)
	a := newDevAgent(t)
	a.startDev()
	c := a.client()
	job := "dockerkeep"
	if _, _, err := c.Jobs().Register(context.Background(), dockerJob(job, state.JobTypeService, image,
		`trap 'exit 0' TERM INT; while true; do sleep 0.2; done`, 32), nil, nil); err != nil {
		t.Fatal(err)
	}
	allocs := runningAllocs(t, c, job, 1)
	before := jobContainers(t, engine, job)
	if len(before) != 1 || !strings.HasSuffix(before[0], ":running") {
		t.Fatalf("containers before the restart: %v", before)
	}
	a.kill()
	if got := jobContainers(t, engine, job); len(got) != 1 || got[0] != before[0] {
		t.Fatalf("containers with the client down: %v, want %v", got, before)
	}
	a.startDev()
	runningAllocs(t, c, job, 1)
	testutil.WaitForErr(t, 30*time.Second, "the restarted client to report", func() error {
		al, _, err := c.Allocations().Info(context.Background(), allocs[0].ID, nil)
		if err != nil {
			return err
		}
		if al.ModifyIndex <= allocs[0].ModifyIndex {
			return fmt.Errorf("no report yet")
		}
		return nil
	})
	if got := jobContainers(t, engine, job); len(got) != 1 || got[0] != before[0] {
		t.Fatalf("containers after the restart: %v, want only %v", got, before)
	}
	al, _, err := c.Allocations().Info(context.Background(), allocs[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ts := al.TaskStates["server"]; ts.Restarts != 0 || ts.State != state.TaskStateRunning {
		t.Fatalf("task state after the restart: %+v", ts)
	}
	stopAndCheckNoContainers(t, c, engine, job)
}

// TestDockerBadInputEvents: a ports label the group does not have fails
// the task with a "Failed Validation" event naming it, and an image no
// registry serves with a "Driver Failure" event naming the image; neither
// leaves a container.
func TestDockerBadInputEvents(t *testing.T) {
	image := dockertest.BusyboxImage(t)
	engine := dockertest.Engine(t)
	a := newDevAgent(t)
	a.startDev()
	c := a.client()
	badPort := dockerJob("dockerbadport", state.JobTypeBatch, image, "true", 32)
	badPort.TaskGroups[0].Tasks[0].Config["ports"] = []any{"admin"}
	noImage := dockerJob("dockernoimage", state.JobTypeBatch, "registry.invalid/sched/none:1", "true", 32)
	noImage.TaskGroups[0].Tasks[0].Config["image_pull_timeout"] = "20s"
	for _, tc := range []struct {
		job       *state.Job
		eventType string
		want      string
	}{
		{badPort, state.TaskFailedValidation, `ports: "admin" is not a port of the group's network`},
		{noImage, state.TaskDriverFailure, `pull image "registry.invalid/sched/none:1"`},
	} {
		if _, _, err := c.Jobs().Register(context.Background(), tc.job, nil, nil); err != nil {
			t.Fatal(err)
		}
		testutil.WaitForErr(t, time.Minute, tc.job.ID+"'s failure event", func() error {
			allocs, _, err := c.Jobs().Allocations(context.Background(), tc.job.ID, false, nil)
			if err != nil || len(allocs) == 0 {
				return fmt.Errorf("allocations: %v", err)
			}
			al, _, err := c.Allocations().Info(context.Background(), allocs[0].ID, nil)
			if err != nil {
				return err
			}
			ts := al.TaskStates["server"]
			if ts == nil {
				return fmt.Errorf("no task state")
			}
			var seen []string
			for _, e := range ts.Events {
				seen = append(seen, e.Type+": "+e.DisplayMessage)
				if e.Type == tc.eventType && strings.Contains(e.DisplayMessage, tc.want) {
					return nil
				}
			}
			return fmt.Errorf("events %q", seen)
		})
		stopAndCheckNoContainers(t, c, engine, tc.job.ID)
	}
}
