// Package sched is the root of a Raft-replicated workload scheduler and
// workspace-management service. The binary is cmd/sched; README.md is the
// user's guide and ARCHITECTURE.md (in the shared folder) the map of the
// packages. This package holds no code: only the test that keeps the
// packages within the import boundaries that map draws.
package sched
