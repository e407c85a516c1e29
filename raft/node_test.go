package raft

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
)

func TestConfigDefaultsAndValidation(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
		check   func(t *testing.T, c Config)
	}{
		{name: "missing ID", cfg: Config{DataDir: "d"}, wantErr: true},
		{name: "missing DataDir", cfg: Config{ID: "a"}, wantErr: true},
		{
			name:    "lease longer than heartbeat",
			cfg:     Config{ID: "a", DataDir: "d", HeartbeatTimeout: time.Second, LeaderLeaseTimeout: 2 * time.Second},
			wantErr: true,
		},
		{
			name:    "election shorter than heartbeat",
			cfg:     Config{ID: "a", DataDir: "d", HeartbeatTimeout: time.Second, ElectionTimeout: time.Millisecond * 500},
			wantErr: true,
		},
		{
			name: "defaults",
			cfg:  Config{ID: "a", DataDir: "d"},
			check: func(t *testing.T, c Config) {
				if c.BindAddr != DefaultBindAddr || c.SnapshotThreshold != DefaultSnapshotThreshold ||
					c.SnapshotInterval != DefaultSnapshotInterval || c.TrailingLogs != DefaultTrailingLogs ||
					c.HeartbeatTimeout != DefaultHeartbeatTimeout || c.ElectionTimeout != DefaultHeartbeatTimeout ||
					c.LeaderLeaseTimeout != DefaultHeartbeatTimeout/2 || c.CommitTimeout != DefaultCommitTimeout ||
					c.Logger == nil {
					t.Errorf("defaults not filled: %+v", c)
				}
			},
		},
		{
			name: "timeouts follow heartbeat",
			cfg:  Config{ID: "a", DataDir: "d", HeartbeatTimeout: 200 * time.Millisecond},
			check: func(t *testing.T, c Config) {
				if c.ElectionTimeout != 200*time.Millisecond || c.LeaderLeaseTimeout != 100*time.Millisecond {
					t.Errorf("election %s lease %s, want 200ms and 100ms", c.ElectionTimeout, c.LeaderLeaseTimeout)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.cfg.withDefaults()
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

func TestSingleServerBootstrapElectsItselfFast(t *testing.T) {
	// Production timeouts: without the sole-voter shortcut the first
	// election would take one to two seconds.
	cfg := Config{ID: "dev", DataDir: t.TempDir(), BindAddr: "127.0.0.1:0", Bootstrap: true, Logger: testLogger(t)}
	start := time.Now()
	n := startNode(t, cfg, newKV())
	waitLeader(t, n, 2*time.Second)
	if took := time.Since(start); took > 700*time.Millisecond {
		t.Errorf("single server took %s to lead, want well under 1s", took)
	}

	addr, id := n.Leader()
	if id != "dev" || addr != n.Addr() {
		t.Errorf("Leader() = %q, %q; want %q, %q", addr, id, n.Addr(), "dev")
	}
	if !n.LastContact().After(start) {
		t.Errorf("LastContact on the leader = %v, want about now", n.LastContact())
	}
	servers, err := n.Configuration()
	if err != nil {
		t.Fatal(err)
	}
	want := []Server{{ID: "dev", Address: n.Addr(), Voter: true, Leader: true}}
	if fmt.Sprint(servers) != fmt.Sprint(want) {
		t.Errorf("Configuration() = %+v, want %+v", servers, want)
	}
	if err := n.WaitForLeader(ctxT(t, time.Second)); err != nil {
		t.Errorf("WaitForLeader on a leader: %v", err)
	}
	if s := n.Stats(); s["state"] != "Leader" || s["fsm_applied_index"] == "" {
		t.Errorf("Stats() = %v, want state Leader and fsm_applied_index", s)
	}
}

func TestApplyReturnsIndexResponseAndFSMErrors(t *testing.T) {
	n := startNode(t, testConfig(t, "s1", t.TempDir(), true), newKV())
	waitLeader(t, n, 5*time.Second)

	tests := []struct {
		name     string
		cmd      string
		wantResp any
		wantErr  error
	}{
		{name: "set", cmd: "set a 1", wantResp: "ok a"},
		{name: "overwrite", cmd: "set a 2", wantResp: "ok a"},
		{name: "fsm sentinel error", cmd: "fail because", wantErr: errRejected},
		{name: "set after error", cmd: "set b 3", wantResp: "ok b"},
	}
	var last uint64
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx, resp, err := n.Apply(ctxT(t, 5*time.Second), []byte(tt.cmd))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("err = %v", err)
			}
			if resp != tt.wantResp {
				t.Errorf("resp = %v, want %v", resp, tt.wantResp)
			}
			if idx <= last {
				t.Errorf("index %d not above previous %d", idx, last)
			}
			last = idx
			if got := n.AppliedIndex(); got < idx {
				t.Errorf("AppliedIndex %d below the index just acknowledged %d", got, idx)
			}
		})
	}
	kv := n.fsm.fsm.(*kvFSM)
	if v, _ := kv.get("a"); v != "2" {
		t.Errorf("a = %q, want 2", v)
	}

	ri, err := n.VerifyLeader(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatalf("VerifyLeader: %v", err)
	}
	if ri < last {
		t.Errorf("read index %d below last acknowledged write %d", ri, last)
	}
	if err := n.Barrier(ctxT(t, 5*time.Second)); err != nil {
		t.Errorf("Barrier: %v", err)
	}

	// A context that is already done fails without proposing.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	before := n.LastIndex()
	if _, _, err := n.Apply(done, setCmd("x", "y")); !errors.Is(err, context.Canceled) {
		t.Errorf("Apply with a cancelled context: err = %v, want context.Canceled", err)
	}
	if n.LastIndex() != before {
		t.Errorf("cancelled Apply still appended: last index %d -> %d", before, n.LastIndex())
	}
}

