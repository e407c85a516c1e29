// Package schedtest is the scheduler's test harness, shared by the tests
// of scheduler and scheduler/leader: a Log applies real store commands
// (encoded as Raft log entries) at consecutive indexes without Raft, a
// Harness runs schedulers against it as their Planner and records every
// plan and evaluation, and IDs makes sequential IDs. The harness's clock
// is fixed and advanced by tests, so a run is reproducible.
//
// The scheduler's scenario scripts (scheduler/testdata/scenarios, see
// scheduler/testdata/README.md) run on a Harness.
package schedtest

// TestingT is the part of *testing.T the harness uses, so the package
// does not import package testing.
type TestingT interface {
	Helper()
	Fatalf(format string, args ...any)
}
