package raft

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
)

// DefaultGossipAddr is where gossip listens (TCP and UDP) when
// GossipConfig.BindAddr is empty.
const DefaultGossipAddr = "127.0.0.1:4648"

// DefaultReapAfter is how long a failed or departed member stays listed
// (and so visible to the membership reconciler) before it is forgotten.
const DefaultReapAfter = 24 * time.Hour

// GossipConfig configures a Gossip. Meta.ID is required; every other
// field's zero value means the default documented on it.
type GossipConfig struct {
	// BindAddr is the host:port memberlist listens on, TCP and UDP. Empty
	// means DefaultGossipAddr; port 0 picks a free port (see LocalAddr).
	BindAddr string
	// AdvertiseAddr is the host:port other servers reach this one at.
	// Empty means the bound address, or, when bound to a wildcard IP, the
	// first private IP of the machine.
	AdvertiseAddr string
	// EncryptKey, when set, is the AES key (16, 24 or 32 bytes) every
	// gossip message is encrypted and authenticated with. Servers without
	// the same key cannot join.
	EncryptKey []byte
	// Keys are more keys gossip accepts messages under besides
	// EncryptKey (which it sends with): a keyring being rotated. Ignored
	// without EncryptKey.
	Keys [][]byte
	// Meta is what this server tells the others about itself.
	Meta ServerMeta
	// ReapAfter is how long a failed or departed member stays listed.
	// Zero means DefaultReapAfter.
	ReapAfter time.Duration
	// Logger receives memberlist's logs. Nil means an hclog logger at info
	// level on stderr.
	Logger hclog.Logger

	// tune, when set, adjusts memberlist's timing (tests shorten it).
	tune func(*memberlist.Config)
}

// ErrNothingToJoin: Join was given no address other than this server's own.
var ErrNothingToJoin = errors.New("raft: gossip: no address to join other than this server's own")

// MemberStatus is a member's state as gossip sees it.
type MemberStatus string

// Member statuses. A failed member stopped answering probes; a member that
// left announced its departure first.
const (
	MemberAlive  MemberStatus = "alive"
	MemberFailed MemberStatus = "failed"
	MemberLeft   MemberStatus = "left"
)

// Member is one server known through gossip.
type Member struct {
	ServerMeta
	// Addr is the member's gossip address (ip:port).
	Addr   string
	Status MemberStatus
	// Since is when the member entered its current status.
	Since time.Time
	// Protocol versions memberlist negotiated with the member.
	ProtocolMin, ProtocolMax, ProtocolCur uint8
}

// Gossip is this server's membership in the servers' gossip pool
// (hashicorp/memberlist): servers find each other through it, learn each
// other's Raft and HTTP addresses, and notice departures and failures. All
// methods are safe for concurrent use.
type Gossip struct {
	ml        *memberlist.Memberlist
	logger    hclog.Logger
	reapAfter time.Duration
	now       func() time.Time

	metaMu sync.Mutex
	meta   ServerMeta
	enc    []byte

	mu      sync.Mutex
	members map[string]*Member // by server ID
	changed broadcast

	// keyring holds the encryption keys; nil when gossip is not
	// encrypted.
	keyring *memberlist.Keyring

	shutdownOnce sync.Once
	shutdownErr  error
}

