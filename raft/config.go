package raft

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// Defaults for Config fields left zero.
//
// The heartbeat (and election) timeout is half hashicorp/raft's LAN default
// of 1s. A follower starts an election after a random wait between one and
// two timeouts without hearing from the leader, so failover after a leader
// crash takes 0.5-1s plus the election instead of 1-2s, which keeps the
// first acknowledged write after a leader SIGKILL under 2s. The leader
// still heartbeats every timeout/10 (50ms), so a follower must miss ten
// heartbeats in a row to start an election: a LAN or a loaded machine does
// not cause needless elections at this setting (the e2e suite runs with it
// on two shared cores). Slower networks scale every timeout up (the
// agent's raft_multiplier). A server that is the only voter does not wait
// for them (see Config.HeartbeatTimeout).
const (
	DefaultBindAddr          = "127.0.0.1:4647"
	DefaultSnapshotThreshold = 8192
	// DefaultSnapshotBytes is how many bytes of applied entries since the
	// last snapshot trigger a new one; see Config.SnapshotBytes.
	DefaultSnapshotBytes = 64 << 20
	// DefaultSnapshotBytesMax bounds how far the trigger grows with the
	// state; see Config.SnapshotBytesMax.
	DefaultSnapshotBytesMax = 256 << 20
	// DefaultSnapshotBusyRate is the rate of applied bytes per second at
	// which the byte trigger waits; see Config.SnapshotBusyRate.
	DefaultSnapshotBusyRate = 1 << 20
	DefaultSnapshotInterval = 120 * time.Second
	DefaultTrailingLogs     = 10240
	DefaultHeartbeatTimeout = 500 * time.Millisecond
	DefaultCommitTimeout    = 50 * time.Millisecond
)

// Tuning that callers have no reason to change.
const (
	// maxAppendEntries bounds both the group-commit batch (proposals written
	// by one disk write) and the entries per replication RPC.
	maxAppendEntries = 256
	// snapshotBytesCheck is how often Config.SnapshotBytes is checked.
	snapshotBytesCheck = 2 * time.Second
	// logCacheSize and logCacheBytes bound the recent entries kept in
	// memory (log_cache.go) so replication to a follower that is only
	// slightly behind, and a follower's apply, do not read bolt. A plan's
	// entry can be a megabyte: the byte bound is the one that holds at
	// scale (about thirty such entries).
	logCacheSize  = 512
	logCacheBytes = 32 << 20
	// snapshotsRetained is how many snapshots stay on disk: the newest, and
	// one to fall back on if the newest turns out unreadable.
	snapshotsRetained = 2
	// transportMaxPool is the number of pooled connections per peer.
	transportMaxPool = 3
	// transportTimeout bounds one RPC's I/O; snapshots scale it by size.
	transportTimeout = 10 * time.Second
	// boltOpenTimeout stops a second process on the same data dir from
	// hanging forever on bolt's file lock.
	boltOpenTimeout = time.Second
)

// logStoreOptions are bolt's options for the Raft log store (raft.db).
//
// Every commit is synced to disk (raft-boltdb's NoSync stays false: an
// acknowledged write is on disk). The free-page list is not: after a
// snapshot raft deletes the log behind it, up to SnapshotBytesMax of
// entries, and bolt's default would then write the list of every freed
// page with every later commit (a 256 MiB log freed is ~65,000 page IDs,
// half a megabyte per commit) and search it linearly for each page it
// allocates. With NoFreelistSync bolt rebuilds the list by walking the
// file when it opens it (a fraction of a second for a few hundred
// megabytes, part of a restart), and the hashmap list allocates without
// a scan. BenchmarkLogStoreAfterCompaction measures both.
//
// The file is mapped logStoreMmapSize from the start, rather than from
// 32 KiB doubling as it grows: every growth of bolt's mapping copies the
// committing transaction's nodes, entries included, off the old mapping
// and waits for every open read, and a new server's log passes a dozen
// such growths on its way to the size it then keeps (a plan's entry is a
// megabyte at a thousand allocations). The mapping is address space, not
// memory: pages are read in as the file's are touched, and on Linux, the
// one system sched builds for, a map may reach beyond the file's end (bolt
// on Windows grows the file to its map).
// BenchmarkLogStoreFresh measures both.
func logStoreOptions() *bbolt.Options {
	return &bbolt.Options{
		Timeout:         boltOpenTimeout,
		NoFreelistSync:  true,
		FreelistType:    bbolt.FreelistMapType,
		InitialMmapSize: logStoreMmapSize,
	}
}

