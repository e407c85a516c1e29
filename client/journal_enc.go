package client

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/state"
)

// The journal's records are encoded by hand (appendRecord) rather than
// by encoding/json: a client writes one at every task start and three at
// every stop, and encoding/json spent most of a record's ~10 µs walking
// the Allocation, the TaskState and its Events by reflection, sorting
// map keys and allocating on the way (4-5% of a dev agent's CPU while it
// started allocations by the thousand, 15% in a loop that also stopped
// them).
//
// The output is the JSON encoding/json writes for the same record, but
// for white space and map key order (strings are escaped as encoding/json
// escapes them, by state.AppendJSONString): the loader reads it with encoding/json as before, and reads
// the records of earlier versions as before. Every field is written,
// under its Go name, with the omitempty of its tag, nil slices, maps and
// pointers as null, times as time.Time.MarshalJSON writes them, []byte
// as base64, AllocatedTaskResources in the nested wire shape of its
// MarshalJSON and Scores through its MarshalJSON.
//
// A field added to one of the encoded types would be silently left out:
// journalShapesKnown compares the types' fields with those the appenders
// know, and while they differ frameLocked uses encoding/json instead
// (TestJournalEncoderKnowsEveryField fails until the appenders are
// brought up to date).

// journalShapes are the fields of every type the appenders encode, as
// typeShape writes them.
var journalShapes = map[reflect.Type]string{
	reflect.TypeFor[journalRecord]():                  "ID string;Removed bool json:\",omitempty\";Alloc *state.Allocation json:\",omitempty\";Run *client.persistedRun json:\",omitempty\";Job json.RawMessage json:\",omitempty\";runJSON []uint8",
	reflect.TypeFor[state.Allocation]():               "ID string;Namespace string;EvalID string;Name string;NodeID string;NodeName string;JobID string;Job *state.Job;TaskGroup string;AllocatedResources *state.AllocatedResources;Metrics *state.AllocMetric;DesiredStatus string;DesiredDescription string;DesiredTransition state.DesiredTransition;ClientStatus string;ClientDescription string;TaskStates map[string]*state.TaskState;PreviousAllocation string;NextAllocation string;DeploymentID string;DeploymentStatus *state.AllocDeploymentStatus;RescheduleTracker *state.RescheduleTracker;FollowupEvalID string;PreemptedAllocations []string;PreemptedByAllocation string;CreateIndex uint64;ModifyIndex uint64;AllocModifyIndex uint64;CreateTime int64;ModifyTime int64",
	reflect.TypeFor[state.AllocatedResources]():       "Tasks map[string]*state.AllocatedTaskResources;Shared state.AllocatedSharedResources",
	reflect.TypeFor[state.AllocatedTaskResources]():   "CPU int;MemoryMB int;MemoryMaxMB int;Networks []*state.NetworkResource",
	reflect.TypeFor[state.AllocatedSharedResources](): "DiskMB int;Networks []*state.NetworkResource;Ports []state.AllocatedPort",
	reflect.TypeFor[state.AllocatedPort]():            "Label string;Value int;To int;HostIP string",
	reflect.TypeFor[state.NetworkResource]():          "Mode string;Device string;CIDR string;IP string;MBits int;DNS *state.DNSConfig;ReservedPorts []state.Port;DynamicPorts []state.Port",
	reflect.TypeFor[state.DNSConfig]():                "Servers []string;Searches []string;Options []string",
	reflect.TypeFor[state.Port]():                     "Label string;Value int;To int;HostNetwork string",
	reflect.TypeFor[state.AllocMetric]():              "NodesEvaluated int;NodesFiltered int;NodesInPool int;NodesAvailable map[string]int;ClassFiltered map[string]int;ConstraintFiltered map[string]int;NodesExhausted int;ClassExhausted map[string]int;DimensionExhausted map[string]int;QuotaExhausted []string;Scores state.Scores;AllocationTime time.Duration;CoalescedFailures int",
	reflect.TypeFor[state.DesiredTransition]():        "Migrate *bool json:\",omitempty\";Reschedule *bool json:\",omitempty\";ForceReschedule *bool json:\",omitempty\";NoShutdownDelay *bool json:\",omitempty\"",
	reflect.TypeFor[state.AllocDeploymentStatus]():    "Healthy *bool;Timestamp time.Time;Canary bool;ModifyIndex uint64",
	reflect.TypeFor[state.RescheduleTracker]():        "Events []*state.RescheduleEvent",
	reflect.TypeFor[state.RescheduleEvent]():          "RescheduleTime int64;PrevAllocID string;PrevNodeID string;Delay time.Duration",
	reflect.TypeFor[state.TaskState]():                "State string;Failed bool;Restarts uint64;LastRestart time.Time;StartedAt time.Time;FinishedAt time.Time;Events []*state.TaskEvent",
	reflect.TypeFor[state.TaskEvent]():                "Type string;Time int64;FailsTask bool json:\",omitempty\";RestartReason string json:\",omitempty\";SetupError string json:\",omitempty\";DriverError string json:\",omitempty\";ExitCode int json:\",omitempty\";Signal int json:\",omitempty\";Message string json:\",omitempty\";KillTimeout time.Duration json:\",omitempty\";KillError string json:\",omitempty\";KillReason string json:\",omitempty\";StartDelay int64 json:\",omitempty\";DownloadError string json:\",omitempty\";ValidationError string json:\",omitempty\";DiskLimit int64 json:\",omitempty\";FailedSibling string json:\",omitempty\";SecretsError string json:\",omitempty\";TaskSignalReason string json:\",omitempty\";TaskSignal string json:\",omitempty\";DriverMessage string json:\",omitempty\";DisplayMessage string json:\",omitempty\";Details map[string]string json:\",omitempty\"",
	reflect.TypeFor[persistedRun]():                   "Tasks map[string]*client.persistedTask;Stopping bool json:\",omitempty\";Failed bool json:\",omitempty\";Description string json:\",omitempty\";TerminalAt time.Time json:\",omitempty\";WorkloadUID uint32 json:\",omitempty\"",
	reflect.TypeFor[persistedTask]():                  "State *state.TaskState;Handle *driver.TaskHandle json:\",omitempty\";Restart client.restartWindow",
	reflect.TypeFor[driver.TaskHandle]():              "TaskID string;Driver string;PID int;StartedAt time.Time;State []uint8",
	reflect.TypeFor[restartWindow]():                  "Start time.Time;Count int",
}

