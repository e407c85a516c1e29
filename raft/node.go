package raft

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	hraft "github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// Node is one server's member of the Raft cluster. All methods are safe for
// concurrent use. Create it with New and stop it with Shutdown.
type Node struct {
	cfg    Config
	logger hclog.Logger

	raft  *hraft.Raft
	fsm   *fsmAdapter
	store *raftboltdb.BoltStore
	// logs is the log store raft writes through (a cache over store);
	// VerifyLeader reads it to turn the commit index into a read index.
	logs  hraft.LogStore
	trans *hraft.NetworkTransport
	// snaps is the snapshot store; the byte trigger reads the size of
	// the newest snapshot from it (snapshot_bytes.go).
	snaps hraft.SnapshotStore

	observer *hraft.Observer
	// leaderCh carries this server's latest leadership state to the one
	// consumer of LeaderCh; capacity 1, newest value wins.
	leaderCh chan bool
	// leaderChanged fires whenever the known leader (of any server) changes.
	leaderChanged broadcast
	// readyTerm is the term in which this server, as leader, last
	// confirmed with a barrier that every earlier entry is applied; see
	// VerifyLeader.
	readyTerm atomic.Uint64
	// paused notices pauses of this process; VerifyLeader waits for the
	// replication to settle after one (pause.go).
	paused *pauseWatch

	shutdownCh   chan struct{} // closed when Shutdown starts
	runDone      chan struct{} // closed when the run goroutine exits
	shutdownOnce sync.Once
	shutdownErr  error
}

// New opens (or creates) the node's state under cfg.DataDir, restores the
// FSM from the newest snapshot, starts the transport and joins the
// replication protocol. Entries after the snapshot are replayed into the FSM
// once they are known committed: at once on a single server that becomes
// leader, or when the leader says so on a cluster.
func New(cfg Config, fsm FSM) (*Node, error) {
	if fsm == nil {
		return nil, errors.New("raft: New: nil FSM")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	n := &Node{
		cfg:        cfg,
		logger:     cfg.Logger,
		fsm:        &fsmAdapter{fsm: fsm},
		leaderCh:   make(chan bool, 1),
		shutdownCh: make(chan struct{}),
		runDone:    make(chan struct{}),
		// A heartbeat timeout after a pause, followers answered fresh
		// heartbeats, or made this server step down.
		paused: newPauseWatch(cfg.HeartbeatTimeout),
	}
	// Undo whatever was opened if a later step fails, so a failed New
	// leaves the data dir free to open again.
	ok := false
	defer func() {
		if !ok {
			n.closeStores()
		}
	}()

	raftLogger := withFloor(cfg.Logger.Named("hraft"), hclog.Warn)
	dir := filepath.Join(cfg.DataDir, "server", "raft")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("raft: creating %s: %w", dir, err)
	}
	n.store, err = openLogStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		return nil, fmt.Errorf("raft: opening log store in %s (is another server using this data dir?): %w", dir, err)
	}
	logs := newLogCache(n.store, logCacheSize, logCacheBytes)
	n.logs = logs
	removeUnfinishedSnapshots(dir, cfg.Logger)
	snaps, err := hraft.NewFileSnapshotStoreWithLogger(dir, snapshotsRetained, raftLogger)
	if err != nil {
		return nil, fmt.Errorf("raft: snapshot store: %w", err)
	}
	n.snaps = snaps
	if n.trans, err = newTransport(cfg, raftLogger); err != nil {
		return nil, err
	}

	notifyCh := make(chan bool, 8)
	rc := n.raftConfig(raftLogger, notifyCh)
	if cfg.Bootstrap {
		if err := n.bootstrap(rc, logs, snaps); err != nil {
			return nil, err
		}
	}
	n.raft, err = hraft.NewRaft(rc, n.fsm, logs, n.store, snaps, n.trans)
	if err != nil {
		return nil, fmt.Errorf("raft: starting: %w", err)
	}
	ok = true

	obsCh := make(chan hraft.Observation, 64)
	n.observer = hraft.NewObserver(obsCh, false, func(o *hraft.Observation) bool {
		_, isLeader := o.Data.(hraft.LeaderObservation)
		return isLeader
	})
	n.raft.RegisterObserver(n.observer)
	go n.run(notifyCh, obsCh)
	go n.paused.run(n.shutdownCh)
	if n.cfg.SnapshotBytes > 0 {
		go n.snapshotOnBytes(snapshotBytesCheck)
	}

	n.hurrySoleVoter()
	n.logger.Info("raft node started", "id", cfg.ID, "addr", n.Addr(),
		"applied_index", n.fsm.applied.load(), "last_index", n.raft.LastIndex())
	return n, nil
}

