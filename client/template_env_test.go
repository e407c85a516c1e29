package client

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// startRecorder is the mock driver that records every TaskConfig it is
// asked to start, and runs onStart (when set) before each start, with the
// number of starts before it.
type startRecorder struct {
	*driver.Mock
	onStart func(n int, cfg *driver.TaskConfig)

	mu     sync.Mutex
	starts []*driver.TaskConfig
}

func (r *startRecorder) StartTask(cfg *driver.TaskConfig) (*driver.TaskHandle, error) {
	r.mu.Lock()
	n := len(r.starts)
	r.starts = append(r.starts, cfg)
	r.mu.Unlock()
	if r.onStart != nil {
		r.onStart(n, cfg)
	}
	return r.Mock.StartTask(cfg)
}

func (r *startRecorder) started() []*driver.TaskConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*driver.TaskConfig(nil), r.starts...)
}

// recordingClient is a test client whose only driver is rec. Unless mod
// says otherwise, a running task's templates are never rendered again:
// only a start renders them.
func recordingClient(t *testing.T, fs *fakeServer, rec *startRecorder, mod ...func(*Config)) *Client {
	t.Helper()
	rec.Mock = driver.NewMock()
	return testClient(t, fs, "", append([]func(*Config){func(cfg *Config) {
		cfg.Drivers = []driver.Driver{rec}
		cfg.TemplateInterval = time.Hour
	}}, mod...)...)
}

func TestEnvTemplateVariablesReachTheTask(t *testing.T) {
	fs := newFakeServer(t)
	rec := &startRecorder{}
	c := recordingClient(t, fs, rec)
	task := mock("web", map[string]any{"stdout_string": "${COLOR}"})
	task.Resources = &state.Resources{CPU: 250, MemoryMB: 64}
	task.Env = map[string]string{"COLOR": "from-env-block", "KEEP": "${SCHED_TASK_NAME}"}
	task.Templates = []*state.Template{
		{EmbeddedTmpl: "# settings\nCOLOR=from-{{ meta \"v\" }}\nexport QUOTED=\"a b\"\n\nSCHED_CPU_LIMIT=9999\n", DestPath: "secrets/app.env", Envvars: true, ChangeMode: "noop"},
		{EmbeddedTmpl: "PLAIN=1\n", DestPath: "local/plain.conf", ChangeMode: "noop"},
	}
	j := job(state.JobTypeService, task)
	j.Meta = map[string]string{"v": "tmpl"}
	a := allocFor(c, j)
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)

	starts := rec.started()
	if len(starts) != 1 {
		t.Fatalf("%d starts, want 1", len(starts))
	}
	cfg := starts[0]
	for k, want := range map[string]string{
		"COLOR":           "from-tmpl", // the template wins over the env block
		"QUOTED":          "a b",
		"KEEP":            "web", // the env block's other variables stay
		"SCHED_CPU_LIMIT": "9999",
		"SCHED_TASK_NAME": "web",
	} {
		if got := cfg.Env[k]; got != want {
			t.Errorf("env %s = %q, want %q", k, got, want)
		}
	}
	if _, ok := cfg.Env["PLAIN"]; ok {
		t.Error("a template without env = true added its variables")
	}
	if got := cfg.Config["stdout_string"]; got != "from-tmpl" {
		t.Errorf("driver config interpolated to %q, want the template's variable", got)
	}
	if cfg.CPU != 250 || cfg.MemoryMB != 64 {
		t.Errorf("limits CPU %d MemoryMB %d: a template must not change the allocation's", cfg.CPU, cfg.MemoryMB)
	}
}

func TestMalformedEnvTemplateFailsTheTask(t *testing.T) {
	fs := newFakeServer(t)
	rec := &startRecorder{}
	c := recordingClient(t, fs, rec)
	task := mock("web", nil)
	task.Templates = []*state.Template{{EmbeddedTmpl: "GOOD=1\nnot a pair\n", DestPath: "local/bad.env", Envvars: true}}
	j := job(state.JobTypeService, task)
	restartPolicy(j, 3, time.Millisecond, time.Minute, state.RestartPolicyModeFail)
	a := allocFor(c, j)
	fs.addAlloc(a)
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusFailed)
	ts := got.TaskStates["web"]
	ev := eventOf(ts, state.TaskSetupFailure)
	if ev == nil || !ev.FailsTask || !strings.Contains(ev.SetupError, `"local/bad.env"`) || !strings.Contains(ev.SetupError, "line 2") {
		t.Fatalf("Setup Failure event %+v; %s", ev, statusOf(got))
	}
	if ts.Restarts != 0 || !ts.Failed || !ts.StartedAt.IsZero() {
		t.Fatalf("a malformed env template is not retried: %s", statusOf(got))
	}
	if n := len(rec.started()); n != 0 {
		t.Fatalf("the driver was asked to start the task %d times", n)
	}
}

