package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

func smallJob(id string) *state.Job {
	return &state.Job{
		ID:   id,
		Type: state.JobTypeBatch,
		Meta: map[string]string{"owner": id},
		TaskGroups: []*state.TaskGroup{{
			Name:  "g",
			Count: 1,
			Tasks: []*state.Task{{Name: "t", Driver: "mock", Config: map[string]any{"run_for": "1s"}}},
		}},
	}
}

// TestKillAndRestartKeepsAcknowledgedWrites registers jobs from 16 clients,
// SIGKILLs the server while writes are in flight, restarts it on the same
// data dir, and checks that every write that was acknowledged is there.
func TestKillAndRestartKeepsAcknowledgedWrites(t *testing.T) {
	srv := newServer(t)
	srv.start()
	c := srv.client()
	ctx := context.Background()

	const clients = 16
	const killAfter = 400 // acknowledgements before the kill
	var (
		mu    sync.Mutex
		acked = map[string]uint64{} // job ID → acknowledged JobModifyIndex
		count atomic.Int64
		wg    sync.WaitGroup
		kill  sync.Once
	)
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				id := fmt.Sprintf("durable-%02d-%05d", w, i)
				resp, _, err := c.Jobs().Register(ctx, smallJob(id), nil, nil)
				if err != nil {
					return // the server is gone: this write was not acknowledged
				}
				mu.Lock()
				acked[id] = resp.JobModifyIndex
				mu.Unlock()
				if count.Add(1) == killAfter {
					kill.Do(srv.kill)
				}
			}
		}()
	}
	wg.Wait()
	if len(acked) < killAfter {
		t.Fatalf("only %d writes acknowledged before the kill, want at least %d", len(acked), killAfter)
	}

	srv.start()
	for id, index := range acked {
		job, _, err := c.Jobs().Info(ctx, id, nil)
		if err != nil {
			t.Fatalf("acknowledged job %s (JobModifyIndex %d) lost after SIGKILL: %v", id, index, err)
		}
		if job.JobModifyIndex != index || job.Meta["owner"] != id {
			t.Fatalf("job %s came back as JobModifyIndex %d meta %v, want %d", id, job.JobModifyIndex, job.Meta, index)
		}
	}
	// The evaluation written with each job survived too.
	list, _, err := c.Jobs().List(ctx, &api.QueryOptions{Prefix: "durable-"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) < len(acked) {
		t.Fatalf("list shows %d jobs, %d were acknowledged", len(list), len(acked))
	}
	t.Logf("%d acknowledged writes, all present after SIGKILL and restart", len(acked))

	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestCleanRestartKeepsState stops the server with SIGTERM and restarts it:
// jobs, versions and namespaces are all back.
func TestCleanRestartKeepsState(t *testing.T) {
	srv := newServer(t)
	srv.start()
	c := srv.client()
	ctx := context.Background()

	if _, err := c.Namespaces().Register(ctx, &state.Namespace{Name: "team-a", Description: "A"}, nil); err != nil {
		t.Fatal(err)
	}
	job := smallJob("versioned")
	job.Namespace = "team-a"
	for v := range 3 {
		job.Meta = map[string]string{"v": fmt.Sprint(v)}
		if _, _, err := c.Jobs().Register(ctx, job, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	srv.start()
	ns := &api.QueryOptions{Namespace: "team-a"}
	vs, _, err := c.Jobs().Versions(ctx, "versioned", false, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs.Versions) != 3 || vs.Versions[0].Version != 2 || vs.Versions[0].Meta["v"] != "2" {
		t.Fatalf("after restart: %d versions, newest %+v", len(vs.Versions), vs.Versions[0])
	}
	if n, _, err := c.Namespaces().Info(ctx, "team-a", nil); err != nil || n.Description != "A" {
		t.Fatalf("namespace after restart: %+v, %v", n, err)
	}
}
