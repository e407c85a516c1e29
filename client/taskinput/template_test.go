package taskinput

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/state"
)

// newInput is an Input over a fresh task directory.
func newInput(t *testing.T, tmpls ...*state.Template) *Input {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "web")
	if err := os.MkdirAll(filepath.Join(dir, "local"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &Input{
		Task:      &state.Task{Name: "web", Templates: tmpls},
		TaskDir:   dir,
		LocalDir:  filepath.Join(dir, "local"),
		Env:       map[string]string{"SCHED_ALLOC_ID": "a1", "PORT": "8080"},
		Meta:      MergeMeta(map[string]string{"team": "job", "tier": "job"}, map[string]string{"tier": "group"}, map[string]string{"owner": "task"}),
		NodeAttrs: map[string]string{"kernel.name": "linux"},
		Node:      &state.Node{ID: "n1", Name: "node-1", Datacenter: "dc1", NodeClass: "big", NodePool: "default"},
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRenderFuncsAndData(t *testing.T) {
	in := newInput(t, &state.Template{
		DestPath: "local/app.conf",
		EmbeddedTmpl: `port={{ env "PORT" }} alloc={{ .Env.SCHED_ALLOC_ID }} missing=[{{ env "NOPE" }}]
team={{ meta "team" }} tier={{ meta "tier" }} owner={{ .Meta.owner }} none=[{{ .Meta.none }}]
kernel={{ attr "kernel.name" }} node={{ node "Name" }}/{{ node "ID" }}/{{ node "Datacenter" }}/{{ node "NodeClass" }}/{{ node "NodePool" }} task={{ .Task }}`,
		Perms: "0640",
	})
	changed, err := RenderTemplates(in)
	if err != nil || len(changed) != 1 {
		t.Fatalf("render: %v, changed %v", err, changed)
	}
	want := "port=8080 alloc=a1 missing=[]\nteam=job tier=group owner=task none=[]\nkernel=linux node=node-1/n1/dc1/big/default task=web"
	p := filepath.Join(in.TaskDir, "local", "app.conf")
	if got := readFile(t, p); got != want {
		t.Fatalf("rendered\n%s\nwant\n%s", got, want)
	}
	if info, _ := os.Stat(p); info.Mode().Perm() != 0o640 {
		t.Fatalf("perms %v, want 0640", info.Mode().Perm())
	}
}

func TestRenderChangeDetection(t *testing.T) {
	in := newInput(t,
		&state.Template{DestPath: "local/a", EmbeddedTmpl: `{{ env "PORT" }}`},
		&state.Template{DestPath: "local/b", EmbeddedTmpl: `static`},
	)
	if changed, err := RenderTemplates(in); err != nil || len(changed) != 2 {
		t.Fatalf("first render: %v, %d changed", err, len(changed))
	}
	if changed, err := RenderTemplates(in); err != nil || len(changed) != 0 {
		t.Fatalf("same data: %v, %d changed", err, len(changed))
	}
	in.Env["PORT"] = "9090"
	changed, err := RenderTemplates(in)
	if err != nil || len(changed) != 1 || changed[0].DestPath != "local/a" {
		t.Fatalf("after change: %v, changed %v", err, changed)
	}
	if got := readFile(t, filepath.Join(in.TaskDir, "local", "a")); got != "9090" {
		t.Fatalf("content %q", got)
	}
	// No temporary file is left next to the destination.
	entries, _ := os.ReadDir(filepath.Join(in.TaskDir, "local"))
	if len(entries) != 2 {
		t.Fatalf("local/ holds %v", entries)
	}
}

func TestRenderDelimsSourceAndDefaults(t *testing.T) {
	in := newInput(t,
		&state.Template{DestPath: "out/delims", EmbeddedTmpl: `{{ not a template }} <% env "PORT" %>`, LeftDelim: "<%", RightDelim: "%>"},
		&state.Template{DestPath: "out/from-source", SourcePath: "local/src.tmpl"},
	)
	if err := os.WriteFile(filepath.Join(in.TaskDir, "local", "src.tmpl"), []byte(`dc={{ node "Datacenter" }}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RenderTemplates(in); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(in.TaskDir, "out", "delims")); got != "{{ not a template }} 8080" {
		t.Fatalf("delims: %q", got)
	}
	p := filepath.Join(in.TaskDir, "out", "from-source")
	if got := readFile(t, p); got != "dc=dc1" {
		t.Fatalf("source: %q", got)
	}
	if info, _ := os.Stat(p); info.Mode().Perm() != 0o644 {
		t.Fatalf("default perms %v", info.Mode().Perm())
	}
}

func TestRenderErrors(t *testing.T) {
	outside := t.TempDir()
	for name, tc := range map[string]struct {
		tmpl   *state.Template
		escape bool
	}{
		"dotdot":          {&state.Template{DestPath: "../../etc/x", EmbeddedTmpl: "x"}, true},
		"absolute":        {&state.Template{DestPath: "/tmp/x", EmbeddedTmpl: "x"}, true},
		"symlinked dir":   {&state.Template{DestPath: "link/x", EmbeddedTmpl: "x"}, true},
		"source escapes":  {&state.Template{DestPath: "local/x", SourcePath: "../secret"}, true},
		"parse error":     {&state.Template{DestPath: "local/x", EmbeddedTmpl: "{{ if }}"}, false},
		"unknown func":    {&state.Template{DestPath: "local/x", EmbeddedTmpl: `{{ vault "x" }}`}, false},
		"bad node field":  {&state.Template{DestPath: "local/x", EmbeddedTmpl: `{{ node "Secret" }}`}, false},
		"bad perms":       {&state.Template{DestPath: "local/x", EmbeddedTmpl: "x", Perms: "rw-r--r--"}, false},
		"missing source":  {&state.Template{DestPath: "local/x", SourcePath: "local/nope"}, false},
		"empty dest path": {&state.Template{EmbeddedTmpl: "x"}, true},
	} {
		t.Run(name, func(t *testing.T) {
			in := newInput(t, tc.tmpl)
			if err := os.Symlink(outside, filepath.Join(in.TaskDir, "link")); err != nil {
				t.Fatal(err)
			}
			_, err := RenderTemplates(in)
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("err %v, want a TemplateError", err)
			}
			if errors.Is(err, ErrEscapes) != tc.escape {
				t.Fatalf("err %v: escape = %v, want %v", err, errors.Is(err, ErrEscapes), tc.escape)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Fatalf("wrote outside the task dir: %v", entries)
			}
		})
	}
}

func TestPlanChange(t *testing.T) {
	tm := func(path, mode, sig string, splay time.Duration) *state.Template {
		return &state.Template{DestPath: path, ChangeMode: mode, ChangeSignal: sig, Splay: splay}
	}
	half := func(n int64) int64 { return n / 2 }
	for name, tc := range map[string]struct {
		in      []*state.Template
		restart bool
		signals []string
		splay   time.Duration
		unsupp  []string
	}{
		"noop":              {[]*state.Template{tm("a", "noop", "", 10*time.Second)}, false, nil, 0, nil},
		"restart wins":      {[]*state.Template{tm("a", "signal", "SIGHUP", 0), tm("b", "restart", "", 4*time.Second)}, true, nil, 2 * time.Second, nil},
		"signals deduped":   {[]*state.Template{tm("a", "signal", "SIGHUP", time.Second), tm("b", "signal", "SIGUSR1", 6*time.Second), tm("c", "signal", "SIGHUP", 0)}, false, []string{"SIGHUP", "SIGUSR1"}, 3 * time.Second, nil},
		"noop splay unused": {[]*state.Template{tm("a", "noop", "", time.Hour), tm("b", "signal", "SIGHUP", 0)}, false, []string{"SIGHUP"}, 0, nil},
		"script":            {[]*state.Template{tm("a", "script", "", time.Second)}, false, nil, 0, []string{"a"}},
	} {
		t.Run(name, func(t *testing.T) {
			a := PlanChange(tc.in, half)
			if a.Restart != tc.restart || !slices.Equal(a.Signals, tc.signals) || a.Splay != tc.splay || !slices.Equal(a.Unsupported, tc.unsupp) {
				t.Fatalf("got %+v", a)
			}
			if len(a.Templates) != len(tc.in) {
				t.Fatalf("templates %v", a.Templates)
			}
		})
	}
}

func TestChangeEvent(t *testing.T) {
	now := time.Unix(100, 0)
	ev := (&ChangeAction{Signals: []string{"SIGHUP"}, Templates: []string{"local/a", "local/b"}, Splay: 1500 * time.Millisecond}).Event(now)
	if ev.Type != EventTemplateRendered || ev.Time != now.UnixNano() || ev.Details["change_mode"] != "signal" ||
		ev.Details["templates"] != "local/a,local/b" || ev.Details["signals"] != "SIGHUP" || ev.Details["splay"] != "1.5s" {
		t.Fatalf("event %+v", ev)
	}
	if !strings.Contains(ev.Message, "SIGHUP") || !strings.Contains(ev.Message, "local/a, local/b") {
		t.Fatalf("message %q", ev.Message)
	}
	if ev := (&ChangeAction{Restart: true, Templates: []string{"x"}}).Event(now); ev.Details["change_mode"] != "restart" {
		t.Fatalf("restart event %+v", ev)
	}
}

// recorder is a ChangeHandler that notes what it was asked, and when.
type recorder struct {
	restarts []string
	signals  []string
	at       []time.Time
	err      error
}

func (r *recorder) Restart(_ context.Context, reason string) error {
	r.restarts = append(r.restarts, reason)
	r.at = append(r.at, time.Now())
	return r.err
}

func (r *recorder) Signal(_ context.Context, sig string) error {
	r.signals = append(r.signals, sig)
	r.at = append(r.at, time.Now())
	return r.err
}

func TestRerenderActsAfterSplay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := newInput(t,
			&state.Template{DestPath: "local/a", EmbeddedTmpl: `{{ env "PORT" }}`, ChangeMode: "signal", ChangeSignal: "SIGHUP", Splay: 10 * time.Second},
			&state.Template{DestPath: "local/b", EmbeddedTmpl: `{{ meta "owner" }}`, ChangeMode: "restart", Splay: 4 * time.Second},
			&state.Template{DestPath: "local/c", EmbeddedTmpl: `{{ attr "kernel.name" }}`, ChangeMode: "noop"},
		)
		if _, err := RenderTemplates(in); err != nil {
			t.Fatal(err)
		}
		r := &Rerenderer{RandN: func(n int64) int64 { return n - 1 }}
		h := &recorder{}
		var events []*state.TaskEvent
		emit := func(e *state.TaskEvent) { events = append(events, e) }

		// Nothing changed: no event, no action.
		if a, err := r.Rerender(context.Background(), in, h, emit); err != nil || a != nil || len(events) != 0 {
			t.Fatalf("unchanged: %+v, %v, %d events", a, err, len(events))
		}

		// A signal template changes: SIGHUP after a splay just under 10s.
		in.Env["PORT"] = "1"
		began := time.Now()
		a, err := r.Rerender(context.Background(), in, h, emit)
		if err != nil || len(h.signals) != 1 || h.signals[0] != "SIGHUP" || len(h.restarts) != 0 {
			t.Fatalf("signal: %+v, %v, handler %+v", a, err, h)
		}
		if waited := h.at[0].Sub(began); waited != 10*time.Second-1 {
			t.Fatalf("acted after %s, want the splay 10s-1ns", waited)
		}
		if len(events) != 1 || events[0].Details["change_mode"] != "signal" {
			t.Fatalf("events %+v", events)
		}

		// A restart template and the noop one change together: restart.
		in.Meta["owner"] = "someone"
		in.NodeAttrs["kernel.name"] = "other"
		if a, err := r.Rerender(context.Background(), in, h, emit); err != nil || !a.Restart || len(h.restarts) != 1 {
			t.Fatalf("restart: %+v, %v, handler %+v", a, err, h)
		}
		if !strings.Contains(h.restarts[0], "local/b") || len(h.signals) != 1 {
			t.Fatalf("handler %+v", h)
		}

		// Only the noop template changes: an event, nothing done.
		in.NodeAttrs["kernel.name"] = "third"
		if a, err := r.Rerender(context.Background(), in, h, emit); err != nil || !a.Empty() || len(h.at) != 2 || len(events) != 3 {
			t.Fatalf("noop: %+v, %v, handler %+v, %d events", a, err, h, len(events))
		}

		// A canceled context ends the splay with no action.
		ctx, cancel := context.WithCancel(context.Background())
		in.Env["PORT"] = "2"
		go func() {
			time.Sleep(time.Second)
			cancel()
		}()
		if _, err := r.Rerender(ctx, in, h, nil); !errors.Is(err, context.Canceled) || len(h.at) != 2 {
			t.Fatalf("canceled: %v, handler %+v", err, h)
		}

		// A failing signal is reported.
		h.err = errors.New("no such process")
		in.Env["PORT"] = "3"
		if _, err := r.Rerender(context.Background(), in, h, nil); err == nil || !strings.Contains(err.Error(), "SIGHUP") {
			t.Fatalf("failing handler: %v", err)
		}
	})
}

func TestTemplateEnv(t *testing.T) {
	in := newInput(t,
		&state.Template{DestPath: "secrets/a.env", Envvars: true, EmbeddedTmpl: "# comment\n\nPORT={{ env \"PORT\" }}\nexport NAME=\"a b\"\nQ='x'\nSAME=1\n"},
		&state.Template{DestPath: "secrets/b.env", Envvars: true, EmbeddedTmpl: "SAME=2\nEMPTY=\n"},
		&state.Template{DestPath: "local/not-env", EmbeddedTmpl: "IGNORED=1"},
	)
	if _, err := RenderTemplates(in); err != nil {
		t.Fatal(err)
	}
	env, err := TemplateEnv(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"PORT": "8080", "NAME": "a b", "Q": "x", "SAME": "2", "EMPTY": ""}
	if len(env) != len(want) {
		t.Fatalf("env %v, want %v", env, want)
	}
	for k, v := range want {
		if env[k] != v {
			t.Fatalf("env %v, want %v", env, want)
		}
	}
	bad := newInput(t, &state.Template{DestPath: "local/bad.env", Envvars: true, EmbeddedTmpl: "no equals sign"})
	RenderTemplates(bad)
	if _, err := TemplateEnv(bad); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("malformed env file: %v", err)
	}
}
