package command

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version and buildDate describe this binary. They are variables, the one
// piece of package state here, only so a build can stamp them:
//
//	go build -ldflags "-X github.com/schedhq/sched/cmd/sched/command.version=1.2.3 \
//	  -X github.com/schedhq/sched/cmd/sched/command.buildDate=2026-01-02T03:04:05Z"
//
// `make build` stamps buildDate. Without it the commit's time (recorded
// by the Go toolchain) is shown instead.
var (
	version   = "0.1.0-dev"
	buildDate = ""
	// revision is the commit, when the build stamps it (make build does);
	// otherwise what the Go toolchain recorded, if anything.
	revision = ""
)

func (c *cli) printVersion(args []string) int {
	fmt.Fprintf(c.stdout, "sched v%s\n", version)
	info := vcsInfo()
	if revision != "" {
		info.revision = revision
	}
	if info.revision != "" {
		fmt.Fprintf(c.stdout, "Revision %s\n", info.revision)
	}
	switch {
	case buildDate != "":
		fmt.Fprintf(c.stdout, "Build Date %s\n", buildDate)
	case info.time != "":
		fmt.Fprintf(c.stdout, "Commit Date %s\n", info.time)
	}
	fmt.Fprintf(c.stdout, "Go %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}

// buildVCS is what the Go toolchain recorded of the commit the binary was
// built from.
type buildVCS struct {
	revision, time string
}

func vcsInfo() buildVCS {
	var out buildVCS
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return out
	}
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			out.revision = s.Value
		case "vcs.time":
			out.time = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if out.revision != "" && dirty {
		out.revision += "+dirty"
	}
	return out
}
