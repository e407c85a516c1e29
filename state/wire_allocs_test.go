package state

import (
	"encoding/json"
	"reflect"
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