// newTransport listens on cfg.BindAddr. With no AdvertiseAddr the stream
// layer advertises the bound address, which keeps a port-0 bind usable.
func newTransport(cfg Config, logger hclog.Logger) (*hraft.NetworkTransport, error) {
	var advertise net.Addr
	if cfg.AdvertiseAddr != "" {
		a, err := net.ResolveTCPAddr("tcp", cfg.AdvertiseAddr)
		if err != nil {
			return nil, fmt.Errorf("raft: AdvertiseAddr %q: %w", cfg.AdvertiseAddr, err)
		}
		advertise = a
	}
	if cfg.TLS != nil {
		layer, err := newTLSStreamLayer(cfg.BindAddr, advertise, cfg.TLS)
		if err != nil {
			return nil, fmt.Errorf("raft: TLS transport on %s: %w", cfg.BindAddr, err)
		}
		return hraft.NewNetworkTransportWithConfig(&hraft.NetworkTransportConfig{
			Stream: layer, MaxPool: transportMaxPool, Timeout: transportTimeout, Logger: logger,
		}), nil
	}
	trans, err := hraft.NewTCPTransportWithConfig(cfg.BindAddr, advertise, &hraft.NetworkTransportConfig{
		MaxPool: transportMaxPool,
		Timeout: transportTimeout,
		Logger:  logger,
	})
	if err != nil {
		return nil, fmt.Errorf("raft: transport on %s: %w", cfg.BindAddr, err)
	}
	return trans, nil
}

// raftConfig builds hashicorp/raft's configuration from ours.
func (n *Node) raftConfig(logger hclog.Logger, notifyCh chan bool) *hraft.Config {
	rc := hraft.DefaultConfig()
	rc.LocalID = hraft.ServerID(n.cfg.ID)
	rc.HeartbeatTimeout = n.cfg.HeartbeatTimeout
	rc.ElectionTimeout = n.cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = n.cfg.LeaderLeaseTimeout
	rc.CommitTimeout = n.cfg.CommitTimeout
	rc.SnapshotThreshold = n.cfg.SnapshotThreshold
	rc.SnapshotInterval = n.cfg.SnapshotInterval
	rc.TrailingLogs = n.cfg.TrailingLogs
	rc.MaxAppendEntries = maxAppendEntries
	// Buffer proposals so concurrent Apply calls queue up while the leader
	// writes, and the next write takes all of them: group commit.
	rc.BatchApplyCh = true
	rc.NotifyCh = notifyCh
	rc.Logger = logger
	return rc
}

// bootstrap writes a one-voter configuration, but only into empty state:
// bootstrapping a server that already has a log would fork the cluster.
func (n *Node) bootstrap(rc *hraft.Config, logs hraft.LogStore, snaps hraft.SnapshotStore) error {
	has, err := hraft.HasExistingState(logs, n.store, snaps)
	if err != nil {
		return fmt.Errorf("raft: checking for existing state: %w", err)
	}
	if has {
		n.logger.Debug("existing raft state found, not bootstrapping")
		return nil
	}
	conf := hraft.Configuration{Servers: []hraft.Server{{
		Suffrage: hraft.Voter,
		ID:       rc.LocalID,
		Address:  n.trans.LocalAddr(),
	}}}
	if err := hraft.BootstrapCluster(rc, logs, n.store, snaps, n.trans, conf); err != nil {
		return fmt.Errorf("raft: bootstrap: %w", err)
	}
	n.logger.Info("bootstrapped a single-server cluster", "id", n.cfg.ID)
	return nil
}

// hurrySoleVoter makes a server that is the only voter of its configuration
// start its election now rather than after a heartbeat timeout: nobody else
// can win, so waiting only delays dev mode and single-server restarts.
// hashicorp/raft has no "campaign" call; lowering the heartbeat timeout
// through ReloadConfig wakes the follower loop, which then finds no leader
// contact and campaigns. The timeout is put back straight away.
func (n *Node) hurrySoleVoter() {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	servers := f.Configuration().Servers
	if len(servers) != 1 || servers[0].ID != hraft.ServerID(n.cfg.ID) || servers[0].Suffrage != hraft.Voter {
		return
	}
	orig := n.raft.ReloadableConfig()
	lower := orig
	lower.HeartbeatTimeout = n.cfg.LeaderLeaseTimeout
	if lower.HeartbeatTimeout >= orig.HeartbeatTimeout {
		return
	}
	if err := n.raft.ReloadConfig(lower); err != nil {
		n.logger.Debug("could not hurry the first election", "error", err)
		return
	}
	if err := n.raft.ReloadConfig(orig); err != nil {
		n.logger.Warn("could not restore the heartbeat timeout", "error", err)
	}
}

// run is the node's one goroutine: it turns raft's leadership notifications
// into LeaderCh values and leader-change wake-ups. raft blocks on NotifyCh
// until it is read, so this loop never does anything slow.
func (n *Node) run(notifyCh <-chan bool, obsCh <-chan hraft.Observation) {
	defer close(n.runDone)
	leader := false
	for {
		select {
		case v := <-notifyCh:
			leader = v
			n.publishLeadership(v)
			n.leaderChanged.notify()
		case <-obsCh:
			n.leaderChanged.notify()
		case <-n.shutdownCh:
			if leader {
				n.publishLeadership(false)
			}
			n.leaderChanged.notify()
			return
		}
	}
}

