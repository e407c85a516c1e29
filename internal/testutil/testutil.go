// Package testutil holds helpers for tests only: waiting for a condition
// with a deadline, a buffer a test can read while a goroutine writes it, a
// settable clock, and JSON request bodies and comparisons. It imports nothing of ours, so any package's tests may use it; no
// non-test code should.
package testutil
