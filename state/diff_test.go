package state

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// diffJob is a small canonical job for diff cases.
func diffJob() *Job {
	j := minimalJob(JobTypeService)
	j.Meta = map[string]string{"owner": "a"}
	j.Datacenters = []string{"dc1"}
	j.TaskGroups = append(j.TaskGroups, &TaskGroup{
		Name: "db", Count: 1,
		Tasks: []*Task{{Name: "postgres", Driver: "raw_exec", Config: map[string]any{"command": "pg"}}},
	})
	j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, &Task{Name: "sidecar", Driver: "raw_exec"})
	j.Canonicalize()
	return j
}

// summary renders a diff as sorted lines "path Type Old>New", so a case
// states the whole expected diff compactly.
func summary(d *JobDiff) []string {
	var out []string
	line := func(path string, t DiffType, extra string) {
		out = append(out, strings.TrimSpace(path+" "+string(t)+" "+extra))
	}
	var objects func(path string, os []*ObjectDiff)
	fields := func(path string, fs []*FieldDiff) {
		for _, f := range fs {
			line(path+f.Name, f.Type, f.Old+">"+f.New)
		}
	}
	objects = func(path string, os []*ObjectDiff) {
		for _, o := range os {
			p := path + o.Name
			line(p, o.Type, "")
			fields(p+".", o.Fields)
			objects(p+".", o.Objects)
		}
	}
	line("job", d.Type, "")
	fields("", d.Fields)
	objects("", d.Objects)
	for _, g := range d.TaskGroups {
		if g.Type == DiffTypeNone && len(g.Fields) == 0 {
			continue
		}
		p := "group " + g.Name
		line(p, g.Type, "")
		fields(p+".", g.Fields)
		objects(p+".", g.Objects)
		for _, tk := range g.Tasks {
			if tk.Type == DiffTypeNone && len(tk.Fields) == 0 {
				continue
			}
			tp := p + ".task " + tk.Name
			line(tp, tk.Type, "")
			fields(tp+".", tk.Fields)
			objects(tp+".", tk.Objects)
		}
	}
	return out
}