func TestServerWithoutClusterRefusesLeaderWork(t *testing.T) {
	n := startNode(t, testConfig(t, "lonely", t.TempDir(), false), newKV())
	ctx := ctxT(t, 5*time.Second)

	if _, _, err := n.Apply(ctx, setCmd("a", "1")); !errors.Is(err, ErrNotLeader) {
		t.Errorf("Apply: err = %v, want ErrNotLeader", err)
	}
	if _, err := n.VerifyLeader(ctx); !errors.Is(err, ErrNotLeader) {
		t.Errorf("VerifyLeader: err = %v, want ErrNotLeader", err)
	}
	if err := n.Barrier(ctx); !errors.Is(err, ErrNotLeader) {
		t.Errorf("Barrier: err = %v, want ErrNotLeader", err)
	}
	if err := n.AddVoter("x", "127.0.0.1:1"); !errors.Is(err, ErrNotLeader) {
		t.Errorf("AddVoter: err = %v, want ErrNotLeader", err)
	}
	err := n.WaitForLeader(ctxT(t, 100*time.Millisecond))
	if !errors.Is(err, ErrNoLeader) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitForLeader: err = %v, want ErrNoLeader and DeadlineExceeded", err)
	}
	err = n.WaitForApplied(ctxT(t, 50*time.Millisecond), 1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitForApplied: err = %v, want DeadlineExceeded", err)
	}
	if w := len(n.fsm.applied.waiters); w != 0 {
		t.Errorf("%d abandoned waiters left registered", w)
	}
}

func TestShutdownUnblocksWaitersAndIsIdempotent(t *testing.T) {
	n := startNode(t, testConfig(t, "s1", t.TempDir(), true), newKV())
	waitLeader(t, n, 5*time.Second)

	errc := make(chan error, 1)
	go func() { errc <- n.WaitForApplied(context.Background(), 1<<40) }()
	// The waiter registers before it blocks; wait for that so Shutdown
	// is what releases it.
	testutil.WaitFor(t, 5*time.Second, "waiter registered", func() bool {
		n.fsm.applied.mu.Lock()
		defer n.fsm.applied.mu.Unlock()
		return len(n.fsm.applied.waiters) == 1
	})
	if err := n.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-errc; !errors.Is(err, ErrShutdown) {
		t.Errorf("WaitForApplied after Shutdown: err = %v, want ErrShutdown", err)
	}
	if v := <-n.LeaderCh(); v {
		t.Error("LeaderCh did not report losing leadership at Shutdown")
	}
	if err := n.Shutdown(); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	if _, _, err := n.Apply(context.Background(), setCmd("a", "1")); !errors.Is(err, ErrShutdown) {
		t.Errorf("Apply after Shutdown: err = %v, want ErrShutdown", err)
	}
}