// NewGossip starts listening and gossiping. The pool has one member (this
// server) until Join contacts another.
func NewGossip(cfg GossipConfig) (*Gossip, error) {
	if cfg.Meta.ID == "" {
		return nil, errors.New("raft: gossip: Meta.ID is required")
	}
	enc, err := encodeMeta(cfg.Meta)
	if err != nil {
		return nil, err
	}
	if cfg.BindAddr == "" {
		cfg.BindAddr = DefaultGossipAddr
	}
	if cfg.ReapAfter == 0 {
		cfg.ReapAfter = DefaultReapAfter
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "gossip", Level: hclog.Info})
	}
	switch len(cfg.EncryptKey) {
	case 0, 16, 24, 32:
	default:
		return nil, fmt.Errorf("raft: gossip: encryption key is %d bytes; it must be 16, 24 or 32", len(cfg.EncryptKey))
	}
	g := &Gossip{
		logger:    cfg.Logger,
		reapAfter: cfg.ReapAfter,
		now:       time.Now,
		meta:      cfg.Meta,
		enc:       enc,
		members:   map[string]*Member{},
	}

	mc := memberlist.DefaultLANConfig()
	mc.Name = cfg.Meta.ID
	host, port, err := splitHostPort(cfg.BindAddr)
	if err != nil {
		return nil, fmt.Errorf("raft: gossip: BindAddr %q: %w", cfg.BindAddr, err)
	}
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertiseAddr, mc.AdvertisePort = "", port
	if cfg.AdvertiseAddr != "" {
		ah, ap, err := splitHostPort(cfg.AdvertiseAddr)
		if err != nil {
			return nil, fmt.Errorf("raft: gossip: AdvertiseAddr %q: %w", cfg.AdvertiseAddr, err)
		}
		mc.AdvertiseAddr, mc.AdvertisePort = ah, ap
	}
	if len(cfg.EncryptKey) > 0 {
		ring, err := memberlist.NewKeyring(cfg.Keys, cfg.EncryptKey)
		if err != nil {
			return nil, fmt.Errorf("raft: gossip: keyring: %w", err)
		}
		mc.Keyring = ring
		g.keyring = ring
	}
	mc.Delegate = (*gossipDelegate)(g)
	mc.Events = (*gossipEvents)(g)
	mc.Logger = cfg.Logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	if cfg.tune != nil {
		cfg.tune(mc)
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("raft: gossip on %s: %w", cfg.BindAddr, err)
	}
	g.ml = ml
	g.logger.Info("gossip started", "id", cfg.Meta.ID, "addr", g.LocalAddr())
	return g, nil
}

// splitHostPort parses host:port with a numeric port.
func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	return host, port, nil
}

// LocalAddr is the gossip address other servers join: the advertised one.
func (g *Gossip) LocalAddr() string { return g.ml.LocalNode().Address() }

// Local returns this server's metadata as it is gossiped now.
func (g *Gossip) Local() ServerMeta {
	g.metaMu.Lock()
	defer g.metaMu.Unlock()
	return g.meta
}

// UpdateMeta changes this server's metadata and gossips the change.
func (g *Gossip) UpdateMeta(change func(*ServerMeta)) error {
	g.metaMu.Lock()
	m := g.meta
	change(&m)
	m.ID = g.meta.ID // the ID is the gossip node name; it cannot change
	enc, err := encodeMeta(m)
	if err != nil {
		g.metaMu.Unlock()
		return err
	}
	g.meta, g.enc = m, enc
	g.metaMu.Unlock()
	return g.ml.UpdateNode(5 * time.Second)
}

// Join contacts the gossip addresses (host:port; a host without a port
// means port 4648) and merges their view of the pool with ours. It returns
// how many it reached; an address that is our own is skipped, so it never
// counts as a successful join. With no address reached the error says why.
func (g *Gossip) Join(addrs []string) (int, error) {
	self := g.LocalAddr()
	var targets []string
	for _, a := range addrs {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			a = net.JoinHostPort(a, "4648")
		}
		if sameAddr(a, self) {
			continue
		}
		targets = append(targets, a)
	}
	if len(targets) == 0 {
		return 0, ErrNothingToJoin
	}
	n, err := g.ml.Join(targets)
	if n > 0 {
		return n, nil
	}
	return 0, fmt.Errorf("raft: gossip: joining %s: %w", strings.Join(targets, ", "), err)
}

// sameAddr reports whether two host:port strings name the same endpoint,
// resolving host names so "localhost:4648" matches "127.0.0.1:4648".
func sameAddr(a, b string) bool {
	if a == b {
		return true
	}
	ta, err1 := net.ResolveTCPAddr("tcp", a)
	tb, err2 := net.ResolveTCPAddr("tcp", b)
	return err1 == nil && err2 == nil && ta.Port == tb.Port && ta.IP.Equal(tb.IP)
}

