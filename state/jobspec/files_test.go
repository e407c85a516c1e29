package jobspec

import (
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// rawTask is the one-line task of the files that are not about tasks.
func rawTask(name string) *state.Task {
	return &state.Task{Name: name, Driver: "raw_exec"}
}

func wantJobFile() *state.Job {
	return &state.Job{
		ID:          "billing",
		Name:        "billing-api",
		Region:      "eu",
		Namespace:   "payments",
		NodePool:    "large",
		Datacenters: []string{"eu-1", "eu-2"},
		Type:        "service",
		Priority:    70,
		AllAtOnce:   true,
		Meta:        map[string]string{"owner": "payments-team", "tier": "1"},
		Constraints: []*state.Constraint{
			{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="},
			{LTarget: "${attr.cpu.arch}", RTarget: "arm64", Operand: "!="},
		},
		Affinities: []*state.Affinity{
			{LTarget: "${node.datacenter}", RTarget: "eu-1", Operand: "=", Weight: 80},
		},
		Spreads: []*state.Spread{{
			Attribute: "${node.datacenter}",
			Weight:    100,
			SpreadTarget: []*state.SpreadTarget{
				{Value: "eu-1", Percent: 60},
				{Value: "eu-2", Percent: 40},
			},
		}},
		Update: &state.UpdateStrategy{
			MaxParallel:      2,
			HealthCheck:      "checks",
			MinHealthyTime:   15 * time.Second,
			HealthyDeadline:  4 * time.Minute,
			ProgressDeadline: 9 * time.Minute,
			AutoRevert:       true,
			AutoPromote:      true,
			Canary:           1,
			Stagger:          45 * time.Second,
		},
		TaskGroups: []*state.TaskGroup{{
			Name:  "api",
			Count: 1,
			Tasks: []*state.Task{rawTask("server")},
		}},
	}
}

func wantPeriodicFile() *state.Job {
	return &state.Job{
		ID:   "report",
		Type: "batch",
		Periodic: &state.PeriodicConfig{
			Enabled:         true,
			Specs:           []string{"0 3 * * *", "30 12 * * 1-5"},
			SpecType:        state.PeriodicSpecCron,
			ProhibitOverlap: true,
			TimeZone:        "Europe/Paris",
		},
		ParameterizedJob: &state.ParameterizedJobConfig{
			Payload:      "required",
			MetaRequired: []string{"customer"},
			MetaOptional: []string{"format", "locale"},
		},
		TaskGroups: []*state.TaskGroup{{
			Name:  "run",
			Count: 0, // explicit, kept
			Tasks: []*state.Task{{
				Name:            "render",
				Driver:          "raw_exec",
				DispatchPayload: &state.DispatchPayloadConfig{File: "input.json"},
			}},
		}},
	}
}

func wantGroupFile() *state.Job {
	return &state.Job{
		ID: "cache",
		TaskGroups: []*state.TaskGroup{{
			Name:                      "redis",
			Count:                     3,
			MaxClientDisconnect:       dur(time.Hour),
			ShutdownDelay:             dur(5 * time.Second),
			StopAfterClientDisconnect: dur(90 * time.Second),
			Meta:                      map[string]string{"cache.engine": "redis"},
			Constraints: []*state.Constraint{
				{Operand: "distinct_hosts"},
				{LTarget: "${meta.rack}", RTarget: "2", Operand: "distinct_property"},
				{LTarget: "${attr.os.version}", RTarget: ">= 22.04", Operand: "version"},
				{LTarget: "${attr.unique.hostname}", RTarget: "^cache-[0-9]+$", Operand: "regexp"},
				{LTarget: "${attr.driver.raw_exec.version}", RTarget: ">= 1.2.0", Operand: "semver"},
				{LTarget: "${meta.features}", RTarget: "ssd,nvme", Operand: "set_contains"},
			},
			Affinities: []*state.Affinity{
				{LTarget: "${meta.zones}", RTarget: "a,b", Operand: "set_contains_any", Weight: -50},
			},
			Spreads: []*state.Spread{{Attribute: "${meta.rack}"}},
			RestartPolicy: &state.RestartPolicy{
				Attempts:        0,
				Interval:        10 * time.Minute,
				Delay:           25 * time.Second,
				Mode:            "delay",
				RenderTemplates: true,
			},
			ReschedulePolicy: &state.ReschedulePolicy{
				Attempts:      5,
				Interval:      2 * time.Hour,
				Delay:         30 * time.Second,
				DelayFunction: "fibonacci",
				MaxDelay:      20 * time.Minute,
			},
			Migrate: &state.MigrateStrategy{
				MaxParallel:     2,
				HealthCheck:     "task_states",
				MinHealthyTime:  20 * time.Second,
				HealthyDeadline: 3 * time.Minute,
			},
			Update:        &state.UpdateStrategy{Canary: 2},
			EphemeralDisk: &state.EphemeralDisk{Sticky: true, SizeMB: 2048, Migrate: true},
			Networks: []*state.NetworkResource{{
				Mode:          "bridge",
				ReservedPorts: []state.Port{{Label: "db", Value: 6379, To: 6379}},
				DynamicPorts: []state.Port{
					{Label: "metrics", To: 9121, HostNetwork: "internal"},
					{Label: "admin"},
				},
				DNS: &state.DNSConfig{
					Servers:  []string{"10.0.0.53"},
					Searches: []string{"svc.local"},
					Options:  []string{"ndots:2"},
				},
			}},
			Services: []*state.Service{{Name: "redis", PortLabel: "db", Provider: "sched", TaskName: "redis"}},
			Scaling: &state.ScalingPolicy{
				Min:     1,
				Max:     10,
				Enabled: true,
				Policy: map[string]any{
					"cooldown": "2m",
					"check": []any{map[string]any{"mem": map[string]any{
						"source":   "prometheus",
						"query":    "avg(mem)",
						"strategy": []any{map[string]any{"target-value": map[string]any{"target": 70}}},
					}}},
				},
			},
			Volumes: map[string]*state.VolumeRequest{
				"data": {
					Name: "data", Type: "csi", Source: "redis-data", AccessMode: "single-node-writer",
					AttachmentMode: "file-system", PerAlloc: true,
				},
				"certs": {Name: "certs", Type: "host", Source: "tls", ReadOnly: true},
			},
			Tasks: []*state.Task{rawTask("redis")},
		}},
	}
}

func wantTaskFile() *state.Job {
	return &state.Job{
		ID: "tasks",
		TaskGroups: []*state.TaskGroup{{
			Name:  "g",
			Count: 1,
			Tasks: []*state.Task{{
				Name:          "main",
				Driver:        "docker",
				User:          "nobody",
				KillTimeout:   20 * time.Second,
				KillSignal:    "SIGTERM",
				Kind:          "connect-proxy:api",
				Leader:        true,
				ShutdownDelay: 3 * time.Second,
				Config: map[string]any{
					"image":             "redis:7",
					"args":              []any{"--port", "6379"},
					"ports":             []any{"db"},
					"memory_hard_limit": 512,
					"ratio":             0.5,
					"privileged":        false,
					"labels":            map[string]any{"team": "cache"},
					"mount": []any{
						map[string]any{"type": "bind", "source": "local/redis.conf"},
						map[string]any{"type": "tmpfs", "target": "/scratch"},
					},
					"logging": []any{map[string]any{"syslog": map[string]any{"tag": "redis"}}},
				},
				Env:  map[string]string{"REDIS_PORT": "6379", "DATA_DIR": "${SCHED_ALLOC_DIR}/data"},
				Meta: map[string]string{"role": "primary"},
				Constraints: []*state.Constraint{
					{LTarget: "${attr.driver.docker}", Operand: "is_set"},
				},
				Affinities: []*state.Affinity{
					{LTarget: "${node.class}", RTarget: "^high-mem", Operand: "regexp"},
				},
				Services: []*state.Service{{
					Name:              "redis-main",
					PortLabel:         "db",
					Tags:              []string{"primary", "v7"},
					CanaryTags:        []string{"canary"},
					Address:           "10.1.2.3",
					AddressMode:       "host",
					EnableTagOverride: true,
					Meta:              map[string]string{"version": "7"},
					Checks: []*state.ServiceCheck{
						{Name: "alive", Type: "tcp", PortLabel: "db", Interval: 10 * time.Second, Timeout: 2 * time.Second},
						{
							Name: "info", Type: "script", Command: "/usr/local/bin/redis-cli", Args: []string{"info"},
							Interval: 30 * time.Second, Timeout: 5 * time.Second, InitialStatus: "passing",
							OnUpdate: "ignore_warnings", TaskName: "main",
						},
						{
							Name: "http", Type: "http", Protocol: "https", Method: "POST", Path: "/health",
							Interval: 15 * time.Second, Timeout: 3 * time.Second,
							Header: map[string][]string{"Authorization": {"Bearer x"}, "X-Trace": {"on"}},
						},
					},
				}},
				Templates: []*state.Template{
					{
						SourcePath: "local/redis.conf.tpl", DestPath: "local/redis.conf", ChangeMode: "signal",
						ChangeSignal: "SIGHUP", Splay: 10 * time.Second, Perms: "0600", LeftDelim: "[[", RightDelim: "]]",
					},
					{EmbeddedTmpl: "PORT={{ env \"SCHED_PORT_db\" }}\n", DestPath: "secrets/app.env", Envvars: true},
				},
				Resources: &state.Resources{
					CPU: 500, MemoryMB: 256, MemoryMaxMB: 512, DiskMB: 100, IOPS: 10,
					Devices: []*state.RequestedDevice{{
						Name:  "nvidia/gpu",
						Count: 2,
						Constraints: []*state.Constraint{
							{LTarget: "${device.attr.memory}", RTarget: "2 GiB", Operand: ">="},
						},
						Affinities: []*state.Affinity{
							{LTarget: "${device.model}", RTarget: "Tesla", Operand: "=", Weight: 50},
						},
					}},
				},
				Lifecycle: &state.TaskLifecycleConfig{Hook: "prestart", Sidecar: true},
				LogConfig: &state.LogConfig{MaxFiles: 3, MaxFileSizeMB: 15},
				Artifacts: []*state.TaskArtifact{{
					GetterSource:  "https://example.com/redis.tar.gz",
					RelativeDest:  "local/redis",
					GetterMode:    "dir",
					GetterOptions: map[string]string{"checksum": "sha256:abc"},
					GetterHeaders: map[string]string{"User-Agent": "sched"},
				}},
				RestartPolicy: &state.RestartPolicy{Attempts: 4, Delay: 5 * time.Second},
				VolumeMounts: []*state.VolumeMount{
					{Volume: "data", Destination: "/data", ReadOnly: true, PropagationMode: "private"},
				},
				Actions: []*state.Action{
					{Name: "flush", Command: "/usr/local/bin/redis-cli", Args: []string{"FLUSHALL"}},
					{Name: "ping", Command: "redis-cli"},
				},
			}},
		}},
	}
}

// wantWebFile is the realistic example, with version 1.4.2 and the
// defaults of its other variables.
func wantWebFile() *state.Job {
	const release = "v1.4.2"
	return &state.Job{
		ID:          "web",
		Datacenters: []string{"dc1"},
		Type:        "service",
		Update: &state.UpdateStrategy{
			MaxParallel:     1,
			MinHealthyTime:  10 * time.Second,
			HealthyDeadline: 3 * time.Minute,
			AutoRevert:      true,
		},
		TaskGroups: []*state.TaskGroup{{
			Name:     "frontend",
			Count:    2,
			Networks: []*state.NetworkResource{{DynamicPorts: []state.Port{{Label: "http", To: 8080}}}},
			RestartPolicy: &state.RestartPolicy{
				Attempts: 3, Interval: 5 * time.Minute, Delay: 15 * time.Second, Mode: "fail",
			},
			Services: []*state.Service{{
				Name:      "web",
				PortLabel: "http",
				Tags:      []string{"urlprefix-/", "V1.4.2"},
				Checks: []*state.ServiceCheck{{
					Type: "http", Path: "/healthz", Interval: 10 * time.Second, Timeout: 2 * time.Second,
				}},
			}},
			Tasks: []*state.Task{{
				Name:   "server",
				Driver: "raw_exec",
				Config: map[string]any{
					"command": "local/web/web",
					"args":    []any{"-listen", ":${NOMAD_PORT_http}", "-config", "${NOMAD_TASK_DIR}/web.conf"},
				},
				Artifacts: []*state.TaskArtifact{{
					GetterSource: "https://releases.example.com/web/" + release + "/web_linux_amd64.tar.gz",
					RelativeDest: "local/web",
				}},
				Templates: []*state.Template{{
					DestPath: "local/web.conf",
					EmbeddedTmpl: "release = \"" + release + "\"\n" +
						"alloc   = \"${SCHED_ALLOC_ID}\"\n" +
						"upstream = \"{{ range service \"api\" }}{{ .Address }}:{{ .Port }}{{ end }}\"\n",
				}},
				Resources: &state.Resources{CPU: 200, MemoryMB: 128},
			}},
		}},
	}
}

// TestParseFiles parses each testdata job, one per area of the job
// specification, and compares the whole resulting job.
func TestParseFiles(t *testing.T) {
	tests := []struct {
		file string
		vars map[string]string
		want *state.Job
	}{
		{file: "job.sched.hcl", want: wantJobFile()},
		{file: "periodic.sched.hcl", want: wantPeriodicFile()},
		{file: "group.sched.hcl", want: wantGroupFile()},
		{file: "task.sched.hcl", want: wantTaskFile()},
		{file: "web.sched.hcl", vars: map[string]string{"version": "1.4.2"}, want: wantWebFile()},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := Parse(ParseConfig{Filename: tt.file, Body: readTestdata(t, tt.file), VarFlags: tt.vars})
			if err != nil {
				t.Fatal(err)
			}
			assertEqual(t, tt.want, got)
		})
	}
}

