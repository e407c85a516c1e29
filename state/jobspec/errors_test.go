package jobspec

import (
	"errors"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

// TestParseErrors checks that each kind of mistake is reported with its
// position (file:line:col) and the name at fault, as an ErrInvalid.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{name: "unknown job attribute", src: jobWith("  colour = \"red\"", ""),
			want: []string{"job.hcl:2:3", "Unsupported argument", `"colour"`}},
		{name: "unknown task block", src: jobWith("", "      vault {\n      }"),
			want: []string{"job.hcl:6:7", "Unsupported block type", `"vault"`}},
		{name: "unknown attribute deep in a check", src: jobWith("", `      service {
        check {
          intervall = "10s"
        }
      }`), want: []string{"job.hcl:8:11", `"intervall"`}},
		{name: "bad duration", src: jobWith("", `      kill_timeout = "ten seconds"`),
			want: []string{"job.hcl:6:22", "Invalid duration", `"ten seconds"`, `"kill_timeout"`}},
		{name: "duration without unit", src: jobWith("", `      kill_timeout = 30`),
			want: []string{"job.hcl:6:22", "Invalid duration", `"30"`}},
		{name: "fractional count", src: "job \"j\" {\n  group \"g\" {\n    count = 1.5\n  }\n}",
			want: []string{"job.hcl:3:13", `"count" must be a whole number`}},
		{name: "weight out of range", src: jobWith("  affinity {\n    weight = 300\n  }", ""),
			want: []string{"job.hcl:3:14", `out of range for "weight"`}},
		{name: "string for a number", src: jobWith(`  priority = "high"`, ""),
			want: []string{"job.hcl:2:14", `"priority" must be number`}},
		{name: "list for a string", src: jobWith(`  region = ["a"]`, ""),
			want: []string{"job.hcl:2:12", `"region" must be string`}},
		{name: "duplicate single block", src: jobWith("  update {}\n  update {}", ""),
			want: []string{"job.hcl:3:3", `only one "update" block`}},
		{name: "meta as block and attribute", src: jobWith("  meta { a = 1 }\n  meta = { b = 2 }", ""),
			want: []string{"job.hcl:2:3", `"meta" is set both as a block`}},
		{name: "missing group label", src: "job \"j\" {\n  group {\n  }\n}",
			want: []string{"job.hcl:2:9", "Missing name for group"}},
		{name: "conflicting constraint operator", src: jobWith("  constraint {\n    operator = \"=\"\n    regexp = \"a\"\n  }", ""),
			want: []string{"job.hcl:4:5", `"operator" and "regexp" both set the operator`}},
		{name: "shorthand with value", src: jobWith("  constraint {\n    version = \">1\"\n    value = \"2\"\n  }", ""),
			want: []string{"job.hcl:4:5", `"version" already carries the value`}},
		{name: "no job block", src: `variable "x" { default = 1 }`,
			want: []string{"job.hcl:1:", "Missing job block"}},
		{name: "two job blocks", src: jobWith("", "") + "job \"k\" {}\n",
			want: []string{"job.hcl:10:1", "Duplicate job block"}},
		{name: "syntax error", src: "job \"j\" {\n  name = \n}",
			want: []string{"job.hcl:2:"}},
		{name: "unknown top-level block", src: "jobs \"j\" {}",
			want: []string{"job.hcl:1:1", `"jobs"`}},
		{name: "null in a list", src: jobWith("  datacenters = [\"a\", null]", ""),
			want: []string{"job.hcl:2:17", "null"}},
		{name: "header of wrong type", src: jobWith("", "      service {\n        check {\n          header { X = { a = 1 } }\n        }\n      }"),
			want: []string{"job.hcl:8:24", `header "X" must be a string or a list of strings`}},
		{name: "duplicate volume", src: "job \"j\" {\n  group \"g\" {\n    volume \"v\" {}\n    volume \"v\" {}\n  }\n}",
			want: []string{"job.hcl:4:5", `volume "v" is declared twice`}},
		{name: "config attribute and block", src: jobWith("", "      config {\n        mount = 1\n        mount {}\n      }"),
			want: []string{"job.hcl:8:9", `"mount" is set both`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(ParseConfig{Body: []byte(tt.src)})
			assertInvalid(t, err, tt.want...)
		})
	}
}

// TestParseErrorsAll checks that one parse reports every problem, in
// reading order, each with its own position.
func TestParseErrorsAll(t *testing.T) {
	src := jobWith("  prority = 5", "      kill_timeout = \"soon\"\n      drivr = \"x\"")
	_, err := Parse(ParseConfig{Filename: "two.sched.hcl", Body: []byte(src)})
	var v *state.ValidationError
	if !errors.As(err, &v) {
		t.Fatalf("want a *state.ValidationError, got %T %v", err, err)
	}
	var fields []string
	for _, e := range v.Errors {
		fields = append(fields, e.Field)
	}
	want := "two.sched.hcl:2:3 two.sched.hcl:6:22 two.sched.hcl:7:7"
	if got := strings.Join(fields, " "); got != want {
		t.Errorf("error positions %q, want %q (%v)", got, want, err)
	}
}

