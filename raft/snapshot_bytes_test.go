package raft

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSnapshotOnBytes: the applied entries' bytes trigger a snapshot once
// they reach the limit, not before; a snapshot taken otherwise restarts
// the count; and a restart after it restores the snapshot instead of
// replaying those entries.
func TestSnapshotOnBytes(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, "s1", dir, true)
	cfg.SnapshotBytes = -1 // no background loop: the test drives the check
	cfg.SnapshotThreshold = 1 << 30
	n, err := New(cfg, newKV())
	if err != nil {
		t.Fatal(err)
	}
	waitLeader(t, n, 5*time.Second)
	value := strings.Repeat("v", 1000)
	const limit = 10_000
	tr := n.newBytesTrigger()
	var last uint64
	for i := range 5 { // ~5 kB: under the limit
		last = mustApply(t, n, fmt.Sprintf("k%d", i), value)
	}
	if took, err := n.checkSnapshotBytes(&tr, limit); took || err != nil || n.lastSnapshotIndex() != 0 {
		t.Fatalf("~5 kB applied, limit 10 kB: took %v (%v), snapshot at %d", took, err, n.lastSnapshotIndex())
	}
	for i := 5; i < 12; i++ { // ~12 kB in all
		last = mustApply(t, n, fmt.Sprintf("k%d", i), value)
	}
	if took, err := n.checkSnapshotBytes(&tr, limit); !took || err != nil || n.lastSnapshotIndex() < last {
		t.Fatalf("~12 kB applied, limit 10 kB: took %v (%v), snapshot at %d, want >= %d", took, err, n.lastSnapshotIndex(), last)
	}
	// The count starts again from the snapshot.
	mustApply(t, n, "after", value)
	if took, err := n.checkSnapshotBytes(&tr, limit); took || err != nil {
		t.Fatalf("1 kB after the snapshot: took %v (%v)", took, err)
	}
	// A snapshot taken otherwise restarts the count too.
	for i := range 12 {
		last = mustApply(t, n, fmt.Sprintf("m%d", i), value)
	}
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if took, err := n.checkSnapshotBytes(&tr, limit); took || err != nil || tr.lastIndex < last {
		t.Fatalf("after a snapshot of its own: took %v (%v), count from %d, want >= %d", took, err, tr.lastIndex, last)
	}
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	kv := restartApplied(t, cfg, last)
	if restores, replayed := kv.stats(); restores != 1 || len(replayed) != 0 {
		t.Fatalf("after restart: %d restores, replayed %v; want 1 and none", restores, replayed)
	}
}

// TestUnfinishedSnapshotRemovedAtStart: a snapshot folder a crash left
// unfinished (".tmp") is removed when the node starts; complete
// snapshots stay and are restored.
func TestUnfinishedSnapshotRemovedAtStart(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, "s1", dir, true)
	cfg.SnapshotBytes = -1
	n, err := New(cfg, newKV())
	if err != nil {
		t.Fatal(err)
	}
	waitLeader(t, n, 5*time.Second)
	last := mustApply(t, n, "k", "v")
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	snaps := filepath.Join(dir, "server", "raft", "snapshots")
	tmp := filepath.Join(snaps, "2-99-1700000000000.tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "state.bin"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	kv := restartApplied(t, cfg, last)
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("the unfinished snapshot is still there: %v", err)
	}
	entries, err := os.ReadDir(snaps)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("snapshot store holds %d entries, want the one complete snapshot", len(entries))
	}
	if restores, _ := kv.stats(); restores != 1 {
		t.Fatalf("%d restores after restart, want 1", restores)
	}
}

// TestSnapshotLimitGrowsWithTheState: the byte trigger is the newest
// snapshot's size times snapshotLogRatio, within its bounds; the least
// without a snapshot.
func TestSnapshotLimitGrowsWithTheState(t *testing.T) {
	n := startTestDrivenSnapshots(t)
	if got := n.snapshotLimit(1000, 1<<30); got != 1000 {
		t.Fatalf("no snapshot yet: limit %d, want the least (1000)", got)
	}
	value := strings.Repeat("v", 1000)
	for i := range 50 { // a state of ~50 kB
		mustApply(t, n, fmt.Sprintf("k%d", i), value)
	}
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	metas, err := n.snaps.List()
	if err != nil || len(metas) == 0 || metas[0].Size < 50_000 {
		t.Fatalf("snapshot metas %v (%v): want one of at least 50 kB", metas, err)
	}
	size := metas[0].Size
	for _, c := range []struct{ least, most, want int64 }{
		{1000, 1 << 30, snapshotLogRatio * size}, // the snapshot's size, times the ratio
		{1000, 20_000, 20_000},                   // capped
		{1 << 20, 1 << 30, 1 << 20},
		{1 << 20, 1000, 1 << 20}, // a fixed trigger
	} {
		if got := n.snapshotLimit(c.least, c.most); got != c.want {
			t.Errorf("limit within [%d, %d] = %d, want %d (snapshot of %d bytes)", c.least, c.most, got, c.want, size)
		}
	}
}

