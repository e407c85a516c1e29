package store

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store/internal/packed"
)

// Retention defaults, used when a Config field is zero.
const (
	DefaultJobVersionsRetained    = 6
	DefaultJobSubmissionsRetained = 6
)

// Config tunes a Store. The zero value is usable: every zero field
// means its default. Every server of a cluster must use the same values,
// since Apply depends on them and must give identical results everywhere.
type Config struct {
	// JobVersionsRetained is how many versions of a job are kept; 0 means
	// DefaultJobVersionsRetained.
	JobVersionsRetained int
	// JobSubmissionsRetained is how many submissions (original sources) of
	// a job are kept; 0 means DefaultJobSubmissionsRetained.
	JobSubmissionsRetained int
	// EventBufferSize is how many applied log entries' events are kept
	// for the event stream; 0 means DefaultEventBufferSize.
	EventBufferSize int
}

func (c Config) withDefaults() Config {
	if c.JobVersionsRetained <= 0 {
		c.JobVersionsRetained = DefaultJobVersionsRetained
	}
	if c.JobSubmissionsRetained <= 0 {
		c.JobSubmissionsRetained = DefaultJobSubmissionsRetained
	}
	return c
}

// Store is the replicated state: go-memdb tables written only by Apply and
// Restore (on the Raft FSM goroutine) and read concurrently by anyone
// through the read methods. Objects it returns are shared with its
// immutable trees and must never be mutated.
type Store struct {
	reader
	cfg Config

	// mu guards db and abandonCh, which Restore replaces. Apply and reads
	// take it only long enough to pick up the current database.
	mu        sync.RWMutex
	db        *memdb.MemDB
	abandonCh chan struct{}

	// events receives what every applied command wrote (events.go).
	events *EventBuffer
	// listTxns numbers the write transactions that edit the allocation
	// lists, so a chunk of a list knows whether the transaction at hand
	// made it (alloc_lists.go).
	listTxns atomic.Uint64
	// packer is the memory machinery (internal/packed): the compaction
	// of stored allocations, the count maps they share across commands,
	// the readers of packed plans and snapshots.
	packer *packed.Packer
}

// NewStore returns a store holding only the built-in objects: the `default`
// namespace and the `default` and `all` node pools, written at index 1.
func NewStore(cfg Config) (*Store, error) {
	db, err := newDB()
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg.withDefaults(), db: db, abandonCh: make(chan struct{}), events: NewEventBuffer(cfg.EventBufferSize), packer: packed.New(logCodec{})}
	s.reader = reader{txn: s.readTxn, allocs: new(allocWatch)}
	return s, nil
}

// newDB makes an empty database holding the built-in objects.
func newDB() (*memdb.MemDB, error) {
	db, err := memdb.NewMemDB(dbSchema())
	if err != nil {
		return nil, fmt.Errorf("create state database: %w", err)
	}
	txn := db.Txn(true)
	defer txn.Abort()
	if err := ensureBuiltins(txn); err != nil {
		return nil, err
	}
	txn.Commit()
	return db, nil
}

// builtinIndex is the index at which built-in objects are written: before
// any command, and never 0, so a blocking read at index 0 returns at once.
const builtinIndex = 1

// ensureBuiltins inserts any missing built-in object at builtinIndex. It is
// deterministic, so it may run again after a Restore.
func ensureBuiltins(txn *memdb.Txn) error {
	touched := map[string]bool{}
	if ns, err := txn.First(TableNamespaces, indexID, state.DefaultNamespace); err != nil {
		return err
	} else if ns == nil {
		n := &state.Namespace{Name: state.DefaultNamespace, Description: "Default shared namespace",
			CreateIndex: builtinIndex, ModifyIndex: builtinIndex}
		if err := txn.Insert(TableNamespaces, n); err != nil {
			return err
		}
		touched[TableNamespaces] = true
	}
	pools := []*state.NodePool{
		{Name: state.NodePoolAll, Description: "Node pool with all nodes in the cluster."},
		{Name: state.NodePoolDefault, Description: "Default node pool."},
	}
	for _, p := range pools {
		existing, err := txn.First(TableNodePools, indexID, p.Name)
		if err != nil {
			return err
		}
		if existing != nil {
			continue
		}
		p.CreateIndex, p.ModifyIndex = builtinIndex, builtinIndex
		if err := txn.Insert(TableNodePools, p); err != nil {
			return err
		}
		touched[TableNodePools] = true
	}
	for table := range touched {
		row, err := txn.First(TableIndex, indexID, table)
		if err != nil {
			return err
		}
		if row != nil && row.(*indexEntry).Value >= builtinIndex {
			continue
		}
		if err := txn.Insert(TableIndex, &indexEntry{Key: table, Value: builtinIndex}); err != nil {
			return err
		}
	}
	return nil
}