func TestRestartKeepsAcknowledgedWritesWithoutRebootstrap(t *testing.T) {
	dir := t.TempDir()
	acked := map[string]uint64{}
	var lastIdx uint64

	// Three lives on one data dir, each with Bootstrap set as dev mode
	// would: the second and third must recover, not start over.
	for life := range 3 {
		kv := newKV()
		n, err := New(testConfig(t, "s1", dir, true), kv)
		if err != nil {
			t.Fatalf("life %d: New: %v", life, err)
		}
		waitLeader(t, n, 5*time.Second)
		if err := n.WaitForApplied(ctxT(t, 5*time.Second), lastIdx); err != nil {
			t.Fatalf("life %d: replay to %d: %v", life, lastIdx, err)
		}
		for k, idx := range acked {
			if v, ok := kv.get(k); !ok || v != strconv.FormatUint(idx, 10) {
				t.Fatalf("life %d: acknowledged write %s lost (got %q, %v)", life, k, v, ok)
			}
		}
		if servers, _ := n.Configuration(); len(servers) != 1 {
			t.Fatalf("life %d: configuration %+v, want one server", life, servers)
		}
		for i := range 20 {
			k := fmt.Sprintf("life%d-%d", life, i)
			// The value is the index of the previous write, so the check
			// above also proves entries were applied in order once each.
			idx := mustApply(t, n, k, strconv.FormatUint(lastIdx, 10))
			if idx <= lastIdx {
				t.Fatalf("life %d: index %d does not follow %d: the log restarted", life, idx, lastIdx)
			}
			acked[k] = lastIdx
			lastIdx = idx
		}
		if err := n.Shutdown(); err != nil {
			t.Fatalf("life %d: Shutdown: %v", life, err)
		}
	}
}

func TestSnapshotThresholdThenRestartFromSnapshotAndTrailingLogs(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, "s1", dir, true)
	cfg.SnapshotThreshold = 32
	cfg.SnapshotInterval = 20 * time.Millisecond
	cfg.TrailingLogs = 8

	n, err := New(cfg, newKV())
	if err != nil {
		t.Fatal(err)
	}
	waitLeader(t, n, 5*time.Second)
	for i := range 100 {
		mustApply(t, n, fmt.Sprintf("k%03d", i), strconv.Itoa(i))
	}
	var snapIdx uint64
	testutil.WaitFor(t, 10*time.Second, "an automatic snapshot", func() bool {
		snapIdx, _ = strconv.ParseUint(n.Stats()["last_snapshot_index"], 10, 64)
		return snapIdx > 0
	})
	testutil.WaitFor(t, 10*time.Second, "log compaction", func() bool {
		first, err := n.store.FirstIndex()
		return err == nil && first > 1
	})
	var last uint64
	for i := 100; i < 105; i++ {
		last = mustApply(t, n, fmt.Sprintf("k%03d", i), strconv.Itoa(i))
	}
	snapIdx, _ = strconv.ParseUint(n.Stats()["last_snapshot_index"], 10, 64)
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}

	kv := newKV()
	n2 := startNode(t, cfg, kv)
	if restores, _ := kv.stats(); restores != 1 {
		t.Fatalf("FSM restored %d times on start, want 1 (from the snapshot)", restores)
	}
	// New restores the snapshot before it returns, so the applied index
	// is set at once (a sole voter may already be replaying the log, so
	// only the lower bound holds).
	if got := n2.AppliedIndex(); got == 0 {
		t.Errorf("applied index right after start = 0: restoring the snapshot at %d did not set it", snapIdx)
	}
	waitLeader(t, n2, 5*time.Second)
	if err := n2.WaitForApplied(ctxT(t, 5*time.Second), last); err != nil {
		t.Fatal(err)
	}
	if got := kv.len(); got != 105 {
		t.Errorf("FSM holds %d keys after restart, want 105", got)
	}
	_, replayed := kv.stats()
	if len(replayed) == 0 {
		t.Fatal("no log entries replayed after the snapshot")
	}
	for _, idx := range replayed {
		if idx <= snapIdx {
			t.Errorf("entry %d replayed although the snapshot at %d covers it", idx, snapIdx)
		}
	}
}

