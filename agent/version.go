package agent

import (
	"runtime/debug"
)

// The version and revision of this binary, as `make build` stamps them:
//
//	go build -ldflags "-X github.com/schedhq/sched/agent.version=0.1.0 \
//	  -X github.com/schedhq/sched/agent.revision=1c4c593 \
//	  -X github.com/schedhq/sched/agent.buildDate=2026-01-02T03:04:05Z"
//
// They are variables, set only by the linker, so a build can stamp them
// (the CLI's `sched version` has its own, stamped alike). Unstamped, the
// version is the module's as the Go toolchain recorded it ("(devel)" for
// a plain go build) and the revision the VCS commit it recorded, if any.
var (
	version   = ""
	revision  = ""
	buildDate = ""
)

// buildVersion is what `sched server members` shows as a server's Build
// and /v1/agent/self as config.Version: "VERSION+REVISION" (the first 8
// characters of the revision), either part missing when unknown.
func buildVersion() string {
	v, rev := version, revision
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && rev == "" {
				rev = s.Value
			}
		}
	}
	if v == "" {
		v = "unknown"
	}
	if len(rev) > 8 {
		rev = rev[:8]
	}
	if rev != "" {
		v += "+" + rev
	}
	return v
}

// buildRevision is the full revision this binary was built from, "" when
// unknown.
func buildRevision() string {
	if revision != "" {
		return revision
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}
