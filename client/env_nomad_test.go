package client

import (
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

// A Nomad jobspec's variables: every SCHED_* name is also set as NOMAD_*,
// and ${NOMAD_*} interpolates in the task's env and driver config; a
// NOMAD_* the task sets itself wins over the alias.
func TestBuildEnvNomadNames(t *testing.T) {
	task := &state.Task{Name: "web", Meta: map[string]string{"x": "1"},
		Env: map[string]string{
			"LISTEN":          "${NOMAD_IP_http}:${NOMAD_PORT_http}",
			"DIR":             "${NOMAD_TASK_DIR}/conf",
			"NOMAD_ALLOC_DIR": "/mine",
		}}
	j := &state.Job{ID: "shop", Name: "shop", TaskGroups: []*state.TaskGroup{{Name: "front", Tasks: []*state.Task{task}}}}
	a := &state.Allocation{ID: "a1", Name: "shop.front[2]", JobID: "shop", Job: j, TaskGroup: "front", Namespace: "prod",
		AllocatedResources: &state.AllocatedResources{
			Tasks: map[string]*state.AllocatedTaskResources{"web": {CPU: 100, MemoryMB: 64}},
			Shared: state.AllocatedSharedResources{Networks: []*state.NetworkResource{{
				DynamicPorts: []state.Port{{Label: "http", Value: 23456}},
			}}},
		}}
	node := &state.Node{ID: "n1", Name: "node-1", Datacenter: "dc1"}
	env := buildEnv(&envInput{Alloc: a, Group: j.TaskGroups[0], Task: task, Node: node, Region: "global",
		IP: "10.0.0.5", AllocDir: "/d/alloc", TaskDir: "/d/web", LocalDir: "/d/web/local", SecretsDir: "/d/web/secrets"})

	aliased := 0
	for k, v := range env {
		rest, ok := strings.CutPrefix(k, "SCHED_")
		if !ok {
			continue
		}
		aliased++
		if rest == "ALLOC_DIR" {
			continue // set by the task
		}
		if got, ok := env["NOMAD_"+rest]; !ok || got != v {
			t.Errorf("NOMAD_%s = %q (set %v), want %q as SCHED_%s", rest, got, ok, v, rest)
		}
	}
	if aliased < 15 {
		t.Fatalf("only %d SCHED_* variables: %v", aliased, env)
	}
	for k, want := range map[string]string{
		"NOMAD_PORT_http": "23456", "NOMAD_ALLOC_INDEX": "2", "NOMAD_META_x": "1", "NOMAD_META_X": "1",
		"NOMAD_TASK_DIR": "/d/web/local", "NOMAD_JOB_NAME": "shop", "NOMAD_REGION": "global",
		"LISTEN": "10.0.0.5:23456", "DIR": "/d/web/local/conf",
		"NOMAD_ALLOC_DIR": "/mine", "SCHED_ALLOC_DIR": "/d/alloc",
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}

	cfg := interpolateConfig(map[string]any{"args": []any{"${NOMAD_PORT_http}", "${NOMAD_META_x}"}}, env, node)
	if args := cfg["args"].([]any); args[0] != "23456" || args[1] != "1" {
		t.Errorf("driver config args = %v, want [23456 1]", args)
	}
}