func TestDiff(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Job)
		want []string
	}{
		{"no change", func(*Job) {}, []string{"job None"}},
		{"ignored fields", func(j *Job) {
			j.Version, j.Status, j.Stable, j.SubmitTime, j.ModifyIndex, j.JobModifyIndex = 3, "running", true, 99, 7, 7
			j.SecretsToken = "s3cr3t"
		}, []string{"job None"}},
		{"edited count", func(j *Job) { j.TaskGroups[0].Count = 3 }, []string{
			"job Edited", "group app Edited", "group app.Count Edited 1>3",
		}},
		{"edited priority", func(j *Job) { j.Priority = 60 }, []string{"job Edited", "Priority Edited 50>60"}},
		{"edited meta key", func(j *Job) { j.Meta["owner"] = "b" }, []string{"job Edited", "Meta[owner] Edited a>b"}},
		{"added and deleted meta", func(j *Job) { j.Meta = map[string]string{"team": "x"} }, []string{
			"job Edited", "Meta[owner] Deleted a>", "Meta[team] Added >x",
		}},
		{"datacenters set", func(j *Job) { j.Datacenters = []string{"dc2", "dc1"} }, []string{
			"job Edited", "Datacenters Edited", "Datacenters.Datacenters Added >dc2",
		}},
		{"nested object change", func(j *Job) { j.TaskGroups[0].RestartPolicy.Attempts = 5 }, []string{
			"job Edited", "group app Edited", "group app.RestartPolicy Edited", "group app.RestartPolicy.Attempts Edited 2>5",
		}},
		{"nested duration", func(j *Job) { j.TaskGroups[0].Update.Stagger = time.Minute }, []string{
			"job Edited", "group app Edited", "group app.Update Edited", "group app.Update.Stagger Edited 30000000000>60000000000",
		}},
		{"added object", func(j *Job) { j.Periodic = &PeriodicConfig{Spec: "@daily"} }, []string{
			"job Edited", "Periodic Added",
			"Periodic.Enabled Added >false", "Periodic.ProhibitOverlap Added >false", "Periodic.Spec Added >@daily",
		}},
		{"removed task", func(j *Job) { j.TaskGroups[0].Tasks = j.TaskGroups[0].Tasks[:1] }, []string{
			"job Edited", "group app Edited", "group app.task sidecar Deleted",
			"group app.task sidecar.Driver Deleted raw_exec>",
			"group app.task sidecar.KillTimeout Deleted 5000000000>",
			"group app.task sidecar.Leader Deleted false>",
			"group app.task sidecar.ShutdownDelay Deleted 0>",
			"group app.task sidecar.LogConfig Deleted",
			"group app.task sidecar.LogConfig.Disabled Deleted false>",
			"group app.task sidecar.LogConfig.MaxFileSizeMB Deleted 10>",
			"group app.task sidecar.LogConfig.MaxFiles Deleted 10>",
			"group app.task sidecar.Resources Deleted",
			"group app.task sidecar.Resources.CPU Deleted 100>",
			"group app.task sidecar.Resources.Cores Deleted 0>",
			"group app.task sidecar.Resources.DiskMB Deleted 0>",
			"group app.task sidecar.Resources.IOPS Deleted 0>",
			"group app.task sidecar.Resources.MemoryMB Deleted 300>",
			"group app.task sidecar.Resources.MemoryMaxMB Deleted 0>",
			"group app.task sidecar.RestartPolicy Deleted",
			"group app.task sidecar.RestartPolicy.Attempts Deleted 2>",
			"group app.task sidecar.RestartPolicy.Delay Deleted 15000000000>",
			"group app.task sidecar.RestartPolicy.Interval Deleted 1800000000000>",
			"group app.task sidecar.RestartPolicy.Mode Deleted fail>",
			"group app.task sidecar.RestartPolicy.RenderTemplates Deleted false>",
		}},
		{"task config", func(j *Job) { j.TaskGroups[1].Tasks[0].Config["args"] = []any{"-v"} }, []string{
			"job Edited", "group db Edited", "group db.task postgres Edited",
			"group db.task postgres.Config Edited", "group db.task postgres.Config.args[0] Added >-v",
		}},
		{"constraint replaced", func(j *Job) {
			j.Constraints = []*Constraint{{LTarget: "a", Operand: "=", RTarget: "b"}}
		}, []string{
			"job Edited", "Constraint Added", "Constraint.LTarget Added >a", "Constraint.Operand Added >=", "Constraint.RTarget Added >b",
		}},
		{"service edited in place", func(j *Job) {
			j.TaskGroups[1].Services = []*Service{{Name: "pg", PortLabel: "db", Provider: "sched"}}
		}, []string{
			"job Edited", "group db Edited", "group db.Service Added",
			"group db.Service.EnableTagOverride Added >false", "group db.Service.Name Added >pg",
			"group db.Service.PortLabel Added >db", "group db.Service.Provider Added >sched",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, new := diffJob(), diffJob()
			tc.edit(new)
			d, err := old.Diff(new, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(d); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("diff:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

func TestDiffAddedGroup(t *testing.T) {
	old, new := diffJob(), diffJob()
	old.TaskGroups = old.TaskGroups[:1]
	d, err := old.Diff(new, false)
	if err != nil {
		t.Fatal(err)
	}
	if d.Type != DiffTypeEdited || len(d.TaskGroups) != 2 {
		t.Fatalf("got type %s with %d groups, want Edited with 2", d.Type, len(d.TaskGroups))
	}
	app, db := d.TaskGroups[0], d.TaskGroups[1]
	if app.Name != "app" || app.Type != DiffTypeNone {
		t.Errorf("unchanged group: got %s %s, want app None", app.Name, app.Type)
	}
	if db.Name != "db" || db.Type != DiffTypeAdded {
		t.Fatalf("new group: got %s %s, want db Added", db.Name, db.Type)
	}
	if len(db.Tasks) != 1 || db.Tasks[0].Type != DiffTypeAdded || db.Tasks[0].Name != "postgres" {
		t.Fatalf("new group's task: %+v", db.Tasks)
	}
	if f := findField(db.Fields, "Count"); f == nil || f.Type != DiffTypeAdded || f.New != "1" {
		t.Errorf("new group's Count: %+v", f)
	}
	if o := findObject(db.Tasks[0].Objects, "Config"); o == nil || o.Type != DiffTypeAdded {
		t.Errorf("new task's Config: %+v", o)
	}
}

func TestDiffNewJob(t *testing.T) {
	var old *Job
	d, err := old.Diff(diffJob(), false)
	if err != nil {
		t.Fatal(err)
	}
	if d.Type != DiffTypeAdded || d.ID != "web" {
		t.Fatalf("got %s %q, want Added web", d.Type, d.ID)
	}
	if f := findField(d.Fields, "Priority"); f == nil || f.Type != DiffTypeAdded || f.New != "50" {
		t.Errorf("Priority: %+v", f)
	}
	for _, g := range d.TaskGroups {
		if g.Type != DiffTypeAdded {
			t.Errorf("group %s is %s, want Added", g.Name, g.Type)
		}
	}
	if findField(d.Fields, "SubmitTime") != nil || findField(d.Fields, "SecretsToken") != nil {
		t.Error("ignored fields appear in the diff")
	}

	gone, err := diffJob().Diff(nil, false)
	if err != nil || gone.Type != DiffTypeDeleted {
		t.Fatalf("removed job: got %v, %v; want Deleted", gone, err)
	}
}

func TestDiffContextual(t *testing.T) {
	old, new := diffJob(), diffJob()
	new.TaskGroups[0].RestartPolicy.Attempts = 4
	d, err := old.Diff(new, true)
	if err != nil {
		t.Fatal(err)
	}
	if f := findField(d.Fields, "Region"); f == nil || f.Type != DiffTypeNone || f.Old != "global" {
		t.Errorf("contextual job field Region: %+v", f)
	}
	rp := findObject(d.TaskGroups[0].Objects, "RestartPolicy")
	if rp == nil || rp.Type != DiffTypeEdited {
		t.Fatalf("RestartPolicy: %+v", rp)
	}
	if f := findField(rp.Fields, "Mode"); f == nil || f.Type != DiffTypeNone {
		t.Errorf("contextual unchanged Mode: %+v", f)
	}
	if f := findField(rp.Fields, "Attempts"); f == nil || f.Type != DiffTypeEdited || f.Old != "2" || f.New != "4" {
		t.Errorf("Attempts: %+v", f)
	}
	if findObject(d.TaskGroups[0].Objects, "EphemeralDisk") != nil {
		t.Error("unchanged object listed in a contextual diff")
	}

	same, err := old.Diff(diffJob(), true)
	if err != nil || same.Type != DiffTypeNone {
		t.Fatalf("contextual diff of equal jobs: %v %v", same, err)
	}
}

func TestDiffDifferentIDs(t *testing.T) {
	other := diffJob()
	other.ID = "api"
	if _, err := diffJob().Diff(other, false); !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
}

func TestDiffIsDeterministic(t *testing.T) {
	old, new := fullValidJob(), fullValidJob()
	new.Meta = map[string]string{"a": "1", "b": "2", "c": "3"}
	new.TaskGroups[0].Tasks[0].Config = map[string]any{"x": 1, "y": map[string]any{"z": true}, "args": []any{"a"}}
	new.TaskGroups[0].Volumes["logs"] = &VolumeRequest{Name: "logs", Type: "host", Source: "l"}
	new.Constraints = append(new.Constraints, &Constraint{LTarget: "q", Operand: "=", RTarget: "r"})
	first, err := old.Diff(new, true)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(first)
	for range 20 {
		d, _ := old.Diff(new, true)
		if got, _ := json.Marshal(d); string(got) != string(want) {
			t.Fatalf("diff output changed between runs:\n%s\n%s", got, want)
		}
	}
	for _, key := range []string{`"Type":"Edited"`, `"Name":"Meta[a]"`, `"TaskGroups":[`, `"Updates":null`} {
		if !strings.Contains(string(want), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

func findField(fs []*FieldDiff, name string) *FieldDiff {
	for _, f := range fs {
		if f.Name == name {
			return f
		}
	}
	return nil
}

func findObject(os []*ObjectDiff, name string) *ObjectDiff {
	for _, o := range os {
		if o.Name == name {
			return o
		}
	}
	return nil
}
