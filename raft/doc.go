// Package raft replicates opaque commands through a Raft log into a
// state machine, and answers the consistency questions the servers above it
// need: who leads, has my write committed, has this server caught up with the
// leader.
//
// It wraps hashicorp/raft with the storage sched uses in every mode, dev
// included: a raft-boltdb/v2 log and stable store and a file snapshot store
// under <data_dir>/server/raft, and a TCP transport. It imports nothing else
// of sched: commands are bytes, and the state machine is the FSM interface,
// so the state store can be tested without consensus and consensus without
// the state store.
//
// Concurrent Apply calls share disk writes (group commit): the leader drains
// every proposal that is waiting when it writes, so N concurrent writers cost
// far fewer than N fsyncs, and the FSM receives committed entries in batches.
//
// Reads on any server can be made linearizable with two calls: the leader's
// VerifyLeader returns an index, and WaitForApplied on the reading server
// blocks until its state machine has reached it.
//
// Servers find each other through gossip (Gossip, hashicorp/memberlist),
// whose metadata carries each server's Raft ID and address, HTTP address,
// region and bootstrap_expect. BootstrapWithGossip starts a new cluster
// exactly once, when the expected servers have met and none has state;
// ReconcileMembership is the leader's duty of keeping the Raft
// configuration in line with gossip. SaveSnapshot and RestoreSnapshot move
// the whole state in and out as a checksummed archive.
package raft
