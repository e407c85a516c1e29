package state

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"
)

// TestAllocatedResourcesWireShape: a task's resources are written in
// Nomad's nested shape and read back unchanged.
func TestAllocatedResourcesWireShape(t *testing.T) {
	in := &AllocatedResources{
		Tasks: map[string]*AllocatedTaskResources{"t": {CPU: 20, MemoryMB: 32,
			Networks: []*NetworkResource{{IP: "127.0.0.1", DynamicPorts: []Port{{Label: "http", Value: 25000}}}}}},
		Shared: AllocatedSharedResources{DiskMB: 300, Ports: []AllocatedPort{{Label: "http", Value: 25000, HostIP: "127.0.0.1"}}},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Tasks map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	task := raw.Tasks["t"]
	if string(task["Cpu"]) != `{"CpuShares":20}` || string(task["Memory"]) != `{"MemoryMB":32}` || task["CPU"] != nil || task["MemoryMB"] != nil {
		t.Errorf("task resources on the wire: %s", b)
	}
	var out AllocatedResources
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&out, in) {
		t.Errorf("round trip: %s", b)
	}
}

// TestAllocatedResourcesLegacyFlatForm: the flat form of earlier versions
// ({"CPU":N,"MemoryMB":M}), which a client agent may have kept on disk,
// still reads.
func TestAllocatedResourcesLegacyFlatForm(t *testing.T) {
	var r AllocatedTaskResources
	if err := json.Unmarshal([]byte(`{"CPU":20,"MemoryMB":32,"Networks":[{"IP":"10.0.0.1"}]}`), &r); err != nil ||
		r.CPU != 20 || r.MemoryMB != 32 || len(r.Networks) != 1 {
		t.Errorf("flat form: %+v, %v", r, err)
	}
	if err := json.Unmarshal([]byte(`{"Cpu":{"CpuShares":"x"}}`), &r); err == nil {
		t.Error("a string CpuShares was accepted")
	}
}

// TestNodeWireShapes: node resources, reserved resources and the drain
// strategy are written in Nomad's shapes and read back unchanged; the
// flat forms of earlier versions still read.
func TestNodeWireShapes(t *testing.T) {
	in := &Node{
		NodeResources:     &NodeResources{CPU: 4000, Cores: 4, MemoryMB: 8192, DiskMB: 10240, MinDynamicPort: 20000, MaxDynamicPort: 32000},
		ReservedResources: &NodeReservedResources{CPU: 500, MemoryMB: 512, DiskMB: 1024, ReservedPorts: "22,80"},
		DrainStrategy:     &DrainStrategy{Deadline: 3600e9, IgnoreSystemJobs: true, ForceDeadline: 1767225600e9, StartedAt: 1767222000e9},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		NodeResources, ReservedResources, DrainStrategy map[string]json.RawMessage
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ got, want string }{
		{string(raw.NodeResources["Cpu"]), `{"CpuShares":4000,"TotalCpuCores":4}`},
		{string(raw.NodeResources["Memory"]), `{"MemoryMB":8192}`},
		{string(raw.NodeResources["Disk"]), `{"DiskMB":10240}`},
		{string(raw.ReservedResources["Cpu"]), `{"CpuShares":500}`},
		{string(raw.ReservedResources["Networks"]), `{"ReservedHostPorts":"22,80"}`},
		{string(raw.DrainStrategy["ForceDeadline"]), `"2026-01-01T00:00:00Z"`},
		{string(raw.DrainStrategy["StartedAt"]), `"2025-12-31T23:00:00Z"`},
	} {
		if c.got != c.want {
			t.Errorf("wire member %s, want %s", c.got, c.want)
		}
	}
	var out Node
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.NodeResources, in.NodeResources) || !reflect.DeepEqual(out.ReservedResources, in.ReservedResources) ||
		!reflect.DeepEqual(out.DrainStrategy, in.DrainStrategy) {
		t.Errorf("round trip: %s", b)
	}
	var zero DrainStrategy
	if b, _ := json.Marshal(DrainStrategy{Deadline: -1}); json.Unmarshal(b, &zero) != nil || zero.ForceDeadline != 0 || zero.StartedAt != 0 || zero.Deadline != -1 {
		t.Errorf("unset times: %s -> %+v", b, zero)
	}
	legacy := `{"NodeResources":{"CPU":4000,"Cores":4,"MemoryMB":8192,"DiskMB":10240},
		"ReservedResources":{"CPU":500,"MemoryMB":512,"DiskMB":1024,"ReservedPorts":"22,80"},
		"DrainStrategy":{"Deadline":3600000000000,"IgnoreSystemJobs":true,"ForceDeadline":1767225600000000000,"StartedAt":1767222000000000000}}`
	var old Node
	if err := json.Unmarshal([]byte(legacy), &old); err != nil {
		t.Fatal(err)
	}
	in.NodeResources.MinDynamicPort, in.NodeResources.MaxDynamicPort = 0, 0
	if !reflect.DeepEqual(old.NodeResources, in.NodeResources) || !reflect.DeepEqual(old.ReservedResources, in.ReservedResources) ||
		!reflect.DeepEqual(old.DrainStrategy, in.DrainStrategy) {
		t.Errorf("legacy form: %+v %+v %+v", old.NodeResources, old.ReservedResources, old.DrainStrategy)
	}
}

// TestTaskEventJSONOmitsZeroFields: an event's JSON names Type, Time and
// the fields it sets, no others, and reads back equal.
func TestTaskEventJSONOmitsZeroFields(t *testing.T) {
	e := TaskEvent{Type: TaskTerminated, Time: 7, ExitCode: 1, DisplayMessage: "Exit Code: 1", Details: map[string]string{"exit_code": "1"}}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(keys)), []string{"Details", "DisplayMessage", "ExitCode", "Time", "Type"}; !slices.Equal(got, want) {
		t.Errorf("event JSON names %v, want %v", got, want)
	}
	var back TaskEvent
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, e) {
		t.Errorf("read back %+v, want %+v", back, e)
	}
	b, _ = json.Marshal(TaskEvent{Type: TaskStarted})
	if string(b) != `{"Type":"Started","Time":0}` {
		t.Errorf("a bare event is %s", b)
	}
}
