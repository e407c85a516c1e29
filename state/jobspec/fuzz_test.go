package jobspec

import (
	"os"
	"path/filepath"
	"testing"
)

// addJobFiles seeds f with the job files of testdata/ (the committed
// corpus beside testdata/fuzz/).
func addJobFiles(f *testing.F, suffix string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*"+suffix))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

// FuzzParseHCL2: no job file crashes the parser, nor the checks behind it;
// a parsed job canonicalizes and validates without a panic.
func FuzzParseHCL2(f *testing.F) {
	addJobFiles(f, ".sched.hcl")
	f.Add([]byte(`job "x" { group "g" { task "t" { driver = "raw_exec" config { command = "${NOMAD_META_x}" } } } }`))
	f.Fuzz(func(t *testing.T, src []byte) {
		job, err := Parse(ParseConfig{Body: src})
		if err != nil || job == nil {
			return
		}
		job.Canonicalize()
		_ = job.Validate()
	})
}

// FuzzParseHCL1 is FuzzParseHCL2 for the legacy syntax.
func FuzzParseHCL1(f *testing.F) {
	addJobFiles(f, ".hcl1")
	f.Add([]byte(`job "x" { group "g" { task "t" { driver = "raw_exec" } } }`))
	f.Fuzz(func(t *testing.T, src []byte) {
		job, err := ParseHCL1("", src)
		if err != nil || job == nil {
			return
		}
		job.Canonicalize()
		_ = job.Validate()
	})
}