// typeShape lists t's fields: name, type and json tag of each (the
// journal is JSON: other keys, such as the Raft log's `codec` ones, do
// not change what the appenders write).
func typeShape(t reflect.Type) string {
	var b strings.Builder
	for i := range t.NumField() {
		f := t.Field(i)
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(f.Name + " " + f.Type.String())
		if tag, ok := f.Tag.Lookup("json"); ok {
			b.WriteString(" json:" + strconv.Quote(tag))
		}
	}
	return b.String()
}

// journalShapesKnown reports whether every encoded type has the fields
// the appenders know (computed once).
var journalShapesKnown = sync.OnceValue(func() bool {
	for t, want := range journalShapes {
		if typeShape(t) != want {
			return false
		}
	}
	return true
})

// errJournalEnc is a value the appenders cannot write as encoding/json
// would (a time outside years 0-9999, a custom marshaller's error):
// frameLocked then lets encoding/json encode the record, and fail.
var errJournalEnc = fmt.Errorf("journal: value needs encoding/json")

// appendRecord appends rec's JSON; job, when set, is written as its Job
// (rec.Alloc's job, encoded apart), and rec.Alloc's Job as null.
func appendRecord(b []byte, rec *journalRecord, job json.RawMessage) ([]byte, error) {
	var err error
	b = append(b, `{"ID":`...)
	b = state.AppendJSONString(b, rec.ID)
	if rec.Removed {
		b = append(b, `,"Removed":true`...)
	}
	if rec.Alloc != nil {
		b = append(b, `,"Alloc":`...)
		if b, err = appendAlloc(b, rec.Alloc, len(job) == 0); err != nil {
			return b, err
		}
	}
	if rec.runJSON != nil {
		b = append(append(b, `,"Run":`...), rec.runJSON...)
	} else if rec.Run != nil {
		b = append(b, `,"Run":`...)
		if b, err = appendRun(b, rec.Run); err != nil {
			return b, err
		}
	}
	if len(job) == 0 {
		job = rec.Job
	}
	if len(job) > 0 {
		b = append(append(b, `,"Job":`...), job...)
	}
	return append(b, '}'), nil
}

