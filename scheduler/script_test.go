package scheduler_test

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
)

// A script is a scenario written as data, in the style of etcd's
// data-driven tests: directives, each a command line, a "----" line and
// the output the command must print, ended by a blank line. Lines
// starting with "#" between directives are comments:
//
//	# three nodes, a job of four
//	nodes count=3
//	----
//
//	eval job=web
//	----
//	web: place=4
//	...
//
// A command line is a command word and arguments, "key=value" or a bare
// "key" (value "true"); a value has no spaces. An output never holds a
// blank line.

// directive is one command of a script and the output it must print.
type directive struct {
	line int // of the command, 1-based
	cmd  string
	args []arg
	want string
}

// String is the command line.
func (d *directive) String() string {
	var b strings.Builder
	b.WriteString(d.cmd)
	for _, a := range d.args {
		b.WriteString(" " + a.String())
	}
	return b.String()
}

// arg is one argument of a command line.
type arg struct{ key, val string }

// String is the argument as written.
func (a arg) String() string {
	if a.val == "true" {
		return a.key
	}
	return a.key + "=" + a.val
}

// script is a parsed file: its directives and, to rewrite it, the lines
// between them (comments, blank lines) in order.
type script struct {
	path string
	// parts alternates: text before directive i is parts[i]; the text
	// after the last directive is parts[len(directives)].
	parts      []string
	directives []*directive
}

// parseScript reads a script file.
func parseScript(path string) (*script, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	s := &script{path: path}
	var between []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			between = append(between, l)
			continue
		}
		d := &directive{line: i + 1}
		fields := strings.Fields(l)
		d.cmd = fields[0]
		for _, f := range fields[1:] {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				v = "true"
			}
			d.args = append(d.args, arg{k, v})
		}
		if i+1 >= len(lines) || lines[i+1] != "----" {
			return nil, fmt.Errorf("%s:%d: %q is not followed by ----", path, i+1, l)
		}
		i += 2
		var out []string
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			out = append(out, lines[i])
		}
		i-- // the blank line ending the output belongs to what follows
		d.want = strings.Join(out, "\n")
		s.parts = append(s.parts, strings.Join(between, "\n"))
		s.directives = append(s.directives, d)
		between = nil
	}
	s.parts = append(s.parts, strings.Join(between, "\n"))
	return s, nil
}

// String is the script as a file, with each directive's want as its
// output.
func (s *script) String() string {
	var b strings.Builder
	for i, d := range s.directives {
		if p := s.parts[i]; p != "" || i > 0 {
			b.WriteString(p)
			b.WriteString("\n")
		}
		b.WriteString(d.String())
		b.WriteString("\n----\n")
		if d.want != "" {
			b.WriteString(d.want + "\n")
		}
	}
	b.WriteString(s.parts[len(s.directives)])
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// run runs each directive with do and compares its output; with rewrite
// it records the output instead and writes the file back.
func (s *script) run(t *testing.T, rewrite bool, do func(d *directive) (string, error)) {
	t.Helper()
	for _, d := range s.directives {
		got, err := do(d)
		if err != nil {
			got = "error: " + err.Error()
		}
		got = strings.TrimRight(got, "\n")
		if rewrite {
			d.want = got
			continue
		}
		if got != d.want {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", s.path, d.line, d, indent(got), indent(d.want))
		}
	}
	if rewrite {
		if err := os.WriteFile(s.path, []byte(s.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func indent(s string) string {
	if s == "" {
		return "  (nothing)"
	}
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