// logStoreMmapSize is the Raft log store's initial map size: the most
// applied bytes between two snapshots (DefaultSnapshotBytesMax) and as
// much again for the trailing entries and pages not yet reused.
const logStoreMmapSize = 2 * DefaultSnapshotBytesMax

// openLogStore opens (or creates) the bolt file that holds the Raft log
// and stable store.
func openLogStore(path string) (*raftboltdb.BoltStore, error) {
	return raftboltdb.New(raftboltdb.Options{Path: path, BoltOptions: logStoreOptions(), NoSync: false})
}

// Config configures a Node. The zero value of every field except ID and
// DataDir is usable and means the default documented on the field.
type Config struct {
	// ID is this server's identity in the Raft configuration. Required. It
	// must stay the same across restarts on the same DataDir.
	ID string
	// DataDir holds the node's durable state in DataDir/server/raft:
	// raft.db (log and stable store) and snapshots/. Required.
	DataDir string
	// BindAddr is the TCP address the transport listens on. Empty means
	// DefaultBindAddr; port 0 picks a free port (see Node.Addr).
	BindAddr string
	// AdvertiseAddr is the address other servers dial. Empty means the
	// address actually bound, which must then not be a wildcard IP.
	AdvertiseAddr string
	// TLS, when set, makes the transport mutual TLS (tls.go): this
	// server's certificate in Certificates, the cluster's CA as RootCAs
	// and ClientCAs, and the name every server's certificate carries as
	// ServerName. Peers without a certificate of the CA cannot connect.
	// Nil: plain TCP, which anyone who reaches the port can speak.
	TLS *tls.Config
	// Bootstrap makes a server with no Raft state at all start a cluster in
	// which it is the only voter (dev mode, or the first server of a cluster
	// grown with AddVoter). A server with existing state ignores it, so it
	// is safe to leave set across restarts.
	Bootstrap bool

	// SnapshotThreshold is how many entries since the last snapshot trigger
	// a new one. Zero means DefaultSnapshotThreshold.
	SnapshotThreshold uint64
	// SnapshotBytes also triggers a snapshot: when the entries applied
	// since the last one add up to this many bytes. Entries are counted
	// by SnapshotThreshold whatever their size, and a plan's entry carries
	// up to a thousand placements: a million allocations placed took a
	// few thousand entries, so no snapshot was taken, and a restart after
	// a crash replayed every placement. Zero means DefaultSnapshotBytes;
	// negative turns it off.
	SnapshotBytes int64
	// SnapshotBytesMax: the byte trigger grows with the state, to twice
	// the size of the last snapshot, but not past this. A snapshot persists
	// the whole state: taken every SnapshotBytes whatever the state's
	// size, its cost per write grew with the state (at a million
	// allocations, a snapshot every 250,000 placements, each persisting
	// all of them, was a quarter of the leader's CPU while it placed).
	// Scaled with the state, that cost per write stays flat, and a crash
	// replays at most this much log (~550,000 packed placements at the
	// default, ~12 s). Zero means DefaultSnapshotBytesMax; below
	// SnapshotBytes it is SnapshotBytes (a fixed trigger).
	SnapshotBytesMax int64
	// SnapshotBusyRate: while entries are being applied at this many bytes
	// per second or more (a burst: 1 MiB/s is some 2,000 placements, or a
	// thousand job registrations, a second), a snapshot the byte trigger
	// asks for waits until the burst is over, or until the log since the
	// last snapshot reaches SnapshotBytesMax, whichever comes first. A
	// snapshot persists the whole state on the cores the burst is using:
	// at a million allocations it is some 18 s of one core's share, and
	// the byte trigger grown with the state asked for the largest one near
	// the end of every large burst. The bound a crash replays is
	// SnapshotBytesMax either way. Zero means DefaultSnapshotBusyRate;
	// negative never waits.
	SnapshotBusyRate int64
	// SnapshotInterval is how often the threshold is checked. Zero means
	// DefaultSnapshotInterval.
	SnapshotInterval time.Duration
	// TrailingLogs is how many entries a snapshot leaves in the log, so a
	// briefly lagging follower catches up from the log instead of a full
	// snapshot. Zero means DefaultTrailingLogs.
	TrailingLogs uint64

	// HeartbeatTimeout is how long a follower waits without hearing from the
	// leader before it starts an election. Zero means
	// DefaultHeartbeatTimeout. A server that is the only voter of its
	// configuration starts its first election at once instead (provided
	// LeaderLeaseTimeout is below HeartbeatTimeout), so dev mode becomes
	// leader in milliseconds.
	HeartbeatTimeout time.Duration
	// ElectionTimeout is how long a candidate waits for votes. Zero means
	// HeartbeatTimeout. It may not be shorter than HeartbeatTimeout.
	ElectionTimeout time.Duration
	// LeaderLeaseTimeout is how long a leader keeps leading without hearing
	// from a quorum. Zero means half of HeartbeatTimeout. It may not exceed
	// HeartbeatTimeout.
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is the longest the leader stays silent to a follower;
	// it bounds how stale a follower's view of the commit index can be, and
	// so the wait of a consistent read on a follower right after a write.
	// Zero means DefaultCommitTimeout.
	CommitTimeout time.Duration

	// Logger receives this package's logs; hashicorp/raft's own messages go
	// to a child of it filtered to warnings and errors. Nil means an hclog
	// logger at info level writing to stderr.
	Logger hclog.Logger
}

