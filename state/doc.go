// Package state owns sched's domain types: jobs, evaluations, allocations,
// deployments, nodes, namespaces, services, ACL tokens and policies, their
// validation, canonicalization, diff and copy, and the /v1 wire types.
//
// It imports nothing else of sched and no storage or encoding library, so
// the Go client, the CLI and the client agent link it without the store.
// The go-memdb tables, the replicated commands and their Apply live in
// state/store; the management API's domain in state/mgmt.
//
// Objects read from the store are shared with its immutable radix trees:
// callers must never mutate them in place. Copy, change, write back.
package state