// TestSnapshotWaitsForTheBurst: while entries are applied at the busy rate
// or more, the byte trigger is the cap; once the rate falls under it, the
// trigger is the usual one again. A negative rate never waits.
func TestSnapshotWaitsForTheBurst(t *testing.T) {
	start := time.Unix(1000, 0)
	m := busyMeter{bytes: 0, at: start}
	const rate = 1 << 20
	if !m.busy(3<<20, start.Add(2*time.Second), rate) {
		t.Fatal("3 MiB in 2 s at a busy rate of 1 MiB/s: not busy")
	}
	if m.busy(3<<20+1<<20, start.Add(4*time.Second), rate) {
		t.Fatal("1 MiB in the next 2 s: still busy")
	}
	if m.busy(10<<20, start.Add(6*time.Second), -1) {
		t.Fatal("a negative rate made a burst")
	}
	if m.busy(20<<20, start.Add(6*time.Second), rate) {
		t.Fatal("no time passed: busy")
	}
	const limit, most = 10_000, 30_000
	if got := burstLimit(limit, most, false); got != limit {
		t.Fatalf("quiet: limit %d, want %d", got, limit)
	}
	if got := burstLimit(limit, most, true); got != most {
		t.Fatalf("busy: limit %d, want the cap %d", got, most)
	}
	if got := burstLimit(most, limit, true); got != most {
		t.Fatalf("busy, cap under the trigger: limit %d, want %d", got, most)
	}

	// Through the check: ~12 kB waits during a burst, is taken after it,
	// and past the cap a burst waits no more.
	n := startTestDrivenSnapshots(t)
	value := strings.Repeat("v", 1000)
	tr := n.newBytesTrigger()
	for i := range 12 {
		mustApply(t, n, fmt.Sprintf("k%d", i), value)
	}
	if took, err := n.checkSnapshotBytes(&tr, burstLimit(limit, most, true)); took || err != nil {
		t.Fatalf("~12 kB during a burst, cap 30 kB: took %v (%v)", took, err)
	}
	if took, err := n.checkSnapshotBytes(&tr, burstLimit(limit, most, false)); !took || err != nil {
		t.Fatalf("~12 kB after the burst, limit 10 kB: took %v (%v)", took, err)
	}
	var last uint64
	for i := range 31 {
		last = mustApply(t, n, fmt.Sprintf("m%d", i), value)
	}
	if took, err := n.checkSnapshotBytes(&tr, burstLimit(limit, most, true)); !took || err != nil || n.lastSnapshotIndex() < last {
		t.Fatalf("~31 kB during a burst, cap 30 kB: took %v (%v), snapshot at %d, want >= %d", took, err, n.lastSnapshotIndex(), last)
	}
}

// TestSnapshotSoonAfterTheBurst: the first quiet check after a burst
// snapshots at the floor, not at the trigger grown with the state, so a
// crash after a large placement replays little; a quiet check with no
// burst before it keeps the trigger.
func TestSnapshotSoonAfterTheBurst(t *testing.T) {
	const least, limit = 10_000, 30_000
	if got := settledLimit(limit, least, true); got != least {
		t.Fatalf("settled: limit %d, want the floor %d", got, least)
	}
	if got := settledLimit(limit, least, false); got != limit {
		t.Fatalf("not after a burst: limit %d, want %d", got, limit)
	}
	if got := settledLimit(limit, -1, true); got != limit {
		t.Fatalf("byte trigger off: limit %d, want %d", got, limit)
	}
	if got := settledLimit(least/2, least, true); got != least/2 {
		t.Fatalf("trigger under the floor: limit %d, want %d", got, least/2)
	}

	n := startTestDrivenSnapshots(t)
	value := strings.Repeat("v", 1000)
	tr := n.newBytesTrigger()
	for i := range 12 {
		mustApply(t, n, fmt.Sprintf("k%d", i), value)
	}
	if took, err := n.checkSnapshotBytes(&tr, settledLimit(limit, least, false)); took || err != nil {
		t.Fatalf("~12 kB, trigger 30 kB, no burst: took %v (%v)", took, err)
	}
	if took, err := n.checkSnapshotBytes(&tr, settledLimit(limit, least, true)); !took || err != nil {
		t.Fatalf("~12 kB after a burst, floor 10 kB: took %v (%v)", took, err)
	}
}