// publishLeadership replaces any undelivered value in leaderCh with v, so a
// slow consumer sees the latest state and never stalls the node.
func (n *Node) publishLeadership(v bool) {
	select {
	case <-n.leaderCh:
	default:
	}
	// Only this goroutine sends, so after the drain there is room.
	n.leaderCh <- v
}

// Shutdown stops the node and closes the transport and the stores, so the
// same data dir can be opened again, in this process or another. It is
// safe to call more than once. Shutdown does not hand leadership over: the
// other servers elect a new leader after their heartbeat timeout.
func (n *Node) Shutdown() error {
	n.shutdownOnce.Do(func() {
		err := n.raft.Shutdown().Error()
		n.raft.DeregisterObserver(n.observer)
		close(n.shutdownCh)
		<-n.runDone
		n.shutdownErr = errors.Join(err, n.closeStores())
		n.logger.Info("raft node stopped", "id", n.cfg.ID)
	})
	return n.shutdownErr
}

// closeStores releases the transport and bolt. raft's shutdown closes the
// transport's listener; pooled outgoing connections need closing too.
func (n *Node) closeStores() error {
	var errs []error
	if n.trans != nil {
		n.trans.CloseStreams()
		errs = append(errs, n.trans.Close())
	}
	if n.store != nil {
		errs = append(errs, n.store.Close())
	}
	return errors.Join(errs...)
}

// ID returns this server's ID.
func (n *Node) ID() string { return n.cfg.ID }

// Addr returns the transport address other servers reach this one at: the
// AdvertiseAddr, or the address actually bound (useful after a port-0 bind).
func (n *Node) Addr() string { return string(n.trans.LocalAddr()) }

// IsLeader reports whether this server is the leader right now. It is a
// local view: a partitioned ex-leader may believe it for up to
// LeaderLeaseTimeout. Use VerifyLeader when that matters.
func (n *Node) IsLeader() bool { return n.raft.State() == hraft.Leader }

// Leader returns the transport address and ID of the leader as this server
// knows it, or empty strings when there is none.
func (n *Node) Leader() (addr, id string) {
	a, i := n.raft.LeaderWithID()
	return string(a), string(i)
}

// LeaderCh delivers this server's leadership state each time it changes:
// true when it becomes leader, false when it stops (including at Shutdown).
// It has one consumer. Values are never queued: an unread value is replaced
// by the newer one, so a slow consumer never blocks Raft but may miss a
// short episode. Read each value as "the state is now v"; true while the
// consumer already thinks it leads means leadership was lost and regained in
// between, and leader-only work should be restarted from state.
func (n *Node) LeaderCh() <-chan bool { return n.leaderCh }

// AppliedIndex returns the index of the last entry the FSM has applied.
func (n *Node) AppliedIndex() uint64 { return n.fsm.applied.load() }

// LastIndex returns the index of the last entry in this server's log,
// committed or not.
func (n *Node) LastIndex() uint64 { return n.raft.LastIndex() }

// LastContact returns when this server last heard from the leader: now on
// the leader itself, zero on a server that never has.
func (n *Node) LastContact() time.Time {
	if n.IsLeader() {
		return time.Now()
	}
	return n.raft.LastContact()
}

// Snapshot takes a snapshot now and compacts the log behind it. With
// nothing applied since the last snapshot it does nothing and succeeds.
func (n *Node) Snapshot() error {
	err := n.raft.Snapshot().Error()
	if errors.Is(err, hraft.ErrNothingNewToSnapshot) {
		return nil
	}
	return translate(err)
}

// SnapshotIfBehind takes a snapshot when at least min entries were
// applied since the last one, and otherwise does nothing. A graceful
// shutdown calls it so that the next start restores a snapshot rather
// than replaying those entries one by one (each command decoded and
// applied again), which takes longer once entries carry placements. A
// crash, which skips it, still replays them all.
func (n *Node) SnapshotIfBehind(min uint64) error {
	if n.fsm.applied.load() < n.lastSnapshotIndex()+min {
		return nil
	}
	return n.Snapshot()
}

// Stats returns hashicorp/raft's stats (state, term, indexes, peers, last
// contact) plus the FSM's applied index and how many entries and batches it
// has applied since start; entries per batch shows group commit at work.
// snapshots_persisted counts the snapshots this node wrote since start, and
// last_persist_seconds and last_persist_bytes describe the newest one.
func (n *Node) Stats() map[string]string {
	s := n.raft.Stats()
	s["fsm_applied_index"] = strconv.FormatUint(n.fsm.applied.load(), 10)
	s["fsm_apply_batches"] = strconv.FormatUint(n.fsm.batches.Load(), 10)
	s["fsm_applied_entries"] = strconv.FormatUint(n.fsm.entries.Load(), 10)
	s["snapshots_persisted"] = strconv.FormatUint(n.fsm.persists.Load(), 10)
	s["last_persist_seconds"] = strconv.FormatFloat(time.Duration(n.fsm.persistNanos.Load()).Seconds(), 'f', 3, 64)
	s["last_persist_bytes"] = strconv.FormatUint(n.fsm.persistBytes.Load(), 10)
	return s
}