// TestParseHCL1Files parses the HCL1 form of each example and expects the
// very job that HCL2 gives. The block files use only syntax that both
// versions share, so the same text is parsed; the web example is written
// out in HCL1 with its variables resolved by hand.
func TestParseHCL1Files(t *testing.T) {
	tests := []struct {
		file string
		want *state.Job
	}{
		{file: "job.sched.hcl", want: wantJobFile()},
		{file: "periodic.sched.hcl", want: wantPeriodicFile()},
		{file: "group.sched.hcl", want: wantGroupFile()},
		{file: "task.sched.hcl", want: wantTaskFile()},
		{file: "web.hcl1", want: wantWebFile()},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := ParseHCL1(tt.file, readTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			assertEqual(t, tt.want, got)
		})
	}
}

// TestParseCanonicalizes checks that the parser leaves defaults to
// Canonicalize: the parsed web job has none, and after Canonicalize it has
// them, while its explicit values survive.
func TestParseCanonicalizes(t *testing.T) {
	job, err := Parse(ParseConfig{Filename: "web.sched.hcl", Body: readTestdata(t, "web.sched.hcl"),
		VarFlags: map[string]string{"version": "1.4.2"}})
	if err != nil {
		t.Fatal(err)
	}
	task := job.TaskGroups[0].Tasks[0]
	if job.Priority != 0 || job.Namespace != "" || task.KillTimeout != 0 || task.LogConfig != nil {
		t.Fatalf("parser filled defaults: priority %d namespace %q kill_timeout %v logs %v",
			job.Priority, job.Namespace, task.KillTimeout, task.LogConfig)
	}
	job.Canonicalize()
	if job.Priority != state.DefaultJobPriority || job.Namespace != state.DefaultNamespace {
		t.Errorf("after Canonicalize: priority %d namespace %q", job.Priority, job.Namespace)
	}
	if got := job.TaskGroups[0].RestartPolicy.Attempts; got != 3 {
		t.Errorf("explicit restart attempts lost: %d", got)
	}
}
