package command

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

func TestTopLevelDispatch(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		code       int
		stdoutHas  string
		stderrHas  string
		emptyOut   bool
		emptyError bool
	}{
		{name: "no args", args: nil, code: 1, stderrHas: "Usage: sched <command>", emptyOut: true},
		{name: "help", args: []string{"help"}, code: 0, stdoutHas: "    namespace   Interact with namespaces", emptyError: true},
		{name: "-h", args: []string{"-h"}, code: 0, stdoutHas: "Usage: sched <command>", emptyError: true},
		{name: "unknown", args: []string{"bogus"}, code: 1, stderrHas: `Error: unknown command "bogus"`, emptyOut: true},
		{name: "job alone", args: []string{"job"}, code: 1, stderrHas: "Usage: sched job <command>", emptyOut: true},
		{name: "job help", args: []string{"job", "help"}, code: 0, stdoutHas: "    history      List a job's versions", emptyError: true},
		{name: "job unknown", args: []string{"job", "frob"}, code: 1, stderrHas: `unknown command "frob"`, emptyOut: true},
		{name: "namespace alone", args: []string{"namespace"}, code: 1, stderrHas: "Usage: sched namespace <command>", emptyOut: true},
		{name: "version", args: []string{"version"}, code: 0, stdoutHas: "sched v" + version + "\n", emptyError: true},
		{name: "-version", args: []string{"-version"}, code: 0, stdoutHas: "sched v" + version + "\n", emptyError: true},
		{name: "command -h", args: []string{"job", "status", "-h"}, code: 0, stderrHas: "Usage: sched job status [options] [ID]", emptyOut: true},
		{name: "bad flag", args: []string{"job", "status", "-bogus"}, code: 1, stderrHas: "flag provided but not defined: -bogus", emptyOut: true},
		{name: "too many args", args: []string{"job", "status", "a", "b"}, code: 1, stderrHas: "This command takes 0 to 1 arguments, got 2", emptyOut: true},
		{name: "missing arg", args: []string{"job", "inspect"}, code: 1, stderrHas: "This command takes 1 argument(s), got 0", emptyOut: true},
		{name: "no args wanted", args: []string{"namespace", "list", "x"}, code: 1, stderrHas: "This command takes no arguments", emptyOut: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, nil, runOpts{}, tc.args...)
			if r.code != tc.code {
				t.Errorf("code = %d, want %d", r.code, tc.code)
			}
			if !strings.Contains(r.stdout, tc.stdoutHas) {
				t.Errorf("stdout %q does not contain %q", r.stdout, tc.stdoutHas)
			}
			if !strings.Contains(r.stderr, tc.stderrHas) {
				t.Errorf("stderr %q does not contain %q", r.stderr, tc.stderrHas)
			}
			if tc.emptyOut && r.stdout != "" {
				t.Errorf("stdout = %q, want empty", r.stdout)
			}
			if tc.emptyError && r.stderr != "" {
				t.Errorf("stderr = %q, want empty", r.stderr)
			}
		})
	}
}

func TestAgentGetsItsArguments(t *testing.T) {
	var got []string
	agent := func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		got = args
		io.WriteString(stdout, "agent ran\n")
		return 3
	}
	r := runCLI(t, nil, runOpts{agent: agent}, "agent", "-dev", "-log-level", "debug")
	r.check(t, 3, "agent ran\n", "")
	if want := []string{"-dev", "-log-level", "debug"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("agent args = %q, want %q", got, want)
	}
}

func TestSharedFlagsAndEnvironment(t *testing.T) {
	cases := []struct {
		name      string
		env       map[string]string
		flags     []string
		wantToken string
		wantNS    string
	}{
		{name: "nothing set"},
		{
			name: "environment", env: map[string]string{api.EnvToken: "env-token", api.EnvNamespace: "env-ns"},
			wantToken: "env-token", wantNS: "env-ns",
		},
		{
			name: "flags beat environment", env: map[string]string{api.EnvToken: "env-token", api.EnvNamespace: "env-ns"},
			flags: []string{"-token", "flag-token", "-namespace", "flag-ns"}, wantToken: "flag-token", wantNS: "flag-ns",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.on("GET", "/v1/namespaces", reply(1, []*state.Namespace{}))
			args := append([]string{"namespace", "list"}, tc.flags...)
			runCLI(t, f, runOpts{env: tc.env}, args...).check(t, 0, "No namespaces found\n", "")
			r := f.only("GET /v1/namespaces")
			if got := r.Header.Get(api.HeaderToken); got != tc.wantToken {
				t.Errorf("token = %q, want %q", got, tc.wantToken)
			}
			if got := r.Query.Get("namespace"); got != tc.wantNS {
				t.Errorf("namespace = %q, want %q", got, tc.wantNS)
			}
		})
	}
}

func TestAddressFlag(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/namespaces", reply(1, []*state.Namespace{{Name: "default"}}))
	// The environment points nowhere useful; the flag wins.
	env := map[string]string{api.EnvAddress: "http://127.0.0.1:1"}
	r := runCLI(t, nil, runOpts{env: env}, "namespace", "list", "-address", f.URL)
	r.check(t, 0, lines("Name     Description", "default"), "")

	r = runCLI(t, nil, runOpts{}, "namespace", "list", "-address", "ftp://x")
	r.check(t, 1, "", "Error creating client: api: invalid address \"ftp://x\": scheme must be http or https\n")
}

func TestServerUnreachable(t *testing.T) {
	f := newFakeAPI(t)
	url := f.URL
	f.Close()
	r := runCLI(t, nil, runOpts{env: map[string]string{api.EnvAddress: url}}, "job", "status")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "Error querying jobs: api: GET /v1/jobs: ") {
		t.Fatalf("got %+v", r)
	}
}

func TestServerErrorsAreReported(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/jobs", fail(http.StatusForbidden, "Permission denied"))
	runCLI(t, f, runOpts{}, "job", "status").check(t, 1, "", "Error querying jobs: Unexpected response code: 403 (Permission denied)\n")
}

func TestHelpDoesNotPrintTheToken(t *testing.T) {
	r := runCLI(t, nil, runOpts{env: map[string]string{api.EnvToken: "s3cret-value"}}, "job", "status", "-h")
	if r.code != 0 || strings.Contains(r.stderr, "s3cret-value") || !strings.Contains(r.stderr, "-token string") {
		t.Fatalf("got %+v", r)
	}
}

// `sched help job` lists the job subcommands; `sched help` the commands.
func TestHelpCommand(t *testing.T) {
	r := runCLI(t, nil, runOpts{}, "help", "job")
	if r.code != 0 || !strings.Contains(r.stdout, "Usage: sched job <command>") || !strings.Contains(r.stdout, "    history") {
		t.Errorf("help job: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, nil, runOpts{}, "help")
	if r.code != 0 || !strings.Contains(r.stdout, "    event") || !strings.Contains(r.stdout, "    monitor") {
		t.Errorf("help: %d\n%s", r.code, r.stdout)
	}
}