func appendRun(b []byte, r *persistedRun) ([]byte, error) {
	b, err := appendMap(append(b, `{"Tasks":`...), r.Tasks, appendPersistedTask)
	if err != nil {
		return b, err
	}
	return appendRunRest(b, r)
}

// appendRunRest writes r's fields after Tasks, and closes the object.
func appendRunRest(b []byte, r *persistedRun) ([]byte, error) {
	var err error
	if r.Stopping {
		b = append(b, `,"Stopping":true`...)
	}
	if r.Failed {
		b = append(b, `,"Failed":true`...)
	}
	if r.Description != "" {
		b = state.AppendJSONString(append(b, `,"Description":`...), r.Description)
	}
	// omitempty does not omit a struct: a zero TerminalAt is written.
	if b, err = appendTime(append(b, `,"TerminalAt":`...), r.TerminalAt); err != nil {
		return b, err
	}
	if r.WorkloadUID != 0 {
		b = strconv.AppendUint(append(b, `,"WorkloadUID":`...), uint64(r.WorkloadUID), 10)
	}
	return append(b, '}'), nil
}

func appendPersistedTask(b []byte, t *persistedTask) ([]byte, error) {
	if t == nil {
		return append(b, "null"...), nil
	}
	return appendTaskParts(b, t.State, t.Handle, t.Restart)
}

// appendTaskParts writes a persistedTask of these fields: a task
// runner's, read under its lock without the copies of a snapshot.
func appendTaskParts(b []byte, ts *state.TaskState, h *driver.TaskHandle, win restartWindow) ([]byte, error) {
	var err error
	b = append(b, `{"State":`...)
	if b, err = appendTaskState(b, ts); err != nil {
		return b, err
	}
	if h != nil {
		b = state.AppendJSONString(append(b, `,"Handle":{"TaskID":`...), h.TaskID)
		b = state.AppendJSONString(append(b, `,"Driver":`...), h.Driver)
		b = strconv.AppendInt(append(b, `,"PID":`...), int64(h.PID), 10)
		if b, err = appendTime(append(b, `,"StartedAt":`...), h.StartedAt); err != nil {
			return b, err
		}
		b = append(b, `,"State":`...)
		if h.State == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, h.State)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	if b, err = appendTime(append(b, `,"Restart":{"Start":`...), win.Start); err != nil {
		return b, err
	}
	b = strconv.AppendInt(append(b, `,"Count":`...), int64(win.Count), 10)
	return append(b, "}}"...), nil
}

