package raft

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
)

// decodeKV is a verify function for kvFSM snapshots.
func decodeKV(r io.Reader) error {
	var m map[string]string
	return json.NewDecoder(r).Decode(&m)
}

func TestSnapshotSaveAndRestoreAcrossTheCluster(t *testing.T) {
	c := newTestCluster(t)
	leader := c.nodes[0]
	for i := range 5 {
		mustApply(t, leader, fmt.Sprintf("k%d", i), "saved")
	}
	var archive bytes.Buffer
	info, err := leader.SaveSnapshot(&archive)
	if err != nil {
		t.Fatalf("SaveSnapshot: %v", err)
	}
	if info.Index == 0 || info.Size == 0 || len(info.Servers) != 3 {
		t.Errorf("snapshot info %+v: want an index, a size and the 3 servers", info)
	}

	// Later writes: changed values and a new key, all undone by restore.
	mustApply(t, leader, "k0", "changed")
	mustApply(t, leader, "late", "x")

	// A follower may not restore: restores go through the leader.
	if _, err := c.nodes[1].RestoreSnapshot(ctxT(t, 5*time.Second), bytes.NewReader(archive.Bytes()), decodeKV); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("restore on a follower: %v, want ErrNotLeader", err)
	}
	before := leader.AppliedIndex()
	if _, err := leader.RestoreSnapshot(ctxT(t, 10*time.Second), bytes.NewReader(archive.Bytes()), decodeKV); err != nil {
		t.Fatalf("RestoreSnapshot: %v", err)
	}
	if got := leader.AppliedIndex(); got < before {
		t.Errorf("applied index went back from %d to %d", before, got)
	}
	// Right after the restore is acknowledged, a consistent read on any
	// server shows the saved state, not the one the restore replaced:
	// the read index is past every index handed out before the restore.
	ri, err := leader.VerifyLeader(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("VerifyLeader: %v", err)
	}
	if ri <= before {
		t.Errorf("read index %d after the restore is not past %d, the applied index before it", ri, before)
	}
	for i, n := range c.nodes {
		if err := n.WaitForApplied(ctxT(t, 10*time.Second), ri); err != nil {
			t.Fatalf("%s: %v", n.ID(), err)
		}
		if v, _ := c.fsms[i].get("k0"); v != "saved" {
			t.Errorf("%s: consistent read after the restore shows k0 = %q, want saved", n.ID(), v)
		}
	}
	// A write after the restore reaches everyone; then every server holds
	// exactly the saved state plus that write.
	last := mustApply(t, leader, "after", "restore")
	for i, n := range c.nodes {
		if err := n.WaitForApplied(ctxT(t, 10*time.Second), last); err != nil {
			t.Fatalf("%s: %v", n.ID(), err)
		}
		kv := c.fsms[i]
		if v, _ := kv.get("k0"); v != "saved" {
			t.Errorf("%s: k0 = %q after restore, want saved", n.ID(), v)
		}
		if _, ok := kv.get("late"); ok {
			t.Errorf("%s: a write made after the save survived the restore", n.ID())
		}
		if kv.len() != 6 {
			t.Errorf("%s: %d keys, want 6", n.ID(), kv.len())
		}
	}
}

func TestSnapshotRestoreRefusesDamagedArchives(t *testing.T) {
	n := startNode(t, testConfig(t, "s1", t.TempDir(), true), newKV())
	waitLeader(t, n, 5*time.Second)
	mustApply(t, n, "a", "1")
	var archive bytes.Buffer
	if _, err := n.SaveSnapshot(&archive); err != nil {
		t.Fatal(err)
	}
	mustApply(t, n, "a", "2")

	// Rebuild the archive with one byte of the data changed (the gzip
	// layer would catch a flipped compressed byte first; the checksum
	// must catch a consistent rewrite too).
	raw := gunzip(t, archive.Bytes())
	corrupt := bytes.Clone(raw)
	corrupt[len(corrupt)-40] ^= 0xff

	cases := []struct {
		name    string
		archive []byte
		verify  func(io.Reader) error
		want    string
	}{
		{"not gzip", []byte("hello"), nil, "not a gzip stream"},
		{"not ours", gz(t, []byte("some other archive format")), nil, "not a sched snapshot archive"},
		{"truncated", gz(t, raw[:len(raw)-50]), nil, "truncated"},
		{"checksum", gz(t, corrupt), nil, "checksum mismatch"},
		{"trailing data", gz(t, append(bytes.Clone(raw), 'x')), nil, "unexpected data after the checksum"},
		{"state machine refuses", archive.Bytes(), func(io.Reader) error { return errors.New("unknown table") }, "unknown table"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := n.RestoreSnapshot(ctxT(t, 5*time.Second), bytes.NewReader(tc.archive), tc.verify)
			if !errors.Is(err, ErrBadSnapshot) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrBadSnapshot mentioning %q", err, tc.want)
			}
		})
	}
	idx := mustApply(t, n, "b", "1")
	if err := n.WaitForApplied(ctxT(t, time.Second), idx); err != nil {
		t.Fatal(err)
	}
	kv := n.fsm.fsm.(*kvFSM)
	if v, _ := kv.get("a"); v != "2" {
		t.Errorf("a refused restore changed the state: a = %q", v)
	}
	if r, _ := kv.stats(); r != 0 {
		t.Errorf("FSM restored %d times", r)
	}
	tmps, _ := filepath.Glob(filepath.Join(n.cfg.DataDir, "server", "raft", "restore-*"))
	if len(tmps) != 0 {
		t.Errorf("spool files left behind: %v", tmps)
	}
}

func TestLaggingFollowerCatchesUpBySnapshotInstall(t *testing.T) {
	var nodes []*Node
	var fsms []*kvFSM
	var cfgs []Config
	for i := range 3 {
		cfg := testConfig(t, fmt.Sprintf("s%d", i+1), t.TempDir(), i == 0)
		cfg.SnapshotThreshold = 16
		cfg.SnapshotInterval = 20 * time.Millisecond
		cfg.TrailingLogs = 4
		kv := newKV()
		nodes = append(nodes, startNode(t, cfg, kv))
		fsms = append(fsms, kv)
		cfgs = append(cfgs, cfg)
	}
	leader := nodes[0]
	waitLeader(t, leader, 5*time.Second)
	for _, n := range nodes[1:] {
		if err := leader.AddVoter(n.ID(), n.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	first := mustApply(t, leader, "k000", "0")
	lagger := nodes[2]
	if err := lagger.WaitForApplied(ctxT(t, 5*time.Second), first); err != nil {
		t.Fatal(err)
	}
	addr := lagger.Addr()
	if err := lagger.Shutdown(); err != nil {
		t.Fatal(err)
	}

	var last uint64
	for i := 1; i < 200; i++ {
		last = mustApply(t, leader, fmt.Sprintf("k%03d", i), strconv.Itoa(i))
	}
	// The leader has compacted its log past what the lagger has.
	testutil.WaitFor(t, 10*time.Second, "the leader to compact its log", func() bool {
		firstIdx, err := leader.store.FirstIndex()
		return err == nil && firstIdx > first+1
	})

	cfg := cfgs[2]
	cfg.BindAddr = addr
	kv := newKV()
	back := startNode(t, cfg, kv)
	if err := back.WaitForApplied(ctxT(t, 15*time.Second), last); err != nil {
		t.Fatalf("the lagging follower did not catch up: %v", err)
	}
	if restores, _ := kv.stats(); restores == 0 {
		t.Error("the follower caught up without installing a snapshot")
	}
	if kv.len() != 200 {
		t.Errorf("follower holds %d keys, want 200", kv.len())
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
