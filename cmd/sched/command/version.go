package command

import (
	"fmt"
	"runtime/debug"
)

// version is the release this binary is. It is a variable, the one piece
// of package state here, only so a release build can stamp it with
// -ldflags "-X main.version=1.2.3".
var version = "0.1.0-dev"

func (c *cli) versionCommand(args []string) int {
	fmt.Fprintf(c.stdout, "sched v%s\n", version)
	if rev := vcsRevision(); rev != "" {
		fmt.Fprintf(c.stdout, "Revision %s\n", rev)
	}
	return 0
}

// vcsRevision is the commit the binary was built from, when the Go
// toolchain recorded it.
func vcsRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" && dirty {
		rev += "+dirty"
	}
	return rev
}
