// Package store holds sched's replicated state: the go-memdb schema of
// every table of both APIs, the commands (a type byte plus a msgpack body)
// and their deterministic Apply, the read methods HTTP handlers and the
// scheduler use (passing a memdb.WatchSet to block on changes), and
// snapshot/restore of every table.
//
// Raft hands it opaque command bytes through Store.Apply. Apply records
// what the leader stamped (IDs, times): it reads no clock, draws no random
// number and does no I/O.
//
// The memory machinery that makes a million stored allocations fit in
// about a kilobyte and a half each (the compaction of what allocations
// repeat, the interned count maps, the allocation records of snapshots
// and packed plans, the slabs they decode into, the buckets the
// allocations table holds) lives in internal/packed, reached through the
// one Packer a Store holds. It changes what is shared in memory, never
// what is read.
//
// Objects returned by the Store are shared with the store's immutable radix
// trees: callers must never mutate them in place. Copy, change, write back.
package store
