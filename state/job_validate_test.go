package state

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fullValidJob is a canonical service job that uses most of the job
// specification, so each validation case below breaks exactly one field.
func fullValidJob() *Job {
	d := time.Minute
	j := &Job{
		ID:          "shop",
		Datacenters: []string{"dc1", "dc2"},
		Meta:        map[string]string{"owner": "team-a"},
		Constraints: []*Constraint{
			{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"},
			{LTarget: "${attr.os.version}", Operand: "version", RTarget: ">= 1.2, < 3"},
			{LTarget: "${attr.unique.hostname}", Operand: "regexp", RTarget: "^web-[0-9]+$"},
			{Operand: "distinct_hosts"},
			{LTarget: "${meta.rack}", Operand: "distinct_property", RTarget: "2"},
			{LTarget: "${meta.gpu}", Operand: "is_set"},
		},
		Affinities: []*Affinity{{LTarget: "${node.datacenter}", Operand: "=", RTarget: "dc1", Weight: 80}},
		Spreads: []*Spread{{Attribute: "${node.datacenter}", Weight: 50, SpreadTarget: []*SpreadTarget{
			{Value: "dc1", Percent: 70}, {Value: "dc2", Percent: 30},
		}}},
		Update: &UpdateStrategy{MaxParallel: 2, Canary: 1},
		TaskGroups: []*TaskGroup{
			{
				Name:                "web",
				Count:               3,
				MaxClientDisconnect: &d,
				Networks: []*NetworkResource{{
					ReservedPorts: []Port{{Label: "admin", Value: 9000}},
					DynamicPorts:  []Port{{Label: "http", To: 8080}},
				}},
				Services: []*Service{{Name: "web", PortLabel: "http", Checks: []*ServiceCheck{
					{Name: "alive", Type: "http", Path: "/health", Interval: 10 * time.Second, Timeout: 2 * time.Second},
					{Name: "port", Type: "tcp", Interval: 10 * time.Second, Timeout: 2 * time.Second},
				}}},
				Scaling: &ScalingPolicy{Min: 1, Max: 10, Enabled: true},
				Volumes: map[string]*VolumeRequest{"data": {Name: "data", Type: "host", Source: "shared"}},
				Tasks: []*Task{
					{
						Name:   "server",
						Driver: "raw_exec",
						Leader: true,
						Config: map[string]any{"command": "/bin/server", "args": []any{"-port", "8080"}},
						Templates: []*Template{
							{EmbeddedTmpl: "key={{ key \"k\" }}", DestPath: "local/app.conf"},
							{SourcePath: "tmpl/b", DestPath: "local/b", ChangeMode: "signal", ChangeSignal: "SIGHUP"},
						},
						Artifacts:    []*TaskArtifact{{GetterSource: "https://example.com/app.tgz"}},
						VolumeMounts: []*VolumeMount{{Volume: "data", Destination: "/data"}},
						Actions:      []*Action{{Name: "shell", Command: "/bin/sh"}},
						Services: []*Service{{Name: "server-metrics", Checks: []*ServiceCheck{
							{Name: "script", Type: "script", Command: "/bin/check", Interval: time.Minute, Timeout: time.Second},
						}}},
					},
					{
						Name:      "init",
						Driver:    "raw_exec",
						Lifecycle: &TaskLifecycleConfig{Hook: "prestart"},
						Resources: &Resources{CPU: 50, MemoryMB: 64, MemoryMaxMB: 128,
							Networks: []*NetworkResource{{DynamicPorts: []Port{{Label: "debug"}}}}},
					},
				},
			},
			{
				Name:  "worker",
				Count: 1,
				Tasks: []*Task{{Name: "work", Driver: "raw_exec"}},
			},
		},
	}
	j.Canonicalize()
	return j
}

func TestValidateAcceptsValidJobs(t *testing.T) {
	periodic := minimalJob(JobTypeBatch)
	periodic.Periodic = &PeriodicConfig{Enabled: true, Spec: "*/5 * * * *", TimeZone: "UTC"}
	multiCron := minimalJob(JobTypeBatch)
	multiCron.Periodic = &PeriodicConfig{Enabled: true, Specs: []string{"0 1 * * *", "@hourly"}}
	param := minimalJob(JobTypeSysBatch)
	param.ParameterizedJob = &ParameterizedJobConfig{Payload: "required", MetaRequired: []string{"a"}, MetaOptional: []string{"b"}}
	param.TaskGroups[0].Tasks[0].DispatchPayload = &DispatchPayloadConfig{File: "input/payload.json"}
	dispatched := minimalJob(JobTypeBatch)
	dispatched.ParameterizedJob = &ParameterizedJobConfig{}
	dispatched.Periodic = &PeriodicConfig{Enabled: true, Spec: "@daily"}
	dispatched.Dispatched = true
	partialUpdate := minimalJob(JobTypeService)
	partialUpdate.Update = &UpdateStrategy{MinHealthyTime: 30 * time.Second, AutoRevert: true}
	system := minimalJob(JobTypeSystem)
	system.Update = &UpdateStrategy{MaxParallel: 1, Stagger: time.Second}

	for name, j := range map[string]*Job{
		"full service": fullValidJob(), "periodic": periodic, "periodic specs": multiCron,
		"parameterized": param, "dispatched child": dispatched, "system": system,
		"partial job update": partialUpdate,
	} {
		t.Run(name, func(t *testing.T) {
			j.Canonicalize()
			if err := j.Validate(); err != nil {
				t.Fatalf("valid job rejected: %v", err)
			}
		})
	}
}

func TestValidateRules(t *testing.T) {
	group := func(j *Job) *TaskGroup { return j.TaskGroups[0] }
	task := func(j *Job) *Task { return j.TaskGroups[0].Tasks[0] }
	cases := []struct {
		name  string
		edit  func(*Job)
		field string
	}{
		{"missing ID", func(j *Job) { j.ID = "" }, "ID"},
		{"ID with space", func(j *Job) { j.ID = "my job" }, "ID"},
		{"ID with null", func(j *Job) { j.ID = "a\x00b" }, "ID"},
		{"ID too long", func(j *Job) { j.ID = strings.Repeat("a", 129) }, "ID"},
		{"missing name", func(j *Job) { j.Name = "" }, "Name"},
		{"missing namespace", func(j *Job) { j.Namespace = "" }, "Namespace"},
		{"bad namespace", func(j *Job) { j.Namespace = "a b" }, "Namespace"},
		{"missing region", func(j *Job) { j.Region = "" }, "Region"},
		{"bad type", func(j *Job) { j.Type = "daemon" }, "Type"},
		{"priority low", func(j *Job) { j.Priority = 0 }, "Priority"},
		{"priority high", func(j *Job) { j.Priority = 101 }, "Priority"},
		{"no datacenters", func(j *Job) { j.Datacenters = nil }, "Datacenters"},
		{"empty datacenter", func(j *Job) { j.Datacenters = []string{"dc1", ""} }, "Datacenters[1]"},
		{"no groups", func(j *Job) { j.TaskGroups = nil }, "TaskGroups"},
		{"null group", func(j *Job) { j.TaskGroups = append(j.TaskGroups, nil) }, "TaskGroups[2]"},
		{"group name empty", func(j *Job) { group(j).Name = "" }, "TaskGroups[0].Name"},
		{"group name duplicate", func(j *Job) { j.TaskGroups[1].Name = "web" }, "TaskGroups[1].Name"},
		{"negative count", func(j *Job) { group(j).Count = -1 }, "TaskGroups[0].Count"},
		{"system count", func(j *Job) {
			j.Type = JobTypeSystem
			group(j).ReschedulePolicy = nil
			group(j).Scaling = nil
			j.Update.Canary = 0
			group(j).Update.Canary = 0
		}, "TaskGroups[0].Count"},
		{"no tasks", func(j *Job) { j.TaskGroups[1].Tasks = nil }, "TaskGroups[1].Tasks"},
		{"null task", func(j *Job) { group(j).Tasks[1] = nil }, "TaskGroups[0].Tasks[1]"},
		{"task name empty", func(j *Job) { group(j).Tasks[1].Name = "" }, "TaskGroups[0].Tasks[1].Name"},
		{"task name slash", func(j *Job) { group(j).Tasks[1].Name = "a/b" }, "TaskGroups[0].Tasks[1].Name"},
		{"task name duplicate", func(j *Job) { group(j).Tasks[1].Name = "server" }, "TaskGroups[0].Tasks[1].Name"},
		{"missing driver", func(j *Job) { group(j).Tasks[1].Driver = "" }, "TaskGroups[0].Tasks[1].Driver"},
		{"cpu zero", func(j *Job) { task(j).Resources.CPU = 0 }, "TaskGroups[0].Tasks[0].Resources.CPU"},
		{"cpu and cores", func(j *Job) { task(j).Resources.Cores = 1 }, "TaskGroups[0].Tasks[0].Resources.Cores"},
		{"memory low", func(j *Job) { task(j).Resources.MemoryMB = 9 }, "TaskGroups[0].Tasks[0].Resources.MemoryMB"},
		{"memory max low", func(j *Job) { group(j).Tasks[1].Resources.MemoryMaxMB = 32 }, "TaskGroups[0].Tasks[1].Resources.MemoryMaxMB"},
		{"device count", func(j *Job) { task(j).Resources.Devices = []*RequestedDevice{{Name: "gpu"}} },
			"TaskGroups[0].Tasks[0].Resources.Devices[0].Count"},
		{"kill timeout", func(j *Job) { task(j).KillTimeout = -time.Second }, "TaskGroups[0].Tasks[0].KillTimeout"},
		{"restart mode", func(j *Job) { group(j).RestartPolicy.Mode = "retry" }, "TaskGroups[0].RestartPolicy.Mode"},
		{"restart attempts", func(j *Job) { group(j).RestartPolicy.Attempts = -1 }, "TaskGroups[0].RestartPolicy.Attempts"},
		{"restart delay", func(j *Job) { group(j).RestartPolicy.Delay = -1 }, "TaskGroups[0].RestartPolicy.Delay"},
		{"restart interval", func(j *Job) { group(j).RestartPolicy.Interval = 0 }, "TaskGroups[0].RestartPolicy.Interval"},
		{"task restart mode", func(j *Job) { task(j).RestartPolicy.Mode = "" }, "TaskGroups[0].Tasks[0].RestartPolicy.Mode"},
		{"reschedule function", func(j *Job) { group(j).ReschedulePolicy.DelayFunction = "linear" },
			"TaskGroups[0].ReschedulePolicy.DelayFunction"},
		{"reschedule unlimited with attempts", func(j *Job) { group(j).ReschedulePolicy.Attempts = 3 },
			"TaskGroups[0].ReschedulePolicy.Attempts"},
		{"reschedule attempts without interval", func(j *Job) {
			group(j).ReschedulePolicy.Unlimited = false
			group(j).ReschedulePolicy.Attempts = 3
		}, "TaskGroups[0].ReschedulePolicy.Interval"},
		{"reschedule max delay", func(j *Job) { group(j).ReschedulePolicy.MaxDelay = time.Second },
			"TaskGroups[0].ReschedulePolicy.MaxDelay"},
		{"reschedule on system", func(j *Job) {
			j.Type = JobTypeSystem
			group(j).Count = 1
			group(j).Scaling = nil
			j.Update.Canary = 0
			group(j).Update.Canary = 0
		}, "TaskGroups[0].ReschedulePolicy"},
		{"constraint operand", func(j *Job) { j.Constraints[0].Operand = "~=" }, "Constraints[0].Operand"},
		{"constraint ltarget", func(j *Job) { j.Constraints[0].LTarget = "" }, "Constraints[0].LTarget"},
		{"constraint rtarget", func(j *Job) { j.Constraints[0].RTarget = "" }, "Constraints[0].RTarget"},
		{"constraint version", func(j *Job) { j.Constraints[1].RTarget = ">= banana" }, "Constraints[1].RTarget"},
		{"constraint semver", func(j *Job) { j.Constraints[1].Operand = "semver"; j.Constraints[1].RTarget = "~>" }, "Constraints[1].RTarget"},
		{"constraint regexp", func(j *Job) { j.Constraints[2].RTarget = "([a-z" }, "Constraints[2].RTarget"},
		{"distinct property limit", func(j *Job) { j.Constraints[4].RTarget = "zero" }, "Constraints[4].RTarget"},
		{"distinct property ltarget", func(j *Job) { j.Constraints[4].LTarget = "" }, "Constraints[4].LTarget"},
		{"group constraint", func(j *Job) { group(j).Constraints = []*Constraint{{Operand: "set_contains", LTarget: "${meta.x}"}} },
			"TaskGroups[0].Constraints[0].RTarget"},
		{"task constraint", func(j *Job) { task(j).Constraints = []*Constraint{nil} }, "TaskGroups[0].Tasks[0].Constraints[0]"},
		{"affinity weight zero", func(j *Job) { j.Affinities[0].Weight = 0 }, "Affinities[0].Weight"},
		{"affinity weight high", func(j *Job) { j.Affinities[0].Weight = 101 }, "Affinities[0].Weight"},
		{"affinity weight low", func(j *Job) { j.Affinities[0].Weight = -101 }, "Affinities[0].Weight"},
		{"affinity distinct hosts", func(j *Job) { j.Affinities[0].Operand = "distinct_hosts" }, "Affinities[0].Operand"},
		{"spread weight", func(j *Job) { j.Spreads[0].Weight = 101 }, "Spreads[0].Weight"},
		{"spread weight negative", func(j *Job) { j.Spreads[0].Weight = -1 }, "Spreads[0].Weight"},
		{"spread sum", func(j *Job) { j.Spreads[0].SpreadTarget[1].Percent = 31 }, "Spreads[0].SpreadTarget"},
		{"spread attribute", func(j *Job) { j.Spreads[0].Attribute = "" }, "Spreads[0].Attribute"},
		{"spread target duplicate", func(j *Job) { j.Spreads[0].SpreadTarget[1].Value = "dc1" }, "Spreads[0].SpreadTarget[1].Value"},
		{"periodic without spec", func(j *Job) {
			j.Type = JobTypeBatch
			j.Periodic = &PeriodicConfig{Enabled: true, SpecType: "cron"}
		}, "Periodic.Spec"},
		{"periodic bad cron", func(j *Job) { j.Periodic = &PeriodicConfig{Enabled: true, SpecType: "cron", Spec: "every day"} }, "Periodic.Spec"},
		{"periodic bad specs", func(j *Job) {
			j.Periodic = &PeriodicConfig{Enabled: true, SpecType: "cron", Specs: []string{"@daily", "61 * * * *"}}
		}, "Periodic.Specs[1]"},
		{"periodic spec type", func(j *Job) { j.Periodic = &PeriodicConfig{Enabled: true, SpecType: "rate", Spec: "@daily"} }, "Periodic.SpecType"},
		{"periodic zone", func(j *Job) {
			j.Periodic = &PeriodicConfig{Enabled: true, SpecType: "cron", Spec: "@daily", TimeZone: "Nowhere/Land"}
		}, "Periodic.TimeZone"},
		{"periodic service", func(j *Job) { j.Periodic = &PeriodicConfig{Enabled: true, SpecType: "cron", Spec: "@daily"} }, "Periodic"},
		{"periodic and parameterized", func(j *Job) {
			j.Periodic = &PeriodicConfig{Enabled: true, SpecType: "cron", Spec: "@daily"}
			j.ParameterizedJob = &ParameterizedJobConfig{Payload: "optional"}
		}, "Periodic"},
		{"parameterized payload", func(j *Job) { j.ParameterizedJob = &ParameterizedJobConfig{Payload: "maybe"} }, "ParameterizedJob.Payload"},
		{"parameterized meta overlap", func(j *Job) {
			j.ParameterizedJob = &ParameterizedJobConfig{Payload: "optional", MetaRequired: []string{"a"}, MetaOptional: []string{"a"}}
		}, "ParameterizedJob.MetaOptional[0]"},
		{"lifecycle hook", func(j *Job) { group(j).Tasks[1].Lifecycle.Hook = "prestop" }, "TaskGroups[0].Tasks[1].Lifecycle.Hook"},
		{"two leaders", func(j *Job) { group(j).Tasks[1].Leader = true }, "TaskGroups[0].Tasks[1].Leader"},
		{"port label duplicate across task", func(j *Job) {
			group(j).Tasks[1].Resources.Networks[0].DynamicPorts[0].Label = "http"
		}, "TaskGroups[0].Tasks[1].Resources.Networks[0].DynamicPorts[0].Label"},
		{"port label missing", func(j *Job) { group(j).Networks[0].DynamicPorts[0].Label = "" },
			"TaskGroups[0].Networks[0].DynamicPorts[0].Label"},
		{"reserved port zero", func(j *Job) { group(j).Networks[0].ReservedPorts[0].Value = 0 },
			"TaskGroups[0].Networks[0].ReservedPorts[0].Value"},
		{"reserved port high", func(j *Job) { group(j).Networks[0].ReservedPorts[0].Value = 65536 },
			"TaskGroups[0].Networks[0].ReservedPorts[0].Value"},
		{"reserved port duplicate", func(j *Job) {
			group(j).Networks[0].ReservedPorts = append(group(j).Networks[0].ReservedPorts, Port{Label: "admin2", Value: 9000})
		}, "TaskGroups[0].Networks[0].ReservedPorts[1].Value"},
		{"template change mode", func(j *Job) { task(j).Templates[0].ChangeMode = "reload" }, "TaskGroups[0].Tasks[0].Templates[0].ChangeMode"},
		{"template change signal", func(j *Job) { task(j).Templates[1].ChangeSignal = "" }, "TaskGroups[0].Tasks[0].Templates[1].ChangeSignal"},
		{"template dest", func(j *Job) { task(j).Templates[0].DestPath = "" }, "TaskGroups[0].Tasks[0].Templates[0].DestPath"},
		{"template source", func(j *Job) { task(j).Templates[0].EmbeddedTmpl = "" }, "TaskGroups[0].Tasks[0].Templates[0].SourcePath"},
		{"template perms", func(j *Job) { task(j).Templates[0].Perms = "0999" }, "TaskGroups[0].Tasks[0].Templates[0].Perms"},
		{"service name duplicate", func(j *Job) { task(j).Services[0].Name = "web" }, "TaskGroups[0].Tasks[0].Services[0].Name"},
		{"service name empty", func(j *Job) { group(j).Services[0].Name = "" }, "TaskGroups[0].Services[0].Name"},
		{"service provider", func(j *Job) { group(j).Services[0].Provider = "other" }, "TaskGroups[0].Services[0].Provider"},
		{"check type", func(j *Job) { group(j).Services[0].Checks[0].Type = "udp" }, "TaskGroups[0].Services[0].Checks[0].Type"},
		{"http check path", func(j *Job) { group(j).Services[0].Checks[0].Path = "" }, "TaskGroups[0].Services[0].Checks[0].Path"},
		{"script check command", func(j *Job) { task(j).Services[0].Checks[0].Command = "" },
			"TaskGroups[0].Tasks[0].Services[0].Checks[0].Command"},
		{"check interval", func(j *Job) { group(j).Services[0].Checks[1].Interval = 0 }, "TaskGroups[0].Services[0].Checks[1].Interval"},
		{"check timeout", func(j *Job) { group(j).Services[0].Checks[1].Timeout = 0 }, "TaskGroups[0].Services[0].Checks[1].Timeout"},
		{"update max parallel", func(j *Job) { group(j).Update.MaxParallel = -1 }, "TaskGroups[0].Update.MaxParallel"},
		{"update canary", func(j *Job) { group(j).Update.Canary = -1 }, "TaskGroups[0].Update.Canary"},
		{"job update canary", func(j *Job) { j.Update.Canary = -1 }, "Update.Canary"},
		{"job update health check", func(j *Job) { j.Update.HealthCheck = "ping" }, "Update.HealthCheck"},
		{"batch canary", func(j *Job) {
			j.Type = JobTypeBatch
			j.TaskGroups[0].Update = &UpdateStrategy{Canary: 1}
		}, "TaskGroups[0].Update.Canary"},
		{"update health check", func(j *Job) { group(j).Update.HealthCheck = "ping" }, "TaskGroups[0].Update.HealthCheck"},
		{"update min healthy", func(j *Job) { group(j).Update.MinHealthyTime = 5 * time.Minute }, "TaskGroups[0].Update.MinHealthyTime"},
		{"update healthy deadline", func(j *Job) { group(j).Update.HealthyDeadline = 10 * time.Minute }, "TaskGroups[0].Update.HealthyDeadline"},
		{"migrate health check", func(j *Job) { group(j).Migrate.HealthCheck = "manualish" }, "TaskGroups[0].Migrate.HealthCheck"},
		{"scaling min above max", func(j *Job) { group(j).Scaling.Min = 11 }, "TaskGroups[0].Scaling.Min"},
		{"count above scaling max", func(j *Job) { group(j).Count = 11 }, "TaskGroups[0].Scaling.Max"},
		{"count below scaling min", func(j *Job) { group(j).Scaling.Min = 4 }, "TaskGroups[0].Scaling.Max"},
		{"negative group duration", func(j *Job) { d := -time.Second; group(j).ShutdownDelay = &d }, "TaskGroups[0].ShutdownDelay"},
		{"volume type", func(j *Job) { group(j).Volumes["data"].Type = "nfs" }, "TaskGroups[0].Volumes[data].Type"},
		{"volume mount unknown", func(j *Job) { task(j).VolumeMounts[0].Volume = "cache" }, "TaskGroups[0].Tasks[0].VolumeMounts[0].Volume"},
		{"log files", func(j *Job) { task(j).LogConfig.MaxFiles = 0 }, "TaskGroups[0].Tasks[0].LogConfig.MaxFiles"},
		{"logs exceed disk", func(j *Job) { group(j).EphemeralDisk.SizeMB = 50 }, "TaskGroups[0].Tasks[0].LogConfig"},
		{"artifact source", func(j *Job) { task(j).Artifacts[0].GetterSource = "" }, "TaskGroups[0].Tasks[0].Artifacts[0].GetterSource"},
		{"dispatch payload escape", func(j *Job) { task(j).DispatchPayload = &DispatchPayloadConfig{File: "../../etc/passwd"} },
			"TaskGroups[0].Tasks[0].DispatchPayload.File"},
		{"action command", func(j *Job) { task(j).Actions[0].Command = "" }, "TaskGroups[0].Tasks[0].Actions[0].Command"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := fullValidJob()
			tc.edit(j)
			err := j.Validate()
			if err == nil {
				t.Fatalf("no error, want one for %s", tc.field)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("errors.Is(err, ErrInvalid) is false for %v", err)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %T is not a *ValidationError", err)
			}
			for _, fe := range ve.Errors {
				if fe.Field == tc.field {
					if fe.Message == "" {
						t.Fatalf("empty message for %s", tc.field)
					}
					return
				}
			}
			t.Fatalf("no error for field %s; got %v", tc.field, err)
		})
	}
}

