package raft

import (
	"testing"
	"time"

	hraft "github.com/hashicorp/raft"

	"github.com/schedhq/sched/internal/testutil"
)

const testServerName = "server.global.sched"

// A cluster whose raft port speaks mutual TLS replicates as before; a
// peer without a certificate of the cluster's CA cannot reach raft: its
// AppendEntries with a higher term (which used to stall every write) is
// refused, and the leader keeps leading and writing.
func TestTLSTransportRefusesPeersWithoutCertificate(t *testing.T) {
	ca := testutil.NewCA(t)
	var nodes []*Node
	for i, id := range []string{"s1", "s2", "s3"} {
		cfg := testConfig(t, id, t.TempDir(), i == 0)
		cfg.TLS = ca.TLSConfig(t, testServerName)
		nodes = append(nodes, startNode(t, cfg, newKV()))
	}
	leader := nodes[0]
	waitLeader(t, leader, 5*time.Second)
	for _, n := range nodes[1:] {
		if err := leader.AddVoter(n.ID(), n.Addr()); err != nil {
			t.Fatalf("AddVoter(%s): %v", n.ID(), err)
		}
	}
	mustApply(t, leader, "k", "v")
	term := leader.raft.CurrentTerm()

	attack := func(name string, trans *hraft.NetworkTransport) {
		t.Helper()
		defer trans.Close()
		req := &hraft.AppendEntriesRequest{RPCHeader: hraft.RPCHeader{ID: []byte("rogue"), Addr: []byte(trans.LocalAddr())},
			Term: term + 100, Leader: []byte(trans.LocalAddr())}
		var resp hraft.AppendEntriesResponse
		if err := trans.AppendEntries("s1", hraft.ServerAddress(leader.Addr()), req, &resp); err == nil {
			t.Errorf("%s: AppendEntries reached raft (answer %+v)", name, resp)
		}
	}
	plain, err := hraft.NewTCPTransport("127.0.0.1:0", nil, 1, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	attack("plain TCP", plain)
	// A certificate of another CA is no better.
	other, err := newTLSStreamLayer("127.0.0.1:0", nil, testutil.NewCA(t).TLSConfig(t, testServerName))
	if err != nil {
		t.Fatal(err)
	}
	attack("foreign certificate", hraft.NewNetworkTransportWithConfig(&hraft.NetworkTransportConfig{Stream: other, MaxPool: 1, Timeout: time.Second}))

	if got := leader.raft.CurrentTerm(); got != term || !leader.IsLeader() {
		t.Fatalf("after the attacks: term %d (was %d), leader %v", got, term, leader.IsLeader())
	}
	mustApply(t, leader, "k2", "v2")
}

// CheckPeerTLS accepts a server of the cluster's CA and refuses a plain
// TCP listener and a server of another CA.
func TestCheckPeerTLS(t *testing.T) {
	ca := testutil.NewCA(t)
	mine := ca.TLSConfig(t, testServerName)
	good, err := newTLSStreamLayer("127.0.0.1:0", nil, ca.TLSConfig(t, testServerName))
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	go func() {
		for {
			c, err := good.Accept()
			if err != nil {
				return
			}
			go func() { c.Read(make([]byte, 1)); c.Close() }()
		}
	}()
	ctx := ctxT(t, 10*time.Second)
	if err := CheckPeerTLS(ctx, good.Addr().String(), mine); err != nil {
		t.Errorf("a server of the cluster's CA: %v", err)
	}
	plain := testutil.PlainListener(t)
	if err := CheckPeerTLS(ctx, plain.Addr().String(), mine); err == nil {
		t.Error("a plain TCP server passed")
	}
	foreign, err := newTLSStreamLayer("127.0.0.1:0", nil, testutil.NewCA(t).TLSConfig(t, testServerName))
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Close()
	go func() {
		for {
			c, err := foreign.Accept()
			if err != nil {
				return
			}
			go func() { c.Read(make([]byte, 1)); c.Close() }()
		}
	}()
	if err := CheckPeerTLS(ctx, foreign.Addr().String(), mine); err == nil {
		t.Error("a server of another CA passed")
	}
}
