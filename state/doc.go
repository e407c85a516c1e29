// Package state owns sched's domain: the types of both APIs (jobs, evaluations,
// allocations, deployments, nodes, namespaces, and later ACL and management
// resources), their validation and canonicalization, the go-memdb schema that
// holds them, the replicated commands and their deterministic Apply, and
// snapshot/restore of every table.
//
// The package imports nothing else of sched. Raft hands it opaque command bytes
// through Store.Apply; HTTP handlers read it through the Store's read methods,
// passing a memdb.WatchSet to block on changes.
//
// Objects returned by the Store are shared with the store's immutable radix
// trees: callers must never mutate them in place. Copy, change, write back.
package state
