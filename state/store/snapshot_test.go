package store

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// stFillEveryTable writes at least one row into every table, through
// commands, and fails when a table of the schema stays empty, so a new
// table cannot slip past the snapshot test.
func stFillEveryTable(t *testing.T, s *Store) {
	t.Helper()
	healthy := true
	stApply(t, s, 10, NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "prod", Meta: map[string]string{"a": "b"}}}})
	stApply(t, s, 11, NodePoolUpsertRequestType, &NodePoolUpsertRequest{NodePools: []*state.NodePool{{Name: "gpu",
		SchedulerConfiguration: map[string]any{"algorithm": "spread", "opts": map[string]any{"x": int64(1)}}}}})
	stApply(t, s, 12, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")})
	job := stJob("web")
	job.Payload = []byte{1, 2, 3}
	stApply(t, s, 13, JobRegisterRequestType, &JobRegisterRequest{Job: job, Eval: stEval("e1", job),
		Submission: &state.JobSubmission{Format: state.SubmissionFormatHCL2, Source: `job "web" {}`, VariableFlags: map[string]string{"v": "1"}}, Now: 13})
	alloc := stAlloc("a1", job, "n1")
	alloc.DeploymentStatus = &state.AllocDeploymentStatus{Healthy: &healthy, Timestamp: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
	stApply(t, s, 14, AllocUpdateRequestType, &AllocUpdateRequest{
		Allocs:     []*state.Allocation{alloc},
		Deployment: &state.Deployment{ID: "d1", Namespace: state.DefaultNamespace, JobID: "web", JobCreateIndex: 13, Status: state.DeploymentStatusRunning},
		Now:        14,
	})
	stApply(t, s, 15, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{{
		ID: "a1", ClientStatus: state.AllocClientStatusRunning,
		TaskStates: map[string]*state.TaskState{"server": {State: state.TaskStateRunning, StartedAt: time.Date(2024, 1, 2, 3, 4, 6, 0, time.UTC),
			Events: []*state.TaskEvent{{Type: state.TaskStarted, Time: 15}}}},
	}}, Now: 15})
	stApply(t, s, 16, ServiceUpsertRequestType, &ServiceUpsertRequest{Services: []*state.ServiceRegistration{{
		ID: "s1", ServiceName: "web", Namespace: state.DefaultNamespace, JobID: "web", AllocID: "a1", NodeID: "n1", Tags: []string{"t"}, Port: 80,
	}}})
	stApply(t, s, 17, JobScaleRequestType, &JobScaleRequest{Namespace: state.DefaultNamespace, JobID: "web", Group: job.TaskGroups[0].Name,
		Message: "autoscaler says hi", Meta: map[string]any{"by": "test"}, Now: 17})
	stFillChildTables(t, s, 18)   // children_test.go
	stFillACLTables(t, s, 20)     // acl_store_test.go
	stFillClusterTables(t, s, 25) // scheduler_config_test.go
	mgFillTables(t, s, 200)       // snapshot_management_test.go
	stFillQuotaTables(t, s, 190)  // quotas_test.go
	dump := stDump(t, s)
	for _, def := range tableDefs() {
		if len(dump[def.name]) == 0 {
			t.Errorf("table %s has no row: extend stFillEveryTable", def.name)
		}
	}
}

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	src := stStore(t, Config{})
	stFillEveryTable(t, src)
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	snap.Release()

	dst := stStore(t, Config{})
	stApply(t, dst, 50, NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "stale"}}})
	if err := dst.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	stCompareDumps(t, stDump(t, src), stDump(t, dst))
	if got, want := dst.LatestIndex(), src.LatestIndex(); got != want {
		t.Errorf("LatestIndex after restore = %d, want %d", got, want)
	}
	for _, def := range tableDefs() {
		if got, want := dst.Index(def.name), src.Index(def.name); got != want {
			t.Errorf("Index(%s) after restore = %d, want %d", def.name, got, want)
		}
	}
	// The restored store keeps working, built-ins included.
	resp := stApplyErr(t, dst, 100, NodePoolDeleteRequestType, &NodePoolDeleteRequest{Names: []string{state.NodePoolDefault}})
	if _, ok := resp.(error); !ok {
		t.Error("built-in pool deletable after restore")
	}
	stRegister(t, dst, 101, stVersionJob(1), nil)
	if j := stMust[*state.Job](t)(dst.JobByID(nil, state.DefaultNamespace, "web")); j.Version != 1 || j.CreateIndex != 13 {
		t.Errorf("job after restore and update = v%d ci %d", j.Version, j.CreateIndex)
	}
}

func TestRestoreRejectsBadSnapshots(t *testing.T) {
	src := stStore(t, Config{})
	stFillEveryTable(t, src)
	snap, _ := src.Snapshot()
	var buf bytes.Buffer
	if err := snap.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	full := buf.Bytes()

	var unknown bytes.Buffer
	enc := newStreamEncoder(&unknown)
	for _, v := range []any{snapshotHeader{Format: snapshotFormat}, "no_such_table", map[string]any{"a": 1}, ""} {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	var future bytes.Buffer
	if err := newStreamEncoder(&future).Encode(snapshotHeader{Format: 99}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"truncated", full[:len(full)-1], "truncated"},
		{"cut mid-row", full[:len(full)/2], ""},
		{"empty", nil, "header"},
		{"unknown table", unknown.Bytes(), "unknown table"},
		{"future format", future.Bytes(), "format"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := stStore(t, Config{})
			stRegister(t, dst, 7, stJob("keep"), nil)
			before := stDump(t, dst)
			abandon := dst.AbandonCh()
			err := dst.Restore(bytes.NewReader(tc.data))
			if err == nil {
				t.Fatal("Restore accepted a bad snapshot")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
			stCompareDumps(t, before, stDump(t, dst))
			select {
			case <-abandon:
				t.Error("a failed Restore closed AbandonCh")
			default:
			}
		})
	}
}

func TestSnapshotIsPointInTime(t *testing.T) {
	s := stStore(t, Config{})
	stRegister(t, s, 10, stJob("web"), nil)
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	stRegister(t, s, 11, stJob("api"), nil)
	stRegister(t, s, 12, stVersionJob(1), nil)

	jobs := stMust[[]*state.Job](t)(snap.Jobs(nil, state.DefaultNamespace, ""))
	if len(jobs) != 1 || jobs[0].Version != 0 {
		t.Errorf("snapshot sees %d jobs (v%d of the first), want only web v0", len(jobs), jobs[0].Version)
	}
	if snap.LatestIndex() != 10 || s.LatestIndex() != 12 {
		t.Errorf("LatestIndex snapshot %d store %d, want 10 and 12", snap.LatestIndex(), s.LatestIndex())
	}
}

// TestApplyIsDeterministic applies the same log to two stores and expects
// identical tables, as two servers must end with.
func TestApplyIsDeterministic(t *testing.T) {
	a, b := stStore(t, Config{}), stStore(t, Config{})
	stFillEveryTable(t, a)
	stFillEveryTable(t, b)
	stCompareDumps(t, stDump(t, a), stDump(t, b))
}
