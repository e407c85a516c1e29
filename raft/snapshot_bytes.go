package raft

import (
	"strconv"
	"time"
)

// snapshotOnBytes takes a snapshot whenever the entries applied since the
// last snapshot (whoever took it) add up to the byte trigger
// (snapshotLimit: Config.SnapshotBytes, grown with the state up to
// Config.SnapshotBytesMax), checking every interval until shutdown. While
// a burst is applied (Config.SnapshotBusyRate) the trigger is
// Config.SnapshotBytesMax instead, and at the first quiet check after a
// burst Config.SnapshotBytes (settledLimit). A burst ends after
// settleChecks quiet checks in a row (burstTracker). Raft's own trigger
// counts entries; this one bounds what a restart after a crash replays by
// its size.
func (n *Node) snapshotOnBytes(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	tr := n.newBytesTrigger()
	rate := busyMeter{bytes: n.fsm.bytes.Load(), at: time.Now()}
	var bt burstTracker
	// The limit is read from the snapshot store when a snapshot is new,
	// not at every check: listing the store while a snapshot is being
	// written logs a warning about its temporary folder.
	limitAt, limit := tr.lastIndex, n.snapshotLimit(n.cfg.SnapshotBytes, n.cfg.SnapshotBytesMax)
	for {
		select {
		case <-n.shutdownCh:
			return
		case <-t.C:
		}
		if idx := n.lastSnapshotIndex(); idx != limitAt {
			limitAt, limit = idx, n.snapshotLimit(n.cfg.SnapshotBytes, n.cfg.SnapshotBytesMax)
		}
		inBurst, settled := bt.observe(rate.busy(n.fsm.bytes.Load(), time.Now(), n.cfg.SnapshotBusyRate))
		took, err := n.checkSnapshotBytes(&tr, settledLimit(burstLimit(limit, n.cfg.SnapshotBytesMax, inBurst), n.cfg.SnapshotBytes, settled))
		if err != nil {
			n.logger.Warn("snapshot after a large log failed; retrying at the next check", "error", err)
		}
		if took {
			bt.snapshotTaken()
		}
	}
}

// settleChecks is how many quiet checks in a row end a burst. One was
// not enough: on a loaded machine a burst of placements has 2-second
// gaps (a collection, a snapshot being written, a scheduler waiting for
// its plan) in which less than SnapshotBusyRate is applied, and each such
// gap took a snapshot of the whole state at the floor (in a 2,000,000
// placement burst at a load of 16, a 337 MB snapshot began as soon as
// the one before it, 295 MB, was written).
const settleChecks = 3

// burstTracker follows bursts from one check's rate to the next.
type burstTracker struct {
	// burst is set once a check finds a burst, until a snapshot is taken.
	burst bool
	// quiet counts the quiet checks since the last busy one.
	quiet int
}

// observe records whether this check found the applied rate busy and
// reports whether the burst's trigger is in force (inBurst: a busy check,
// or one of the settleChecks-1 quiet ones after it) and whether the burst
// has settled (settleChecks quiet checks in a row after it, until the
// next snapshot).
func (b *burstTracker) observe(busy bool) (inBurst, settled bool) {
	if busy {
		b.burst, b.quiet = true, 0
		return true, false
	}
	b.quiet++
	if !b.burst {
		return false, false
	}
	if b.quiet < settleChecks {
		return true, false
	}
	return false, true
}

// snapshotTaken ends what the burst asked for: its settled snapshot is
// taken (or one at its trigger, and a busy check starts a burst again).
func (b *burstTracker) snapshotTaken() { b.burst = false }

// settledLimit is the byte trigger in force at the first quiet check after
// a burst (settled): the floor least, when it is lower than limit. A
// burst defers its snapshot up to the cap (burstLimit), and the trigger
// grows with the state (snapshotLimit): after a million placements a
// crash replayed up to 400,000 of them, the most expensive part of a
// restart (replaying a placement costs about three times what restoring
// it from a snapshot does). Once the burst is over a snapshot costs the
// writes nothing, so one is taken as soon as the floor's worth was
// applied since the last: at most one extra snapshot per burst.
func settledLimit(limit, least int64, settled bool) int64 {
	if settled && least > 0 {
		return min(limit, least)
	}
	return limit
}

