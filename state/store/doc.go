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
// Objects returned by the Store are shared with the store's immutable radix
// trees: callers must never mutate them in place. Copy, change, write back.
package store