func TestUserSnapshot(t *testing.T) {
	n := startNode(t, testConfig(t, "s1", t.TempDir(), true), newKV())
	waitLeader(t, n, 5*time.Second)
	idx := mustApply(t, n, "a", "1")
	if err := n.Snapshot(); err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	got, _ := strconv.ParseUint(n.Stats()["last_snapshot_index"], 10, 64)
	if got < idx {
		t.Errorf("last_snapshot_index = %d, want >= %d", got, idx)
	}
	if err := n.Snapshot(); err != nil {
		t.Errorf("Snapshot with nothing new: %v, want nil", err)
	}
}

// SnapshotIfBehind snapshots only past its number of entries, and a
// restart after it replays nothing the snapshot covers.
func TestSnapshotIfBehind(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, "s1", dir, true)
	n, err := New(cfg, newKV())
	if err != nil {
		t.Fatal(err)
	}
	waitLeader(t, n, 5*time.Second)
	snapIndex := func() uint64 {
		i, _ := strconv.ParseUint(n.Stats()["last_snapshot_index"], 10, 64)
		return i
	}
	var last uint64
	for i := range 10 {
		last = mustApply(t, n, fmt.Sprintf("k%d", i), "v")
	}
	if err := n.SnapshotIfBehind(100); err != nil || snapIndex() != 0 {
		t.Fatalf("10 entries behind, threshold 100: %v, snapshot at %d", err, snapIndex())
	}
	if st := n.Stats(); st["snapshots_persisted"] != "0" || st["last_persist_bytes"] != "0" {
		t.Fatalf("before any snapshot: persisted %s, last %s bytes", st["snapshots_persisted"], st["last_persist_bytes"])
	}
	if err := n.SnapshotIfBehind(10); err != nil || snapIndex() < last {
		t.Fatalf("10 entries behind, threshold 10: %v, snapshot at %d, want >= %d", err, snapIndex(), last)
	}
	// The persist stats name the one snapshot: its bytes are the header
	// plus the ten keys, at least.
	if st := n.Stats(); st["snapshots_persisted"] != "1" {
		t.Fatalf("snapshots_persisted = %s, want 1", st["snapshots_persisted"])
	} else if b, _ := strconv.Atoi(st["last_persist_bytes"]); b < snapshotHeaderLen+10*len("k0v") {
		t.Fatalf("last_persist_bytes = %d, want at least the header and ten keys", b)
	} else if _, err := strconv.ParseFloat(st["last_persist_seconds"], 64); err != nil {
		t.Fatalf("last_persist_seconds = %q: %v", st["last_persist_seconds"], err)
	}
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	kv := restartApplied(t, cfg, last)
	if restores, replayed := kv.stats(); restores != 1 || len(replayed) != 0 || kv.len() != 10 {
		t.Fatalf("after restart: %d restores, replayed %v, %d keys; want 1, none, 10", restores, replayed, kv.len())
	}
}

func TestConcurrentAppliesAllSucceedAndShareWrites(t *testing.T) {
	kv := newKV()
	n := startNode(t, testConfig(t, "s1", t.TempDir(), true), kv)
	waitLeader(t, n, 5*time.Second)

	const writers, each = 32, 25
	batchesBefore := n.fsm.batches.Load()
	var (
		mu      sync.Mutex
		indexes = map[uint64]bool{}
		wg      sync.WaitGroup
		errs    = make(chan error, writers*each)
	)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				idx, _, err := n.Apply(context.Background(), setCmd(fmt.Sprintf("w%d-%d", w, i), "v"))
				if err != nil {
					errs <- err
					continue
				}
				mu.Lock()
				if indexes[idx] {
					errs <- fmt.Errorf("index %d returned twice", idx)
				}
				indexes[idx] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := kv.len(); got != writers*each {
		t.Errorf("FSM holds %d keys, want %d", got, writers*each)
	}
	// Group commit: 800 proposals from 32 writers must not take 800
	// separate commit rounds.
	if batches := n.fsm.batches.Load() - batchesBefore; batches >= writers*each {
		t.Errorf("%d FSM batches for %d applies: no group commit", batches, writers*each)
	} else {
		t.Logf("%d applies in %d batches", writers*each, batches)
	}
}

func TestReopenWhileOpenFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	startNode(t, testConfig(t, "s1", dir, true), newKV())
	_, err := New(testConfig(t, "s1", dir, true), newKV())
	if err == nil {
		t.Fatal("a second node opened a data dir in use")
	}
}