// isBuiltinNodePool reports whether name is a pool that always exists.
func isBuiltinNodePool(name string) bool {
	return name == state.NodePoolDefault || name == state.NodePoolAll
}

// Config returns the store's configuration with defaults filled in.
func (s *Store) Config() Config { return s.cfg }

// AbandonCh is closed when Restore replaces the store's contents. Watch
// channels of the old contents never fire again, so a blocking read must add
// this channel to its watch set and re-run its query when it closes.
func (s *Store) AbandonCh() <-chan struct{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.abandonCh
}

func (s *Store) currentDB() *memdb.MemDB {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db
}

func (s *Store) readTxn() *memdb.Txn { return s.currentDB().Txn(false) }

// writeTxn is one command's write transaction. It records every table it
// writes so that commit can stamp their rows of the index table.
type writeTxn struct {
	*memdb.Txn
	cfg   Config
	index uint64
	// touched holds the tables written so far.
	touched map[string]bool
	// jobs holds the jobs whose allocations or evaluations changed: their
	// status is recomputed before commit.
	jobs map[nsID]bool
	// written records, in order, the writes of tables that have an event
	// topic (events.go); nil when nobody asked (trackEvents).
	written *[]written
	// packer is the store's (internal/packed); compact shares the values
	// of the allocations this command writes, made on first use.
	packer  *packed.Packer
	compact *packed.Compactor
	// listTxns is the store's (Store.listTxns).
	listTxns *atomic.Uint64
	// txnRows holds what the memdb transaction keeps aside of the tables
	// whose rows it writes once and then changes in place; the commands
	// of a batch (ApplyBatch) share it, as they share the transaction.
	*txnRows
	// summaries marks the job summaries this transaction copied and
	// wrote (summary.go).
	summaries map[*state.JobSummary]bool
	// deployments marks the deployments this command copied and wrote
	// while counting its allocations (updateDeploymentWithAlloc).
	deployments map[*state.Deployment]bool
	// quotaOf caches the quota of each namespace this command's
	// allocations are in, and quotaRows the quota usage rows it copied
	// and wrote (quotas.go).
	quotaOf   map[string]string
	quotaRows map[string]*quotaUsage
}

// txnRows is what one memdb write transaction keeps aside of the tables
// whose rows it writes once and changes in place afterwards (nobody sees
// them before the commit): the allocations' buckets, the node usage rows
// and the allocation lists. A row it has not written is read in base, a
// read transaction of the database as the write transaction started.
type txnRows struct {
	// lists holds the rows of the allocations' lists by node and by job
	// written so far (alloc_lists.go).
	lists allocListsTxn
	// db is the database the transaction writes, and base a read
	// transaction of it as the transaction started (baseTxn).
	db   *memdb.MemDB
	base *memdb.Txn
	// allocs holds what the transaction wrote of the allocations table
	// (alloc_table.go), usage the node usage rows (node_usage.go).
	allocs allocTableTxn
	usage  usageTxn
}

// baseTxn returns a read transaction of the database as this write
// transaction started. A row this transaction has not written yet is read
// there: a read of a table through the write transaction after a write to
// it clones the table's index, which drops the radix tree's cache of the
// nodes the transaction already copied, so that every later write copies
// its path again (most of a placement's garbage). Only a table whose rows
// the transaction keeps aside once written (the allocations' buckets and
// lists, the node usage) may be read there.
func (r *txnRows) baseTxn() *memdb.Txn {
	if r.base == nil {
		r.base = r.db.Txn(false)
	}
	return r.base
}

// nsID names a namespaced object.
type nsID struct{ ns, id string }

func (s *Store) writeTxn(index uint64) *writeTxn {
	db := s.currentDB()
	return s.writeTxnOn(db.Txn(true), &txnRows{db: db}, index)
}

