package client

import (
	"reflect"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestBuildEnv(t *testing.T) {
	task := &state.Task{Name: "web", Meta: map[string]string{"tier": "task"},
		Env: map[string]string{
			"LISTEN":  "${SCHED_IP_http}:${SCHED_PORT_http}",
			"RACK":    "${meta.rack} on ${attr.kernel.name} in ${node.datacenter}",
			"UNKNOWN": "${nope} stays",
		}}
	j := &state.Job{ID: "shop", Name: "shop", Meta: map[string]string{"owner": "ops", "tier": "job"},
		TaskGroups: []*state.TaskGroup{{Name: "front", Meta: map[string]string{"tier": "group", "team-name": "a"}, Tasks: []*state.Task{task}}}}
	a := &state.Allocation{ID: "a1", Name: "shop.front[3]", JobID: "shop", Job: j, TaskGroup: "front", Namespace: "prod",
		AllocatedResources: &state.AllocatedResources{
			Tasks: map[string]*state.AllocatedTaskResources{"web": {CPU: 250, MemoryMB: 128,
				Networks: []*state.NetworkResource{{DynamicPorts: []state.Port{{Label: "admin", Value: 25001}}}}}},
			Shared: state.AllocatedSharedResources{Networks: []*state.NetworkResource{{
				DynamicPorts:  []state.Port{{Label: "http", Value: 23456}},
				ReservedPorts: []state.Port{{Label: "pub-lic", Value: 8443, HostNetwork: "public"}},
			}}},
		}}
	node := &state.Node{ID: "n1", Name: "node-1", Datacenter: "dc9", Attributes: map[string]string{"kernel.name": "linux"}, Meta: map[string]string{"rack": "r7"}}
	env := buildEnv(&envInput{Alloc: a, Group: j.TaskGroups[0], Task: task, Node: node, Region: "eu",
		IP: "10.0.0.5", HostNetworkIPs: map[string]string{"public": "203.0.113.9"},
		AllocDir: "/d/alloc", TaskDir: "/d/web", LocalDir: "/d/web/local", SecretsDir: "/d/web/secrets"})
	want := map[string]string{
		"SCHED_ALLOC_ID": "a1", "SCHED_ALLOC_INDEX": "3", "SCHED_JOB_ID": "shop", "SCHED_TASK_NAME": "web",
		"SCHED_GROUP_NAME": "front", "SCHED_NAMESPACE": "prod", "SCHED_DC": "dc9", "SCHED_REGION": "eu",
		"SCHED_CPU_LIMIT": "250", "SCHED_MEMORY_LIMIT": "128",
		"SCHED_PORT_http": "23456", "SCHED_IP_http": "10.0.0.5", "SCHED_ADDR_http": "10.0.0.5:23456",
		"SCHED_PORT_admin": "25001", "SCHED_ADDR_admin": "10.0.0.5:25001",
		"SCHED_PORT_pub_lic": "8443", "SCHED_IP_pub_lic": "203.0.113.9",
		"SCHED_META_tier": "task", "SCHED_META_TIER": "task", "SCHED_META_owner": "ops", "SCHED_META_OWNER": "ops",
		"SCHED_META_team_name": "a", "SCHED_META_TEAM_NAME": "a",
		"SCHED_ALLOC_DIR": "/d/alloc", "SCHED_TASK_DIR": "/d/web/local", "SCHED_SECRETS_DIR": "/d/web/secrets",
		"LISTEN": "10.0.0.5:23456", "RACK": "r7 on linux in dc9", "UNKNOWN": "${nope} stays",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
}

func TestAllocIndex(t *testing.T) {
	for name, want := range map[string]int{"a.b[0]": 0, "a.b[12]": 12, "a.b[x]": 0, "weird": 0, "a[1].b[7]": 7} {
		if got := allocIndex(name); got != want {
			t.Errorf("allocIndex(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestInterpolateConfig(t *testing.T) {
	env := map[string]string{"SCHED_PORT_http": "8080", "HOME": "/h"}
	node := &state.Node{ID: "n1", Attributes: map[string]string{"cpu.arch": "amd64"}}
	in := map[string]any{
		"command":  "python3",
		"args":     []any{"-m", "http.server", "${SCHED_PORT_http}"},
		"nested":   map[string]any{"k": "${attr.cpu.arch}-${node.unique.id}", "n": 3},
		"list":     []string{"${env.HOME}"},
		"unclosed": "${SCHED_PORT_http",
	}
	got := interpolateConfig(in, env, node)
	want := map[string]any{
		"command":  "python3",
		"args":     []any{"-m", "http.server", "8080"},
		"nested":   map[string]any{"k": "amd64-n1", "n": 3},
		"list":     []string{"/h"},
		"unclosed": "${SCHED_PORT_http",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
	if in["args"].([]any)[2] != "${SCHED_PORT_http}" {
		t.Fatal("the job's config was changed in place")
	}
}

// TestBuildEnvPortsFromEachSource: buildEnv lists ports only when
// hasPorts says there are any (allocPorts is not called otherwise), so
// each place a port can come from must be seen by it: the group's
// networks, the group's ports alone (bridge mode), the task's networks.
func TestBuildEnvPortsFromEachSource(t *testing.T) {
	task := &state.Task{Name: "web"}
	for _, c := range []struct {
		name string
		ar   *state.AllocatedResources
		want string // SCHED_PORT_p, "" for none
	}{
		{"none", nil, ""},
		{"no networks", &state.AllocatedResources{}, ""},
		{"group network", &state.AllocatedResources{Shared: state.AllocatedSharedResources{
			Networks: []*state.NetworkResource{{DynamicPorts: []state.Port{{Label: "p", Value: 20001}}}}}}, "20001"},
		{"group ports alone", &state.AllocatedResources{Shared: state.AllocatedSharedResources{
			Ports: []state.AllocatedPort{{Label: "p", Value: 20002}}}}, "20002"},
		{"task network", &state.AllocatedResources{Tasks: map[string]*state.AllocatedTaskResources{"web": {
			Networks: []*state.NetworkResource{{ReservedPorts: []state.Port{{Label: "p", Value: 20003}}}}}}}, "20003"},
	} {
		a := &state.Allocation{ID: "a1", Name: "j.g[0]", AllocatedResources: c.ar}
		env := buildEnv(&envInput{Alloc: a, Task: task, IP: "10.0.0.5"})
		if got := env["SCHED_PORT_p"]; got != c.want {
			t.Errorf("%s: SCHED_PORT_p = %q, want %q", c.name, got, c.want)
		}
		if _, ok := env["NOMAD_PORT_p"]; ok != (c.want != "") {
			t.Errorf("%s: NOMAD_PORT_p set = %v, want %v", c.name, ok, c.want != "")
		}
	}
}