// TestRestartRenderTemplates: the task fails once and is restarted by its
// policy; its template's source changes during the first run. The second
// start sees the new content only with render_templates = true.
func TestRestartRenderTemplates(t *testing.T) {
	for _, render := range []bool{true, false} {
		t.Run("render_templates="+strconv.FormatBool(render), func(t *testing.T) {
			fs := newFakeServer(t)
			rec := &startRecorder{}
			var mu sync.Mutex
			var rendered []string // local/app.env at each start
			rec.onStart = func(n int, cfg *driver.TaskConfig) {
				mu.Lock()
				rendered = append(rendered, readFile(t, filepath.Join(cfg.TaskDir, "local", "app.env")))
				mu.Unlock()
				if n == 0 {
					src := filepath.Join(cfg.TaskDir, "local", "src.tpl")
					if err := os.WriteFile(src, []byte("COLOR=blue\n"), 0o644); err != nil {
						t.Error(err)
					}
				}
			}
			c := recordingClient(t, fs, rec)
			srcDir := t.TempDir()
			if err := os.WriteFile(filepath.Join(srcDir, "src.tpl"), []byte("COLOR=red\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			task := mock("web", map[string]any{"run_for": "10ms", "exit_code": 1})
			// The artifact delivers the template source once, before the
			// first render; the test then changes it in place.
			task.Artifacts = []*state.TaskArtifact{{GetterSource: "file://" + filepath.Join(srcDir, "src.tpl"), RelativeDest: "local/"}}
			task.Templates = []*state.Template{{SourcePath: "local/src.tpl", DestPath: "local/app.env", Envvars: true, ChangeMode: "restart", Splay: time.Millisecond}}
			j := job(state.JobTypeService, task)
			restartPolicy(j, 1, time.Millisecond, time.Minute, state.RestartPolicyModeFail)
			task.RestartPolicy.RenderTemplates = render
			a := allocFor(c, j)
			fs.addAlloc(a)
			got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusFailed)
			starts := rec.started()
			mu.Lock()
			defer mu.Unlock()
			if len(starts) != 2 || len(rendered) != 2 || got.TaskStates["web"].Restarts != 1 {
				t.Fatalf("%d starts, want 2: %s", len(starts), statusOf(got))
			}
			want := "red"
			if render {
				want = "blue"
			}
			if starts[0].Env["COLOR"] != "red" || rendered[0] != "COLOR=red\n" {
				t.Fatalf("first start: COLOR=%q, file %q", starts[0].Env["COLOR"], rendered[0])
			}
			if starts[1].Env["COLOR"] != want || rendered[1] != "COLOR="+want+"\n" {
				t.Fatalf("second start: COLOR=%q, file %q; want %s", starts[1].Env["COLOR"], rendered[1], want)
			}
		})
	}
}

// TestEnvTemplateChangeRestartsWithNewValues: an env template with
// change_mode restart that changes while the task runs restarts it, and
// the new start has the new values (outside the restart policy's count).
func TestEnvTemplateChangeRestartsWithNewValues(t *testing.T) {
	fs := newFakeServer(t)
	rec := &startRecorder{}
	c := recordingClient(t, fs, rec, func(cfg *Config) { cfg.TemplateInterval = 20 * time.Millisecond })
	task := mock("web", nil)
	task.Templates = []*state.Template{{EmbeddedTmpl: `VERSION={{ meta "v" }}`, DestPath: "local/app.env", Envvars: true, ChangeMode: "restart", Splay: time.Millisecond}}
	j := job(state.JobTypeService, task)
	j.Meta = map[string]string{"v": "1"}
	a := allocFor(c, j)
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	fs.mutateAlloc(a.ID, func(a *state.Allocation) {
		a.Job = a.Job.Copy()
		a.Job.Version++
		a.Job.Meta = map[string]string{"v": "2"}
	})
	testutil.WaitForErr(t, 10*time.Second, "a second start", func() error {
		if n := len(rec.started()); n < 2 {
			return errString("starts: " + strconv.Itoa(n))
		}
		return nil
	})
	starts := rec.started()
	if starts[0].Env["VERSION"] != "1" || starts[1].Env["VERSION"] != "2" {
		t.Fatalf("VERSION at the starts: %q then %q, want 1 then 2", starts[0].Env["VERSION"], starts[1].Env["VERSION"])
	}
	if got := fs.alloc(a.ID); got.TaskStates["web"].Restarts != 0 {
		t.Fatalf("a template-driven restart counted against the policy: %s", statusOf(got))
	}
}