func appendTaskState(b []byte, ts *state.TaskState) ([]byte, error) {
	if ts == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = state.AppendJSONString(append(b, `{"State":`...), ts.State)
	b = strconv.AppendBool(append(b, `,"Failed":`...), ts.Failed)
	b = strconv.AppendUint(append(b, `,"Restarts":`...), ts.Restarts, 10)
	if b, err = appendTime(append(b, `,"LastRestart":`...), ts.LastRestart); err != nil {
		return b, err
	}
	if b, err = appendTime(append(b, `,"StartedAt":`...), ts.StartedAt); err != nil {
		return b, err
	}
	if b, err = appendTime(append(b, `,"FinishedAt":`...), ts.FinishedAt); err != nil {
		return b, err
	}
	b = append(b, `,"Events":`...)
	if ts.Events == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, ev := range ts.Events {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendTaskEvent(b, ev)
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// appendTaskEvent writes an event: every field but Type and Time is
// omitempty.
func appendTaskEvent(b []byte, ev *state.TaskEvent) []byte {
	if ev == nil {
		return append(b, "null"...)
	}
	b = state.AppendJSONString(append(b, `{"Type":`...), ev.Type)
	b = strconv.AppendInt(append(b, `,"Time":`...), ev.Time, 10)
	if ev.FailsTask {
		b = append(b, `,"FailsTask":true`...)
	}
	str := func(b []byte, name, v string) []byte {
		if v == "" {
			return b
		}
		b = append(append(append(b, `,"`...), name...), '"', ':')
		return state.AppendJSONString(b, v)
	}
	num := func(b []byte, name string, v int64) []byte {
		if v == 0 {
			return b
		}
		b = append(append(append(b, `,"`...), name...), '"', ':')
		return strconv.AppendInt(b, v, 10)
	}
	b = str(b, "RestartReason", ev.RestartReason)
	b = str(b, "SetupError", ev.SetupError)
	b = str(b, "DriverError", ev.DriverError)
	b = num(b, "ExitCode", int64(ev.ExitCode))
	b = num(b, "Signal", int64(ev.Signal))
	b = str(b, "Message", ev.Message)
	b = num(b, "KillTimeout", int64(ev.KillTimeout))
	b = str(b, "KillError", ev.KillError)
	b = str(b, "KillReason", ev.KillReason)
	b = num(b, "StartDelay", ev.StartDelay)
	b = str(b, "DownloadError", ev.DownloadError)
	b = str(b, "ValidationError", ev.ValidationError)
	b = num(b, "DiskLimit", ev.DiskLimit)
	b = str(b, "FailedSibling", ev.FailedSibling)
	b = str(b, "SecretsError", ev.SecretsError)
	b = str(b, "TaskSignalReason", ev.TaskSignalReason)
	b = str(b, "TaskSignal", ev.TaskSignal)
	b = str(b, "DriverMessage", ev.DriverMessage)
	b = str(b, "DisplayMessage", ev.DisplayMessage)
	if len(ev.Details) > 0 {
		b = appendStringMap(append(b, `,"Details":`...), ev.Details)
	}
	return append(b, '}')
}

// appendAlloc writes a, its Job as null unless withJob.
func appendAlloc(b []byte, a *state.Allocation, withJob bool) ([]byte, error) {
	var err error
	b = state.AppendJSONString(append(b, `{"ID":`...), a.ID)
	b = state.AppendJSONString(append(b, `,"Namespace":`...), a.Namespace)
	b = state.AppendJSONString(append(b, `,"EvalID":`...), a.EvalID)
	b = state.AppendJSONString(append(b, `,"Name":`...), a.Name)
	b = state.AppendJSONString(append(b, `,"NodeID":`...), a.NodeID)
	b = state.AppendJSONString(append(b, `,"NodeName":`...), a.NodeName)
	b = state.AppendJSONString(append(b, `,"JobID":`...), a.JobID)
	b = append(b, `,"Job":`...)
	if a.Job == nil || !withJob {
		b = append(b, "null"...)
	} else {
		// Not on the journal's path (frameLocked writes the job apart).
		j, err := json.Marshal(a.Job)
		if err != nil {
			return b, err
		}
		b = append(b, j...)
	}
	b = state.AppendJSONString(append(b, `,"TaskGroup":`...), a.TaskGroup)
	if b, err = appendAllocated(append(b, `,"AllocatedResources":`...), a.AllocatedResources); err != nil {
		return b, err
	}
	if b, err = appendMetric(append(b, `,"Metrics":`...), a.Metrics); err != nil {
		return b, err
	}
	b = state.AppendJSONString(append(b, `,"DesiredStatus":`...), a.DesiredStatus)
	b = state.AppendJSONString(append(b, `,"DesiredDescription":`...), a.DesiredDescription)
	b = append(b, `,"DesiredTransition":{`...)
	first := true
	for _, f := range [...]struct {
		name string
		v    *bool
	}{{"Migrate", a.DesiredTransition.Migrate}, {"Reschedule", a.DesiredTransition.Reschedule},
		{"ForceReschedule", a.DesiredTransition.ForceReschedule}, {"NoShutdownDelay", a.DesiredTransition.NoShutdownDelay}} {
		if f.v == nil {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = strconv.AppendBool(append(append(append(b, '"'), f.name...), '"', ':'), *f.v)
	}
	b = append(b, '}')
	b = state.AppendJSONString(append(b, `,"ClientStatus":`...), a.ClientStatus)
	b = state.AppendJSONString(append(b, `,"ClientDescription":`...), a.ClientDescription)
	if b, err = appendMap(append(b, `,"TaskStates":`...), a.TaskStates, appendTaskState); err != nil {
		return b, err
	}
	b = state.AppendJSONString(append(b, `,"PreviousAllocation":`...), a.PreviousAllocation)
	b = state.AppendJSONString(append(b, `,"NextAllocation":`...), a.NextAllocation)
	b = state.AppendJSONString(append(b, `,"DeploymentID":`...), a.DeploymentID)
	b = append(b, `,"DeploymentStatus":`...)
	if ds := a.DeploymentStatus; ds == nil {
		b = append(b, "null"...)
	} else {
		b = appendBoolPtr(append(b, `{"Healthy":`...), ds.Healthy)
		if b, err = appendTime(append(b, `,"Timestamp":`...), ds.Timestamp); err != nil {
			return b, err
		}
		b = strconv.AppendBool(append(b, `,"Canary":`...), ds.Canary)
		b = strconv.AppendUint(append(b, `,"ModifyIndex":`...), ds.ModifyIndex, 10)
		b = append(b, '}')
	}
	b = append(b, `,"RescheduleTracker":`...)
	if rt := a.RescheduleTracker; rt == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"Events":`...)
		if rt.Events == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i, ev := range rt.Events {
				if i > 0 {
					b = append(b, ',')
				}
				if ev == nil {
					b = append(b, "null"...)
					continue
				}
				b = strconv.AppendInt(append(b, `{"RescheduleTime":`...), ev.RescheduleTime, 10)
				b = state.AppendJSONString(append(b, `,"PrevAllocID":`...), ev.PrevAllocID)
				b = state.AppendJSONString(append(b, `,"PrevNodeID":`...), ev.PrevNodeID)
				b = strconv.AppendInt(append(b, `,"Delay":`...), int64(ev.Delay), 10)
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = state.AppendJSONString(append(b, `,"FollowupEvalID":`...), a.FollowupEvalID)
	b = appendStrings(append(b, `,"PreemptedAllocations":`...), a.PreemptedAllocations)
	b = state.AppendJSONString(append(b, `,"PreemptedByAllocation":`...), a.PreemptedByAllocation)
	b = strconv.AppendUint(append(b, `,"CreateIndex":`...), a.CreateIndex, 10)
	b = strconv.AppendUint(append(b, `,"ModifyIndex":`...), a.ModifyIndex, 10)
	b = strconv.AppendUint(append(b, `,"AllocModifyIndex":`...), a.AllocModifyIndex, 10)
	b = strconv.AppendInt(append(b, `,"CreateTime":`...), a.CreateTime, 10)
	b = strconv.AppendInt(append(b, `,"ModifyTime":`...), a.ModifyTime, 10)
	return append(b, '}'), nil
}

func appendAllocated(b []byte, r *state.AllocatedResources) ([]byte, error) {
	if r == nil {
		return append(b, "null"...), nil
	}
	b, _ = appendMap(append(b, `{"Tasks":`...), r.Tasks, appendTaskResources)
	b = strconv.AppendInt(append(b, `,"Shared":{"DiskMB":`...), int64(r.Shared.DiskMB), 10)
	b = appendNetworks(append(b, `,"Networks":`...), r.Shared.Networks)
	b = append(b, `,"Ports":`...)
	if r.Shared.Ports == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, p := range r.Shared.Ports {
			if i > 0 {
				b = append(b, ',')
			}
			b = state.AppendJSONString(append(b, `{"Label":`...), p.Label)
			b = strconv.AppendInt(append(b, `,"Value":`...), int64(p.Value), 10)
			b = strconv.AppendInt(append(b, `,"To":`...), int64(p.To), 10)
			b = state.AppendJSONString(append(b, `,"HostIP":`...), p.HostIP)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, "}}"...), nil
}

// appendTaskResources writes t in AllocatedTaskResources.MarshalJSON's
// nested wire shape; it never fails (appendMap's shape).
func appendTaskResources(b []byte, t *state.AllocatedTaskResources) ([]byte, error) {
	if t == nil {
		return append(b, "null"...), nil
	}
	b = strconv.AppendInt(append(b, `{"Cpu":{"CpuShares":`...), int64(t.CPU), 10)
	b = strconv.AppendInt(append(b, `},"Memory":{"MemoryMB":`...), int64(t.MemoryMB), 10)
	if t.MemoryMaxMB != 0 {
		b = strconv.AppendInt(append(b, `,"MemoryMaxMB":`...), int64(t.MemoryMaxMB), 10)
	}
	b = appendNetworks(append(b, `},"Networks":`...), t.Networks)
	return append(b, '}'), nil
}

func appendNetworks(b []byte, ns []*state.NetworkResource) []byte {
	if ns == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, n := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		if n == nil {
			b = append(b, "null"...)
			continue
		}
		b = state.AppendJSONString(append(b, `{"Mode":`...), n.Mode)
		b = state.AppendJSONString(append(b, `,"Device":`...), n.Device)
		b = state.AppendJSONString(append(b, `,"CIDR":`...), n.CIDR)
		b = state.AppendJSONString(append(b, `,"IP":`...), n.IP)
		b = strconv.AppendInt(append(b, `,"MBits":`...), int64(n.MBits), 10)
		b = append(b, `,"DNS":`...)
		if n.DNS == nil {
			b = append(b, "null"...)
		} else {
			b = appendStrings(append(b, `{"Servers":`...), n.DNS.Servers)
			b = appendStrings(append(b, `,"Searches":`...), n.DNS.Searches)
			b = appendStrings(append(b, `,"Options":`...), n.DNS.Options)
			b = append(b, '}')
		}
		b = appendPorts(append(b, `,"ReservedPorts":`...), n.ReservedPorts)
		b = appendPorts(append(b, `,"DynamicPorts":`...), n.DynamicPorts)
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendPorts(b []byte, ps []state.Port) []byte {
	if ps == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		b = state.AppendJSONString(append(b, `{"Label":`...), p.Label)
		b = strconv.AppendInt(append(b, `,"Value":`...), int64(p.Value), 10)
		b = strconv.AppendInt(append(b, `,"To":`...), int64(p.To), 10)
		b = state.AppendJSONString(append(b, `,"HostNetwork":`...), p.HostNetwork)
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendMetric(b []byte, m *state.AllocMetric) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	b = strconv.AppendInt(append(b, `{"NodesEvaluated":`...), int64(m.NodesEvaluated), 10)
	b = strconv.AppendInt(append(b, `,"NodesFiltered":`...), int64(m.NodesFiltered), 10)
	b = strconv.AppendInt(append(b, `,"NodesInPool":`...), int64(m.NodesInPool), 10)
	b = appendIntMap(append(b, `,"NodesAvailable":`...), m.NodesAvailable)
	b = appendIntMap(append(b, `,"ClassFiltered":`...), m.ClassFiltered)
	b = appendIntMap(append(b, `,"ConstraintFiltered":`...), m.ConstraintFiltered)
	b = strconv.AppendInt(append(b, `,"NodesExhausted":`...), int64(m.NodesExhausted), 10)
	b = appendIntMap(append(b, `,"ClassExhausted":`...), m.ClassExhausted)
	b = appendIntMap(append(b, `,"DimensionExhausted":`...), m.DimensionExhausted)
	b = appendStrings(append(b, `,"QuotaExhausted":`...), m.QuotaExhausted)
	scores, err := m.Scores.MarshalJSON()
	if err != nil {
		return b, errJournalEnc
	}
	b = append(append(b, `,"Scores":`...), scores...)
	b = strconv.AppendInt(append(b, `,"AllocationTime":`...), int64(m.AllocationTime), 10)
	b = strconv.AppendInt(append(b, `,"CoalescedFailures":`...), int64(m.CoalescedFailures), 10)
	return append(b, '}'), nil
}

// sortedKeys appends m's keys to keys in order, as encoding/json writes
// them (a record's bytes do not depend on map iteration). The callers
// pass a small array's slice, so that a record's few keys cost no
// allocation.
func sortedKeys[V any](keys []string, m map[string]V) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// appendMap writes m as encoding/json does: null when nil, else an
// object with its keys in order, each value written by appendV; it stops
// at appendV's first error.
func appendMap[V any](b []byte, m map[string]V, appendV func([]byte, V) ([]byte, error)) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var kbuf [8]string
	b = append(b, '{')
	for i, k := range sortedKeys(kbuf[:0], m) {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendV(append(state.AppendJSONString(b, k), ':'), m[k]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func appendStringMap(b []byte, m map[string]string) []byte {
	b, _ = appendMap(b, m, func(b []byte, v string) ([]byte, error) { return state.AppendJSONString(b, v), nil })
	return b
}

func appendIntMap(b []byte, m map[string]int) []byte {
	b, _ = appendMap(b, m, func(b []byte, v int) ([]byte, error) { return strconv.AppendInt(b, int64(v), 10), nil })
	return b
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = state.AppendJSONString(b, s)
	}
	return append(b, ']')
}

func appendBoolPtr(b []byte, v *bool) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendBool(b, *v)
}

// appendTime writes t as time.Time.MarshalJSON does (RFC 3339 with
// nanoseconds), which fails outside years 0-9999.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		return b, errJournalEnc
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}