// Members returns every server gossip knows, this one included, sorted by
// name then ID. Failed and departed members are listed until ReapAfter
// has passed.
func (g *Gossip) Members() []Member {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reapLocked()
	out := make([]Member, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Member) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Member returns the member with the given server ID.
func (g *Gossip) Member(id string) (Member, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m, ok := g.members[id]
	if !ok {
		return Member{}, false
	}
	return *m, true
}

// Changed returns a channel closed at the next change of membership: a
// join, a failure, a departure or new metadata. Take it, read Members,
// then wait on it, and no change is missed.
func (g *Gossip) Changed() <-chan struct{} { return g.changed.changed() }

// reapLocked forgets members that failed or left more than reapAfter ago.
func (g *Gossip) reapLocked() {
	cutoff := g.now().Add(-g.reapAfter)
	for id, m := range g.members {
		if m.Status != MemberAlive && m.Since.Before(cutoff) {
			delete(g.members, id)
		}
	}
}

// leavePropagation is how long Leave lets each of its two announcements
// spread before going on. memberlist returns once a message reached one
// member; if this server stopped at once, another member probing it could
// declare it failed before hearing that it left, and "failed" is never
// overridden by a later "left".
const leavePropagation = 750 * time.Millisecond

// Leave announces that this server is leaving, so the others mark it left
// rather than failed, and the leader removes it from the Raft configuration.
// It first gossips metadata that says "leaving" (memberlist's own departure
// message does not tell a departure from a failure once it arrives), then
// memberlist's departure, each with up to timeout to go out and a moment
// to spread. Call Shutdown after.
func (g *Gossip) Leave(timeout time.Duration) error {
	if err := g.UpdateMeta(func(m *ServerMeta) { m.Leaving = true }); err != nil {
		return err
	}
	// Deliberate protocol delays, not waits for state: nothing here can
	// observe the other members' views.
	<-time.After(leavePropagation)
	if err := g.ml.Leave(timeout); err != nil {
		return err
	}
	<-time.After(leavePropagation)
	return nil
}

// Shutdown stops gossiping without announcing a departure: the others will
// mark this server failed. It is safe to call more than once.
func (g *Gossip) Shutdown() error {
	g.shutdownOnce.Do(func() {
		g.shutdownErr = g.ml.Shutdown()
		g.changed.notify()
	})
	return g.shutdownErr
}

// record updates the member list from a memberlist node and wakes waiters.
func (g *Gossip) record(n *memberlist.Node, status MemberStatus) {
	meta, err := decodeMeta(n.Meta)
	if err != nil {
		g.logger.Debug("ignoring gossip member", "name", n.Name, "addr", n.Address(), "error", err)
		return
	}
	if meta.ID != n.Name {
		g.logger.Warn("ignoring gossip member whose name is not its server ID", "name", n.Name, "id", meta.ID)
		return
	}
	g.mu.Lock()
	prev, ok := g.members[meta.ID]
	m := &Member{
		ServerMeta:  meta,
		Addr:        n.Address(),
		Status:      status,
		Since:       g.now(),
		ProtocolMin: n.PMin, ProtocolMax: n.PMax, ProtocolCur: n.PCur,
	}
	if ok && prev.Status == status {
		m.Since = prev.Since
	}
	g.members[meta.ID] = m
	g.mu.Unlock()
	if !ok || prev.Status != status {
		g.logger.Info("gossip member "+string(status), "name", meta.Name, "id", meta.ID, "addr", m.Addr)
	}
	g.changed.notify()
}

// gossipEvents is the Gossip seen as memberlist's EventDelegate.
type gossipEvents Gossip

var _ memberlist.EventDelegate = (*gossipEvents)(nil)

func (e *gossipEvents) NotifyJoin(n *memberlist.Node) { (*Gossip)(e).record(n, MemberAlive) }

// NotifyLeave reports a departure or a failure; memberlist does not say
// which (the node's State field is not maintained), so the member's last
// metadata decides: a member that announced it was leaving has left.
func (e *gossipEvents) NotifyLeave(n *memberlist.Node) {
	status := MemberFailed
	if meta, err := decodeMeta(n.Meta); err == nil && meta.Leaving {
		status = MemberLeft
	}
	(*Gossip)(e).record(n, status)
}

func (e *gossipEvents) NotifyUpdate(n *memberlist.Node) { (*Gossip)(e).record(n, MemberAlive) }

// gossipDelegate is the Gossip seen as memberlist's Delegate: it supplies
// the metadata and carries no other data (servers exchange nothing else
// over gossip).
type gossipDelegate Gossip

var _ memberlist.Delegate = (*gossipDelegate)(nil)

func (d *gossipDelegate) NodeMeta(limit int) []byte {
	d.metaMu.Lock()
	defer d.metaMu.Unlock()
	if len(d.enc) > limit {
		// encodeMeta already refused anything over MaxMetaSize; a smaller
		// limit would be memberlist's own change of mind.
		return nil
	}
	return slices.Clone(d.enc)
}

func (d *gossipDelegate) NotifyMsg([]byte)                           {}
func (d *gossipDelegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *gossipDelegate) LocalState(join bool) []byte                { return nil }
func (d *gossipDelegate) MergeRemoteState(buf []byte, join bool)     {}