// busyMeter tells a burst from the applied bytes' rate between two
// checks.
type busyMeter struct {
	bytes uint64
	at    time.Time
}

// busy reports whether the bytes applied since the last call, up to
// applied at now, came at least at rate bytes per second (never, for a
// rate <= 0), and starts the next measure.
func (m *busyMeter) busy(applied uint64, now time.Time, rate int64) bool {
	n, d := applied-m.bytes, now.Sub(m.at)
	m.bytes, m.at = applied, now
	if rate <= 0 || d <= 0 {
		return false
	}
	return float64(n) >= float64(rate)*d.Seconds()
}

// burstLimit is the byte trigger in force: limit, or during a burst the
// cap most (when it is higher).
func burstLimit(limit, most int64, busy bool) int64 {
	if busy {
		return max(limit, most)
	}
	return limit
}

// bytesTrigger is where the count of applied bytes starts: at the last
// snapshot seen.
type bytesTrigger struct {
	lastIndex uint64
	base      uint64
}

func (n *Node) newBytesTrigger() bytesTrigger {
	return bytesTrigger{lastIndex: n.lastSnapshotIndex(), base: n.fsm.bytes.Load()}
}

// checkSnapshotBytes takes a snapshot when at least limit bytes of entries
// were applied since the last snapshot tr saw was written, and reports
// whether it did. A snapshot raft took on its own meanwhile (threshold,
// restore, shutdown) restarts the count instead. A failed snapshot leaves
// the count as it was, to be tried again.
//
// The count starts when the snapshot is written, not when it began: what
// was applied while it was being written counts for the next one. Counted
// from its start, a snapshot that took long (the state is large, the
// machine busy) found the next trigger already reached, and snapshots of
// the whole state followed each other with no writes in between free of
// one; a 2,000,000-placement burst on 10,000 nodes wrote its fourth
// during its last 100,000 placements. A crash replays what the trigger
// lets through plus what was applied while the last snapshot was
// written: the bound a crash while a snapshot is written had already.
func (n *Node) checkSnapshotBytes(tr *bytesTrigger, limit int64) (bool, error) {
	if idx := n.lastSnapshotIndex(); idx != tr.lastIndex {
		tr.lastIndex, tr.base = idx, n.fsm.bytes.Load()
		return false, nil
	}
	applied := n.fsm.bytes.Load()
	if int64(applied-tr.base) < limit {
		return false, nil
	}
	if err := n.Snapshot(); err != nil {
		return false, err
	}
	tr.lastIndex, tr.base = n.lastSnapshotIndex(), n.fsm.bytes.Load()
	return true, nil
}

// lastSnapshotIndex is the index of the newest snapshot, 0 if none.
func (n *Node) lastSnapshotIndex() uint64 {
	idx, _ := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64)
	return idx
}

// snapshotLimit is the byte trigger: snapshotLogRatio times the size of
// the newest snapshot, within [least, most] (least when there is none, or
// most < least). A snapshot costs about its size to write, so a trigger
// that keeps up with it spends a bounded share of the writes on snapshots
// however large the state grows.
func (n *Node) snapshotLimit(least, most int64) int64 {
	if most <= least {
		return least
	}
	metas, err := n.snaps.List()
	if err != nil || len(metas) == 0 {
		return least
	}
	return min(max(snapshotLogRatio*metas[0].Size, least), most)
}

// snapshotLogRatio is how many bytes of log the trigger lets through per
// byte of the newest snapshot. A placement takes ~480 bytes in the log (a
// packed plan's record, and its share of the entry) and ~300 in a
// snapshot (the same record with the chunk's strings shared more widely),
// so at 2 the snapshots come about every 1.2 times the allocations
// already held: two or three while a million are placed.
const snapshotLogRatio = 2