// TestHCL1Errors checks the legacy parser's errors: positions for syntax
// and schema mistakes alike.
func TestHCL1Errors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{name: "syntax", src: "job \"j\" {\n  name = \n}", want: []string{"old.hcl:3:", "RBRACE"}},
		{name: "unknown attribute", src: jobWith("  colour = \"red\"", ""),
			want: []string{"old.hcl:2:3", `"colour"`}},
		{name: "unknown block", src: jobWith("", "      vault {\n      }"),
			want: []string{"old.hcl:6:7", `"vault"`}},
		{name: "block given a value", src: jobWith("  update = \"fast\"", ""),
			want: []string{"old.hcl:2:3", `"update" must be a block`}},
		{name: "bad duration", src: jobWith("", `      kill_timeout = "ten seconds"`),
			want: []string{"old.hcl:6:22", "Invalid duration"}},
		{name: "wrong labels", src: "job \"j\" {\n  group \"g\" \"h\" {\n  }\n}",
			want: []string{"old.hcl:2:3", "group blocks take 1 label(s), not 2"}},
		{name: "duplicate attribute", src: jobWith("  region = \"a\"\n  region = \"b\"", ""),
			want: []string{"old.hcl:3:3", `"region" was already set`}},
		{name: "no job", src: `foo = 1`, want: []string{"old.hcl:1:1", `"foo"`}},
		{name: "number overflow", src: "job \"j\" {\n  group \"g\" {\n    count = 99999999999999999999\n  }\n}",
			want: []string{"old.hcl:3:13", "invalid number"}},
		{name: "meta block with a block", src: jobWith("  meta {\n    a {\n    }\n  }", ""),
			want: []string{"old.hcl:3:5", "blocks are not allowed here"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseHCL1("old.hcl", []byte(tt.src))
			assertInvalid(t, err, tt.want...)
		})
	}
}

// TestGroupCount checks Nomad's count rule, the one default the parser
// fills: absent is 1 or the scaling minimum; explicit values are kept.
func TestGroupCount(t *testing.T) {
	tests := []struct {
		name  string
		group string
		want  int
	}{
		{name: "absent", group: "", want: 1},
		{name: "explicit zero", group: "count = 0", want: 0},
		{name: "explicit", group: "count = 4", want: 4},
		{name: "scaling min", group: "scaling {\n min = 3\n max = 9\n}", want: 3},
		{name: "count beats scaling min", group: "count = 5\nscaling {\n min = 3\n max = 9\n}", want: 5},
		{name: "scaling without min", group: "scaling {\n max = 9\n}", want: 1},
		{name: "null count", group: "count = null", want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "job \"j\" {\n  group \"g\" {\n" + tt.group + "\n  }\n}\n"
			job, err := Parse(ParseConfig{Body: []byte(src)})
			if err != nil {
				t.Fatal(err)
			}
			if got := job.TaskGroups[0].Count; got != tt.want {
				t.Errorf("HCL2 count = %d, want %d", got, tt.want)
			}
			if tt.name == "null count" {
				return // HCL1 has no null
			}
			job, err = ParseHCL1("j.hcl", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if got := job.TaskGroups[0].Count; got != tt.want {
				t.Errorf("HCL1 count = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestEnabledDefaults checks the other parse-time rule: a periodic or
// scaling block is enabled unless it says otherwise.
func TestEnabledDefaults(t *testing.T) {
	tests := []struct {
		name     string
		lines    string
		periodic bool
		scaling  bool
	}{
		{name: "absent means on", lines: "periodic {\n cron = \"@daily\"\n}", periodic: true, scaling: true},
		{name: "explicit off", lines: "periodic {\n cron = \"@daily\"\n enabled = false\n}", periodic: false, scaling: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scaling := "scaling {\n max = 2\n}"
			if !tt.scaling {
				scaling = "scaling {\n max = 2\n enabled = false\n}"
			}
			src := "job \"j\" {\n" + tt.lines + "\n group \"g\" {\n" + scaling + "\n }\n}"
			job, err := Parse(ParseConfig{Body: []byte(src)})
			if err != nil {
				t.Fatal(err)
			}
			if job.Periodic.Enabled != tt.periodic || job.Periodic.Spec != "@daily" || job.Periodic.SpecType != state.PeriodicSpecCron {
				t.Errorf("periodic = %+v, want enabled %v", job.Periodic, tt.periodic)
			}
			if job.TaskGroups[0].Scaling.Enabled != tt.scaling {
				t.Errorf("scaling enabled = %v, want %v", job.TaskGroups[0].Scaling.Enabled, tt.scaling)
			}
		})
	}
}

// TestCheckHeaderForms checks both ways of writing check headers, a
// block or a map attribute, in both syntaxes.
func TestCheckHeaderForms(t *testing.T) {
	want := map[string][]string{"A": {"x"}, "B": {"y", "z"}}
	forms := map[string]string{
		"block":     "header {\n  A = \"x\"\n  B = [\"y\", \"z\"]\n}",
		"attribute": "header = {\n  A = \"x\"\n  B = [\"y\", \"z\"]\n}",
	}
	for name, form := range forms {
		src := jobWith("", "service {\n check {\n"+form+"\n }\n}")
		for syntax, parse := range map[string]func([]byte) (*state.Job, error){
			"hcl2": func(b []byte) (*state.Job, error) { return Parse(ParseConfig{Body: b}) },
			"hcl1": func(b []byte) (*state.Job, error) { return ParseHCL1("h.hcl", b) },
		} {
			t.Run(name+"/"+syntax, func(t *testing.T) {
				job, err := parse([]byte(src))
				if err != nil {
					t.Fatal(err)
				}
				assertEqual(t, want, job.TaskGroups[0].Tasks[0].Services[0].Checks[0].Header)
			})
		}
	}
}
