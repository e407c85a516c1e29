package command

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/schedhq/sched/http/api"
)

// operatorCLI holds the commands of `sched operator`: Raft peers,
// snapshots, the gossip keyring and the security check.
type operatorCLI struct{ *cli }

func (c *operatorCLI) table() []entry {
	return []entry{
		{"raft", "Inspect and change the Raft configuration", nil, c.raftTable()},
		{"snapshot", "Save and restore snapshots of the cluster's state", nil, c.snapshotTable()},
		{"gossip", "Manage the gossip encryption keyring", nil, c.gossipTable()},                              // operator_gossip.go
		{"scheduler", "Show and change the scheduler configuration", nil, c.schedulerTable()},                 // operator_scheduler.go
		{"doctor", "List the doors the agents' configuration leaves open, with fixes", c.operatorDoctor, nil}, // operator_doctor.go
	}
}

func (c *operatorCLI) raftTable() []entry {
	return []entry{
		{"list-peers", "List the servers of the Raft configuration", c.operatorRaftListPeers, nil},
		{"remove-peer", "Remove a server from the Raft configuration", c.operatorRaftRemovePeer, nil},
	}
}

func (c *operatorCLI) snapshotTable() []entry {
	return []entry{
		{"save", "Save a snapshot of the cluster's state to a file", c.operatorSnapshotSave, nil},
		{"restore", "Replace the cluster's state with a saved snapshot", c.operatorSnapshotRestore, nil},
	}
}

func (c *operatorCLI) operatorRaftListPeers(args []string) int {
	fs, m := c.flagSet("operator raft list-peers", "[options]",
		"List the servers of the Raft configuration, as the leader knows it.")
	stale := fs.Bool("stale", false, "let any server answer from its own view, without a leader")
	asJSON := c.outputFlags(fs, "print the Raft configuration as JSON")
	client, code := c.parseClient(fs, m, args, 0, 0)
	if client == nil {
		return code
	}
	conf, err := client.Operator().RaftGetConfiguration(c.ctx, &api.QueryOptions{AllowStale: *stale})
	if err != nil {
		return c.fail("retrieving the raft configuration", err)
	}
	if *asJSON {
		return c.printJSON(conf)
	}
	rows := make([][]string, 0, len(conf.Servers))
	for _, s := range conf.Servers {
		st := "follower"
		if s.Leader {
			st = "leader"
		}
		rows = append(rows, []string{orNone(s.Node), s.ID, s.Address, st, fmt.Sprint(s.Voter), s.RaftProtocol})
	}
	writeTable(c.stdout, []string{"Node", "ID", "Address", "State", "Voter", "RaftProtocol"}, rows)
	return 0
}

func (c *operatorCLI) operatorRaftRemovePeer(args []string) int {
	fs, m := c.flagSet("operator raft remove-peer", "[options] -peer-id=ID | -peer-address=HOST:PORT",
		"Remove a server from the Raft configuration. Meant for a server that failed for good; an alive one is added back by the leader as soon as it is seen in gossip.")
	id := fs.String("peer-id", "", "the Raft ID of the server to remove")
	addr := fs.String("peer-address", "", "the Raft address of the server to remove")
	if done, code := parseFlags(fs, args, 0, 0); done {
		return code
	}
	if (*id == "") == (*addr == "") {
		fmt.Fprintln(c.stderr, "Error: exactly one of -peer-id and -peer-address is required")
		return 1
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	if *id != "" {
		err = client.Operator().RaftRemovePeerByID(c.ctx, *id, nil)
	} else {
		err = client.Operator().RaftRemovePeerByAddress(c.ctx, *addr, nil)
	}
	if err != nil {
		return c.fail("removing the peer", err)
	}
	if *id != "" {
		fmt.Fprintf(c.stdout, "Removed peer with ID %q\n", *id)
	} else {
		fmt.Fprintf(c.stdout, "Removed peer with address %q\n", *addr)
	}
	return 0
}

// operatorSnapshotSave writes the archive to a temporary file next to FILE
// and renames it into place only once the server's stream ended cleanly,
// so FILE is never a partial snapshot.
func (c *operatorCLI) operatorSnapshotSave(args []string) int {
	fs, m := c.flagSet("operator snapshot save", "[options] FILE",
		"Save a snapshot of the cluster's state (the leader's, unless -stale) to FILE.")
	stale := fs.Bool("stale", false, "let any server answer with its own state, without a leader")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	path := fs.Arg(0)
	rc, err := client.Operator().Snapshot(c.ctx, &api.QueryOptions{AllowStale: *stale})
	if err != nil {
		return c.fail("taking the snapshot", err)
	}
	defer rc.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return c.fail("creating the file", err)
	}
	n, err := io.Copy(tmp, rc)
	if err == nil {
		err = tmp.Sync()
	}
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return c.fail("writing the snapshot", err)
	}
	fmt.Fprintf(c.stdout, "State file written to %s (%d bytes)\n", path, n)
	return 0
}

func (c *operatorCLI) operatorSnapshotRestore(args []string) int {
	fs, m := c.flagSet("operator snapshot restore", "[options] FILE",
		"Replace the whole cluster's state with the snapshot in FILE, saved by `sched operator snapshot save`. Every write since the snapshot is lost.")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return c.fail("opening the snapshot", err)
	}
	defer f.Close()
	if err := client.Operator().SnapshotRestore(c.ctx, f, nil); err != nil {
		return c.fail("restoring the snapshot", err)
	}
	fmt.Fprintln(c.stdout, "Snapshot Restored")
	return 0
}