// withDefaults returns a copy of c with every zero field filled in, or an
// error naming the first field that cannot work.
func (c Config) withDefaults() (Config, error) {
	if c.ID == "" {
		return c, errors.New("raft: config: ID is required")
	}
	if c.DataDir == "" {
		return c, errors.New("raft: config: DataDir is required")
	}
	if c.BindAddr == "" {
		c.BindAddr = DefaultBindAddr
	}
	if c.SnapshotBytesMax == 0 {
		c.SnapshotBytesMax = DefaultSnapshotBytesMax
	}
	if c.SnapshotBytes == 0 {
		c.SnapshotBytes = DefaultSnapshotBytes
	}
	if c.SnapshotBusyRate == 0 {
		c.SnapshotBusyRate = DefaultSnapshotBusyRate
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = DefaultSnapshotThreshold
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = DefaultSnapshotInterval
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = DefaultTrailingLogs
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = c.HeartbeatTimeout
	}
	if c.LeaderLeaseTimeout == 0 {
		c.LeaderLeaseTimeout = c.HeartbeatTimeout / 2
	}
	if c.CommitTimeout == 0 {
		c.CommitTimeout = DefaultCommitTimeout
	}
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		return c, fmt.Errorf("raft: config: LeaderLeaseTimeout %s exceeds HeartbeatTimeout %s",
			c.LeaderLeaseTimeout, c.HeartbeatTimeout)
	}
	if c.ElectionTimeout < c.HeartbeatTimeout {
		return c, fmt.Errorf("raft: config: ElectionTimeout %s is shorter than HeartbeatTimeout %s",
			c.ElectionTimeout, c.HeartbeatTimeout)
	}
	if c.Logger == nil {
		c.Logger = hclog.New(&hclog.LoggerOptions{
			Name:   "raft",
			Level:  hclog.Info,
			Output: os.Stderr,
		})
	}
	return c, nil
}