// TestSnapshotCountsFromItsEnd: what is applied while a snapshot is
// written counts for the next one, from when the snapshot was written,
// not from when it began: a trigger reached during the snapshot waits.
func TestSnapshotCountsFromItsEnd(t *testing.T) {
	kv := newKV()
	n := startTestDrivenSnapshotsOf(t, kv)
	value := strings.Repeat("v", 1000)
	const limit = 10_000
	tr := n.newBytesTrigger()
	for i := range 12 {
		mustApply(t, n, fmt.Sprintf("k%d", i), value)
	}
	kv.mu.Lock()
	kv.persisting, kv.persistGate = make(chan struct{}), make(chan struct{})
	kv.mu.Unlock()
	type result struct {
		took bool
		err  error
	}
	done := make(chan result, 1)
	go func() {
		took, err := n.checkSnapshotBytes(&tr, limit)
		done <- result{took, err}
	}()
	select {
	case <-kv.persisting:
	case r := <-done:
		t.Fatalf("~12 kB, limit 10 kB: no snapshot written (took %v, %v)", r.took, r.err)
	case <-time.After(10 * time.Second):
		t.Fatal("the snapshot was not persisted within 10 s")
	}
	var last uint64
	for i := range 12 { // ~12 kB while the snapshot is written: past the limit
		last = mustApply(t, n, fmt.Sprintf("during%d", i), value)
	}
	kv.mu.Lock()
	close(kv.persistGate)
	kv.persisting, kv.persistGate = nil, nil // the next snapshots are not held
	kv.mu.Unlock()
	if r := <-done; !r.took || r.err != nil {
		t.Fatalf("~12 kB, limit 10 kB: took %v (%v)", r.took, r.err)
	}
	if took, err := n.checkSnapshotBytes(&tr, limit); took || err != nil {
		t.Fatalf("~12 kB applied while the last snapshot was written, none since: took %v (%v)", took, err)
	}
	for i := range 11 {
		last = mustApply(t, n, fmt.Sprintf("after%d", i), value)
	}
	if took, err := n.checkSnapshotBytes(&tr, limit); !took || err != nil || n.lastSnapshotIndex() < last {
		t.Fatalf("~11 kB since the last snapshot was written: took %v (%v), snapshot at %d, want >= %d", took, err, n.lastSnapshotIndex(), last)
	}
}

// TestBurstEndsAfterQuietChecks: a burst's trigger stays in force
// through settleChecks-1 quiet checks, and the settled trigger applies
// from the settleChecks-th until a snapshot is taken; a busy check in
// between starts the count again.
func TestBurstEndsAfterQuietChecks(t *testing.T) {
	type want struct{ inBurst, settled bool }
	var b burstTracker
	step := func(what string, busy bool, w want) {
		t.Helper()
		if in, settled := b.observe(busy); in != w.inBurst || settled != w.settled {
			t.Fatalf("%s: in burst %v, settled %v; want %v, %v", what, in, settled, w.inBurst, w.settled)
		}
	}
	quiet, busy := false, true
	step("quiet, no burst before", quiet, want{})
	step("busy", busy, want{inBurst: true})
	for i := 1; i < settleChecks; i++ {
		step(fmt.Sprintf("quiet check %d after the burst", i), quiet, want{inBurst: true})
	}
	step("busy again", busy, want{inBurst: true})
	for i := 1; i < settleChecks; i++ {
		step(fmt.Sprintf("quiet check %d after the second burst", i), quiet, want{inBurst: true})
	}
	step("settled", quiet, want{settled: true})
	step("settled, no snapshot yet", quiet, want{settled: true})
	b.snapshotTaken()
	step("after the settled snapshot", quiet, want{})
	step("busy", busy, want{inBurst: true})
	b.snapshotTaken() // at the burst's trigger
	step("busy after a snapshot in the burst", busy, want{inBurst: true})
}

// startTestDrivenSnapshots starts a single-server node, the leader, that
// takes no snapshot on its own (no byte trigger loop, an entry threshold
// out of reach): the test drives the checks. It is shut down at cleanup.
func startTestDrivenSnapshots(t *testing.T) *Node {
	t.Helper()
	return startTestDrivenSnapshotsOf(t, newKV())
}

// startTestDrivenSnapshotsOf is startTestDrivenSnapshots with kv as the
// state machine.
func startTestDrivenSnapshotsOf(t *testing.T, kv *kvFSM) *Node {
	t.Helper()
	cfg := testConfig(t, "s1", t.TempDir(), true)
	cfg.SnapshotBytes = -1
	cfg.SnapshotThreshold = 1 << 30
	n, err := New(cfg, kv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Shutdown() })
	waitLeader(t, n, 5*time.Second)
	return n
}