// writeTxnOn is the write transaction of one command at index within txn,
// a memdb write transaction of the current database that ApplyBatch may
// share among commands, with rows, what txn keeps aside, shared alike.
func (s *Store) writeTxnOn(txn *memdb.Txn, rows *txnRows, index uint64) *writeTxn {
	return &writeTxn{
		Txn:      txn,
		txnRows:  rows,
		cfg:      s.cfg,
		packer:   s.packer,
		listTxns: &s.listTxns,
		index:    index,
		touched:  map[string]bool{},
		jobs:     map[nsID]bool{},
	}
}

func (t *writeTxn) insert(table string, obj any) error {
	t.touched[table] = true
	if table == TableAllocs {
		// Share what the allocation holds with the state (packed),
		// keep the node usage (node_usage.go) and the lists by node and
		// job (alloc_lists.go) in step.
		a := obj.(*state.Allocation)
		old, err := t.allocByID(a.ID)
		if err != nil {
			return err
		}
		if err := t.compactor().Alloc(old, a); err != nil {
			return err
		}
		if err := t.trackUsage(old, a); err != nil {
			return err
		}
		if err := t.trackQuota(old, a); err != nil {
			return err
		}
		if err := t.trackAllocLists(old, a); err != nil {
			return err
		}
		if err := t.putAlloc(a); err != nil {
			return err
		}
	} else if err := t.Insert(table, obj); err != nil {
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	t.record(table, obj, false)
	return nil
}

func (t *writeTxn) delete(table string, obj any) error {
	t.touched[table] = true
	if table == TableAllocs {
		a := obj.(*state.Allocation)
		old, err := t.allocByID(a.ID)
		if err != nil {
			return err
		}
		if old == nil {
			return fmt.Errorf("delete from %s: %w", table, memdb.ErrNotFound)
		}
		if err := t.trackUsage(old, nil); err != nil {
			return err
		}
		if err := t.trackQuota(old, nil); err != nil {
			return err
		}
		if err := t.trackAllocLists(old, nil); err != nil {
			return err
		}
		if err := t.removeAlloc(a.ID); err != nil {
			return err
		}
	} else if err := t.Delete(table, obj); err != nil {
		return fmt.Errorf("delete from %s: %w", table, err)
	}
	t.record(table, obj, true)
	return nil
}

// commit stamps the index row of every touched table and commits.
func (t *writeTxn) commit() error {
	if err := t.finish(); err != nil {
		return err
	}
	t.seal()
	t.Commit()
	return nil
}

// finish completes the command's writes (the index rows of the tables it
// wrote) without committing the memdb transaction, which ApplyBatch
// shares among several commands.
func (t *writeTxn) finish() error {
	for table := range t.touched {
		if err := t.Insert(TableIndex, &indexEntry{Key: table, Value: t.index}); err != nil {
			return fmt.Errorf("update index of %s: %w", table, err)
		}
	}
	return nil
}

// seal ends the transaction's hold on the rows it kept aside, once its
// last command is finished and just before it commits: from then on they
// are stored rows, never changed again.
func (r *txnRows) seal() {
	r.finishAllocLists()
	r.finishAllocTable()
}

// Events returns the buffer of recent events, which Apply fills.
func (s *Store) Events() *EventBuffer { return s.events }

// reader holds the read methods shared by Store (always the latest
// contents) and StateSnapshot (one point in time). Every read method takes a
// memdb.WatchSet first, which may be nil; it adds the watch channels of what
// it read, so a blocking query wakes exactly when its result may change.
// Returned objects are shared with the store: never mutate them.
type reader struct {
	// txn opens a read transaction; each read method uses one, so what it
	// returns is consistent.
	txn func() *memdb.Txn
	// allocs wakes reads of one allocation (alloc_watch.go); nil means
	// its bucket's channel is watched instead.
	allocs *allocWatch
}

// LatestIndex returns the highest index of any table: the index of the
// last command that wrote something.
func (r reader) LatestIndex() uint64 {
	iter, err := r.txn().Get(TableIndex, indexID)
	if err != nil {
		return 0
	}
	var latest uint64
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		latest = max(latest, raw.(*indexEntry).Value)
	}
	return latest
}

// Index returns the index of the last command that wrote table, 0 if none.
func (r reader) Index(table string) uint64 {
	raw, err := r.txn().First(TableIndex, indexID, table)
	if err != nil || raw == nil {
		return 0
	}
	return raw.(*indexEntry).Value
}

