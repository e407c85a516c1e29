package raft

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// benchNode starts a single-server node with production timeouts.
func benchNode(b *testing.B) *Node {
	b.Helper()
	cfg := Config{ID: "bench", DataDir: b.TempDir(), BindAddr: "127.0.0.1:0", Bootstrap: true, Logger: testLogger(b)}
	n := startNode(b, cfg, newKV())
	waitLeader(b, n, 5*time.Second)
	return n
}

// reportBatching reports how many applies shared one commit round: the
// group-commit factor (1.0 means none).
func reportBatching(b *testing.B, n *Node, batches0, entries0 uint64) {
	batches := n.fsm.batches.Load() - batches0
	entries := n.fsm.entries.Load() - entries0
	if batches > 0 {
		b.ReportMetric(float64(entries)/float64(batches), "applies/commit")
	}
}

// BenchmarkApplySerial is one writer: every apply pays a full disk write.
func BenchmarkApplySerial(b *testing.B) {
	n := benchNode(b)
	ctx := context.Background()
	batches0, entries0 := n.fsm.batches.Load(), n.fsm.entries.Load()
	for i := 0; b.Loop(); i++ {
		if _, _, err := n.Apply(ctx, setCmd(fmt.Sprint(i), "v")); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportBatching(b, n, batches0, entries0)
}

// BenchmarkApplyParallel is many writers at once (16 per CPU): group commit
// lets them share disk writes, so throughput far exceeds the serial case.
func BenchmarkApplyParallel(b *testing.B) {
	n := benchNode(b)
	ctx := context.Background()
	var seq atomic.Uint64
	batches0, entries0 := n.fsm.batches.Load(), n.fsm.entries.Load()
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := n.Apply(ctx, setCmd(fmt.Sprint(seq.Add(1)), "v")); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	reportBatching(b, n, batches0, entries0)
}