func TestValidateListsEveryProblem(t *testing.T) {
	j := fullValidJob()
	j.Priority = 0
	j.TaskGroups[0].Tasks[0].Driver = ""
	j.TaskGroups[1].Count = -2
	var ve *ValidationError
	if !errors.As(j.Validate(), &ve) {
		t.Fatal("want a *ValidationError")
	}
	want := []string{"Priority", "TaskGroups[0].Tasks[0].Driver", "TaskGroups[1].Count"}
	if len(ve.Errors) != len(want) {
		t.Fatalf("got %d errors, want %d: %v", len(ve.Errors), len(want), ve)
	}
	for i, w := range want {
		if ve.Errors[i].Field != w {
			t.Errorf("error %d is for %s, want %s", i, ve.Errors[i].Field, w)
		}
	}
}

func TestValidateAffinityOnUncanonicalizedJob(t *testing.T) {
	j := minimalJob(JobTypeService)
	j.Canonicalize()
	j.Affinities = []*Affinity{{LTarget: "${node.class}", Operand: "=", RTarget: "big"}}
	err := j.Validate()
	if err == nil || !strings.Contains(err.Error(), "Affinities[0].Weight") {
		t.Fatalf("zero affinity weight accepted: %v", err)
	}
}

func TestValidateNilJob(t *testing.T) {
	var j *Job
	if err := j.Validate(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("nil job: got %v, want ErrInvalid", err)
	}
}

func TestValidateNamespaceName(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"default", true},
		{"team_a-1", true},
		{strings.Repeat("n", 128), true},
		{"", false},
		{strings.Repeat("n", 129), false},
		{"a b", false},
		{"a/b", false},
		{"ünï", false},
		{"*", false},
	}
	for _, tc := range cases {
		err := ValidateNamespaceName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateNamespaceName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidateNamespaceName(%q) error is not ErrInvalid", tc.name)
		}
	}
}
