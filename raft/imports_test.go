package raft

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNothingOfSched guards ARCHITECTURE.md: raft replicates opaque
// bytes and must not depend on any other sched package. Its tests may use
// the shared test helpers, which import nothing of sched either.
func TestImportsNothingOfSched(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Go files found")
	}
	fset := token.NewFileSet()
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasSuffix(name, "_test.go") && path == "github.com/schedhq/sched/internal/testutil" {
				continue
			}
			if strings.HasPrefix(path, "github.com/schedhq/sched") {
				t.Errorf("%s imports %s; package raft may import nothing of sched", name, path)
			}
		}
	}
}
