package state

import (
	"reflect"
	"testing"
	"time"
)

// minimalJob is what a user might POST with nothing but the essentials.
func minimalJob(jobType string) *Job {
	return &Job{
		ID:   "web",
		Type: jobType,
		TaskGroups: []*TaskGroup{{
			Name:  "app",
			Count: 1,
			Tasks: []*Task{{Name: "server", Driver: "raw_exec"}},
		}},
	}
}

func TestCanonicalizeDefaults(t *testing.T) {
	cases := []struct {
		name    string
		jobType string
		edit    func(*Job)
		got     func(*Job) any
		want    any
	}{
		{"namespace", JobTypeService, nil, func(j *Job) any { return j.Namespace }, "default"},
		{"region", JobTypeService, nil, func(j *Job) any { return j.Region }, "global"},
		{"node pool", JobTypeService, nil, func(j *Job) any { return j.NodePool }, "default"},
		{"priority", JobTypeService, nil, func(j *Job) any { return j.Priority }, 50},
		{"priority kept", JobTypeService, func(j *Job) { j.Priority = 70 }, func(j *Job) any { return j.Priority }, 70},
		{"type", "", nil, func(j *Job) any { return j.Type }, JobTypeService},
		{"datacenters", JobTypeService, nil, func(j *Job) any { return j.Datacenters }, []string{"*"}},
		{"datacenters kept", JobTypeService, func(j *Job) { j.Datacenters = []string{"dc1"} },
			func(j *Job) any { return j.Datacenters }, []string{"dc1"}},
		{"name from ID", JobTypeService, nil, func(j *Job) any { return j.Name }, "web"},
		{"name kept", JobTypeService, func(j *Job) { j.Name = "Web" }, func(j *Job) any { return j.Name }, "Web"},
		{"meta stays nil", JobTypeService, nil, func(j *Job) any { return j.Meta == nil }, true},

		{"service restart", JobTypeService, nil, func(j *Job) any { return *j.TaskGroups[0].RestartPolicy },
			RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "fail"}},
		{"system restart", JobTypeSystem, nil, func(j *Job) any { return *j.TaskGroups[0].RestartPolicy },
			RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "fail"}},
		{"batch restart", JobTypeBatch, nil, func(j *Job) any { return *j.TaskGroups[0].RestartPolicy },
			RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: "fail"}},
		{"sysbatch restart", JobTypeSysBatch, nil, func(j *Job) any { return *j.TaskGroups[0].RestartPolicy },
			RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: "fail"}},
		{"partial restart keeps zero attempts", JobTypeService,
			func(j *Job) { j.TaskGroups[0].RestartPolicy = &RestartPolicy{Delay: time.Second} },
			func(j *Job) any { return *j.TaskGroups[0].RestartPolicy },
			RestartPolicy{Attempts: 0, Interval: 30 * time.Minute, Delay: time.Second, Mode: "fail"}},

		{"service reschedule", JobTypeService, nil, func(j *Job) any { return *j.TaskGroups[0].ReschedulePolicy },
			ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour, Unlimited: true}},
		{"batch reschedule", JobTypeBatch, nil, func(j *Job) any { return *j.TaskGroups[0].ReschedulePolicy },
			ReschedulePolicy{Attempts: 1, Interval: 24 * time.Hour, Delay: 5 * time.Second, DelayFunction: "constant"}},
		{"system reschedule", JobTypeSystem, nil, func(j *Job) any { return j.TaskGroups[0].ReschedulePolicy == nil }, true},
		{"sysbatch reschedule", JobTypeSysBatch, nil, func(j *Job) any { return j.TaskGroups[0].ReschedulePolicy == nil }, true},
		{"partial reschedule", JobTypeService,
			func(j *Job) { j.TaskGroups[0].ReschedulePolicy = &ReschedulePolicy{Attempts: 3, Interval: time.Hour} },
			func(j *Job) any { return *j.TaskGroups[0].ReschedulePolicy },
			ReschedulePolicy{Attempts: 3, Interval: time.Hour, Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour}},

		{"ephemeral disk", JobTypeService, nil, func(j *Job) any { return *j.TaskGroups[0].EphemeralDisk }, EphemeralDisk{SizeMB: 300}},
		{"ephemeral disk size filled", JobTypeService,
			func(j *Job) { j.TaskGroups[0].EphemeralDisk = &EphemeralDisk{Sticky: true} },
			func(j *Job) any { return *j.TaskGroups[0].EphemeralDisk }, EphemeralDisk{Sticky: true, SizeMB: 300}},

		{"service migrate", JobTypeService, nil, func(j *Job) any { return *j.TaskGroups[0].Migrate },
			MigrateStrategy{MaxParallel: 1, HealthCheck: "checks", MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute}},
		{"batch has no migrate", JobTypeBatch, nil, func(j *Job) any { return j.TaskGroups[0].Migrate == nil }, true},

		{"service update", JobTypeService, nil, func(j *Job) any { return *j.TaskGroups[0].Update }, *DefaultUpdateStrategy()},
		{"batch has no update", JobTypeBatch, nil, func(j *Job) any { return j.TaskGroups[0].Update == nil }, true},
		{"system has no update", JobTypeSystem, nil, func(j *Job) any { return j.TaskGroups[0].Update == nil }, true},
		{"system update merged, with the default stagger only", JobTypeSystem,
			func(j *Job) { j.Update = &UpdateStrategy{MaxParallel: 2} },
			func(j *Job) any { return *j.TaskGroups[0].Update }, UpdateStrategy{MaxParallel: 2, Stagger: 30 * time.Second}},
		{"group inherits job update", JobTypeService,
			func(j *Job) { j.Update = &UpdateStrategy{MaxParallel: 3, Canary: 1, AutoRevert: true} },
			func(j *Job) any { return *j.TaskGroups[0].Update },
			UpdateStrategy{Stagger: 30 * time.Second, MaxParallel: 3, Canary: 1, AutoRevert: true, HealthCheck: "checks",
				MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute, ProgressDeadline: 10 * time.Minute}},
		{"group update overrides job", JobTypeService,
			func(j *Job) {
				j.Update = &UpdateStrategy{MaxParallel: 3, HealthCheck: "manual"}
				j.TaskGroups[0].Update = &UpdateStrategy{MaxParallel: 2}
			},
			func(j *Job) any {
				return [2]any{j.TaskGroups[0].Update.MaxParallel, j.TaskGroups[0].Update.HealthCheck}
			},
			[2]any{2, "manual"}},
		{"job update not shared", JobTypeService,
			func(j *Job) { j.Update = &UpdateStrategy{MaxParallel: 3} },
			func(j *Job) any { return j.Update != j.TaskGroups[0].Update && j.Update.HealthCheck == "" }, true},

		{"kill timeout", JobTypeService, nil, func(j *Job) any { return j.TaskGroups[0].Tasks[0].KillTimeout }, 5 * time.Second},
		{"kill signal stays empty", JobTypeService, nil, func(j *Job) any { return j.TaskGroups[0].Tasks[0].KillSignal }, ""},
		{"log config", JobTypeService, nil, func(j *Job) any { return *j.TaskGroups[0].Tasks[0].LogConfig },
			LogConfig{MaxFiles: 10, MaxFileSizeMB: 10}},
		{"resources", JobTypeService, nil, func(j *Job) any { return *j.TaskGroups[0].Tasks[0].Resources },
			Resources{CPU: 100, MemoryMB: 300}},
		{"resources zero fields", JobTypeService,
			func(j *Job) { j.TaskGroups[0].Tasks[0].Resources = &Resources{MemoryMB: 64} },
			func(j *Job) any { return *j.TaskGroups[0].Tasks[0].Resources }, Resources{CPU: 100, MemoryMB: 64}},
		{"cores leave cpu zero", JobTypeService,
			func(j *Job) { j.TaskGroups[0].Tasks[0].Resources = &Resources{Cores: 2} },
			func(j *Job) any { return *j.TaskGroups[0].Tasks[0].Resources }, Resources{Cores: 2, MemoryMB: 300}},
		{"task restart from group", JobTypeBatch, nil,
			func(j *Job) any { return *j.TaskGroups[0].Tasks[0].RestartPolicy }, *DefaultRestartPolicy(JobTypeBatch)},
		{"task restart over group's", JobTypeBatch,
			func(j *Job) { j.TaskGroups[0].Tasks[0].RestartPolicy = &RestartPolicy{Attempts: 5, Delay: time.Second} },
			func(j *Job) any { return *j.TaskGroups[0].Tasks[0].RestartPolicy },
			RestartPolicy{Attempts: 5, Delay: time.Second, Interval: DefaultRestartPolicy(JobTypeBatch).Interval, Mode: RestartPolicyModeFail}},
		{"task restart is a copy", JobTypeBatch, nil,
			func(j *Job) any { return j.TaskGroups[0].Tasks[0].RestartPolicy != j.TaskGroups[0].RestartPolicy }, true},
		{"template", JobTypeService,
			func(j *Job) { j.TaskGroups[0].Tasks[0].Templates = []*Template{{DestPath: "local/a"}} },
			func(j *Job) any { return *j.TaskGroups[0].Tasks[0].Templates[0] },
			Template{DestPath: "local/a", ChangeMode: "restart", Splay: 5 * time.Second, Perms: "0644", LeftDelim: "{{", RightDelim: "}}"}},
		{"task service provider", JobTypeService,
			func(j *Job) { j.TaskGroups[0].Tasks[0].Services = []*Service{{Name: "api"}} },
			func(j *Job) any { return j.TaskGroups[0].Tasks[0].Services[0].Provider }, "sched"},
		{"group service provider", JobTypeService,
			func(j *Job) { j.TaskGroups[0].Services = []*Service{{Name: "api"}} },
			func(j *Job) any { return j.TaskGroups[0].Services[0].Provider }, "sched"},
		{"nomad service provider is sched's", JobTypeService,
			func(j *Job) { j.TaskGroups[0].Services = []*Service{{Name: "api", Provider: "nomad"}} },
			func(j *Job) any { return j.TaskGroups[0].Services[0].Provider }, "sched"},
		{"check initial status stays empty", JobTypeService,
			func(j *Job) {
				j.TaskGroups[0].Services = []*Service{{Name: "api", Checks: []*ServiceCheck{{Type: "tcp"}}}}
			},
			func(j *Job) any { return j.TaskGroups[0].Services[0].Checks[0].InitialStatus }, ""},
		{"periodic spec type", JobTypeBatch,
			func(j *Job) { j.Periodic = &PeriodicConfig{Enabled: true, Spec: "@daily"} },
			func(j *Job) any { return [2]string{j.Periodic.SpecType, j.Periodic.TimeZone} }, [2]string{"cron", "UTC"}},
		{"parameterized payload", JobTypeBatch,
			func(j *Job) { j.ParameterizedJob = &ParameterizedJobConfig{} },
			func(j *Job) any { return j.ParameterizedJob.Payload }, "optional"},
		{"group network mode", JobTypeService,
			func(j *Job) { j.TaskGroups[0].Networks = []*NetworkResource{{}} },
			func(j *Job) any { return j.TaskGroups[0].Networks[0].Mode }, "host"},
		{"task network mode", JobTypeService,
			func(j *Job) {
				j.TaskGroups[0].Tasks[0].Resources = &Resources{Networks: []*NetworkResource{{Mode: "bridge"}, {}}}
			},
			func(j *Job) any {
				n := j.TaskGroups[0].Tasks[0].Resources.Networks
				return [2]string{n[0].Mode, n[1].Mode}
			}, [2]string{"bridge", "host"}},
		{"constraint operand", JobTypeService,
			func(j *Job) { j.Constraints = []*Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux"}} },
			func(j *Job) any { return j.Constraints[0].Operand }, "="},
		{"affinity weight", JobTypeService,
			func(j *Job) {
				j.TaskGroups[0].Affinities = []*Affinity{{LTarget: "${node.datacenter}", RTarget: "dc1"}}
			},
			func(j *Job) any { return j.TaskGroups[0].Affinities[0].Weight }, int8(50)},
		{"spread weight", JobTypeService,
			func(j *Job) { j.Spreads = []*Spread{{Attribute: "${node.datacenter}"}} },
			func(j *Job) any { return j.Spreads[0].Weight }, int8(50)},
		{"scaling type", JobTypeService,
			func(j *Job) { j.TaskGroups[0].Scaling = &ScalingPolicy{Max: 3} },
			func(j *Job) any { return j.TaskGroups[0].Scaling.Type }, "horizontal"},
		{"artifact mode", JobTypeService,
			func(j *Job) { j.TaskGroups[0].Tasks[0].Artifacts = []*TaskArtifact{{GetterSource: "https://x"}} },
			func(j *Job) any { return j.TaskGroups[0].Tasks[0].Artifacts[0].GetterMode }, "any"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := minimalJob(tc.jobType)
			if tc.edit != nil {
				tc.edit(j)
			}
			j.Canonicalize()
			if got := tc.got(j); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestCanonicalizeIsIdempotentAndValid(t *testing.T) {
	for _, typ := range []string{JobTypeService, JobTypeBatch, JobTypeSystem, JobTypeSysBatch} {
		t.Run(typ, func(t *testing.T) {
			j := minimalJob(typ)
			j.Canonicalize()
			if err := j.Validate(); err != nil {
				t.Fatalf("canonical minimal %s job is invalid: %v", typ, err)
			}
			again := minimalJob(typ)
			again.Canonicalize()
			again.Canonicalize()
			if !reflect.DeepEqual(j, again) {
				t.Fatalf("second Canonicalize changed the job")
			}
		})
	}
}

func TestCanonicalizeToleratesNils(t *testing.T) {
	var nilJob *Job
	nilJob.Canonicalize() // Must not panic.
	j := &Job{ID: "x", TaskGroups: []*TaskGroup{nil, {Name: "g", Tasks: []*Task{nil}}}}
	j.Canonicalize()
	if j.TaskGroups[1].RestartPolicy == nil {
		t.Fatal("group after a nil group was not canonicalized")
	}
	if err := j.Validate(); err == nil {
		t.Fatal("nil group and task passed validation")
	}
}
