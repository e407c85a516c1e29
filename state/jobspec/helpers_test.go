package jobspec

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// readTestdata returns the content of testdata/name.
func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// assertEqual fails with the first differing line of the two values as
// indented JSON, which points straight at the wrong field of a large job.
func assertEqual(t *testing.T, want, got any) {
	t.Helper()
	if reflect.DeepEqual(want, got) {
		return
	}
	w, _ := json.MarshalIndent(want, "", "  ")
	g, _ := json.MarshalIndent(got, "", "  ")
	wl, gl := strings.Split(string(w), "\n"), strings.Split(string(g), "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var a, b string
		if i < len(wl) {
			a = wl[i]
		}
		if i < len(gl) {
			b = gl[i]
		}
		if a != b {
			lo := max(0, i-8)
			t.Fatalf("mismatch at JSON line %d\nwant: %s\ngot:  %s\ncontext (got):\n%s",
				i+1, a, b, strings.Join(gl[lo:min(len(gl), i+3)], "\n"))
		}
	}
	t.Fatalf("values differ but encode alike (nil vs empty?)\nwant: %#v\ngot:  %#v", want, got)
}

// assertInvalid checks that err is an ErrInvalid whose message holds every
// one of wants (positions and names).
func assertInvalid(t *testing.T, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error containing %q, got none", wants)
	}
	if !errors.Is(err, state.ErrInvalid) {
		t.Fatalf("error %v does not match state.ErrInvalid", err)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

// jobWith wraps HCL lines into a job with one group and one task, the
// smallest valid job, so a test can show only the lines it is about.
// jobLines go in the job block, taskLines in the task block.
func jobWith(jobLines, taskLines string) string {
	return "job \"j\" {\n" + jobLines + "\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n" +
		taskLines + "\n    }\n  }\n}\n"
}

// dur is a shorthand for a duration pointer.
func dur(d time.Duration) *time.Duration { return &d }