// watch adds ch to ws when ws is not nil.
func watch(ws memdb.WatchSet, ch <-chan struct{}) {
	if ws != nil {
		ws.Add(ch)
	}
}

// first returns the first row of an index lookup as T (the zero T when
// there is none) and records the lookup's watch channel.
func first[T any](ws memdb.WatchSet, txn *memdb.Txn, table, index string, args ...any) (T, error) {
	var zero T
	ch, raw, err := txn.FirstWatch(table, index, args...)
	if err != nil {
		return zero, fmt.Errorf("read %s: %w", table, err)
	}
	watch(ws, ch)
	if raw == nil {
		return zero, nil
	}
	return raw.(T), nil
}

// list returns every row of table matching an index lookup, as T, and
// records the lookup's watch channel. keep, when not nil, filters rows.
func list[T any](ws memdb.WatchSet, txn *memdb.Txn, keep func(T) bool, table, index string, args ...any) ([]T, error) {
	iter, err := txn.Get(table, index, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	watch(ws, iter.WatchCh())
	var out []T
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		v := raw.(T)
		if keep == nil || keep(v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// anyRow reports whether a row matching an index lookup satisfies match,
// stopping at the first that does.
func anyRow[T any](txn *memdb.Txn, table, index string, match func(T) bool, args ...any) (bool, error) {
	iter, err := txn.Get(table, index, args...)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", table, err)
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if match(raw.(T)) {
			return true, nil
		}
	}
	return false, nil
}

// allNamespaces is the namespace argument that selects every namespace.
const allNamespaces = "*"

// byNamespaceAndPrefix lists the rows of a table keyed by a bare ID whose
// namespace is ns (or any, for "*") and whose ID starts with prefix.
func byNamespaceAndPrefix[T any](ws memdb.WatchSet, txn *memdb.Txn, table, ns, prefix string, nsOf func(T) string) ([]T, error) {
	var keep func(T) bool
	if ns != allNamespaces {
		keep = func(v T) bool { return nsOf(v) == ns }
	}
	return list(ws, txn, keep, table, indexID+"_prefix", prefixArg(prefix))
}

// WatchIndex returns the index of the last command that wrote table (0 if
// none) and adds to ws a channel that fires when the table is next
// written. It lets the scheduler's leader services wake on a change of a
// whole table (evaluations, nodes, allocations) at the cost of one row,
// where a watch through a listing would cost the whole table. Until the
// table's first write the channel may also fire on writes of other tables:
// a caller compares the index it gets again, as it must anyway.
func (r reader) WatchIndex(ws memdb.WatchSet, table string) uint64 {
	e, err := first[*indexEntry](ws, r.txn(), TableIndex, indexID, table)
	if err != nil || e == nil {
		return 0
	}
	return e.Value
}

// WatchLatestIndex is LatestIndex, adding to ws a channel that fires at the
// next write of any table: what a caller waiting for the store to reach an
// index blocks on.
func (r reader) WatchLatestIndex(ws memdb.WatchSet) uint64 {
	entries, err := list[*indexEntry](ws, r.txn(), nil, TableIndex, indexID)
	if err != nil {
		return 0
	}
	var latest uint64
	for _, e := range entries {
		latest = max(latest, e.Value)
	}
	return latest
}

// compactor returns the command's compactor, made on first use.
func (t *writeTxn) compactor() *packed.Compactor {
	if t.compact == nil {
		t.compact = t.packer.Compactor(compactRows{t.Txn})
	}
	return t.compact
}

// compactRows is what a compactor reads of the tables (packed.Rows).
type compactRows struct{ txn *memdb.Txn }

var _ packed.Rows = compactRows{}

// Node implements packed.Rows.
func (r compactRows) Node(id string) (*state.Node, error) {
	return first[*state.Node](nil, r.txn, TableNodes, indexID, id)
}

// Job implements packed.Rows.
func (r compactRows) Job(ns, id string) (*state.Job, error) {
	return first[*state.Job](nil, r.txn, TableJobs, indexID, ns, id)
}

// JobVersion implements packed.Rows.
func (r compactRows) JobVersion(ns, id string, version uint64) (*state.Job, error) {
	return first[*state.Job](nil, r.txn, TableJobVersion, indexID, ns, id, version)
}
