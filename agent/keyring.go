package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	schedhttp "github.com/schedhq/sched/http"
	"github.com/schedhq/sched/http/jobs"
	"github.com/schedhq/sched/raft"
	"github.com/schedhq/sched/state"
)

// keyringFile holds a server's gossip keys once they have been managed
// through the keyring endpoints; at start it wins over server.encrypt,
// so a rotated key survives a restart with the old key still in the
// config file.
const keyringFile = "keyring.json"

// savedKeyring is keyringFile's content.
type savedKeyring struct {
	Primary string   `json:"primary"`
	Keys    []string `json:"keys"`
}

// keyringPath is where this server keeps its keyring.
func (a *Agent) keyringPath() string { return filepath.Join(a.cfg.DataDir, "server", keyringFile) }

// gossipKeys are the keys gossip starts with: the saved keyring when there
// is one, else server.encrypt alone (nil: no encryption).
func (a *Agent) gossipKeys() (primary []byte, others [][]byte, err error) {
	b, err := os.ReadFile(a.keyringPath())
	if errors.Is(err, os.ErrNotExist) {
		key, err := a.cfg.EncryptKey()
		return key, nil, err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("gossip keyring: %w", err)
	}
	var saved savedKeyring
	if err := json.Unmarshal(b, &saved); err != nil {
		return nil, nil, fmt.Errorf("gossip keyring %s: %w", a.keyringPath(), err)
	}
	if primary, err = raft.DecodeGossipKey(saved.Primary); err != nil {
		return nil, nil, fmt.Errorf("gossip keyring %s: primary: %w", a.keyringPath(), err)
	}
	for _, k := range saved.Keys {
		key, err := raft.DecodeGossipKey(k)
		if err != nil {
			return nil, nil, fmt.Errorf("gossip keyring %s: %w", a.keyringPath(), err)
		}
		others = append(others, key)
	}
	if cfgKey, _ := a.cfg.EncryptKey(); cfgKey != nil && !bytes.Equal(cfgKey, primary) {
		a.log.Warn("server.encrypt differs from the saved gossip keyring; the keyring's primary key is used", "keyring", a.keyringPath())
	}
	return primary, others, nil
}

// localKeyring runs op on this server's keyring and saves the result.
func (c *clusterState) localKeyring(op, key string) (raft.Keyring, error) {
	if c.gossip == nil {
		return raft.Keyring{}, fmt.Errorf("%w: this server does not gossip (dev mode)", jobs.ErrKeyringInput)
	}
	c.keyringMu.Lock()
	defer c.keyringMu.Unlock()
	var err error
	switch op {
	case "list":
	case "install":
		err = c.gossip.InstallKey(key)
	case "use":
		err = c.gossip.UseKey(key)
	case "remove":
		err = c.gossip.RemoveKey(key)
	default:
		err = fmt.Errorf("unknown operation %q", op)
	}
	if err != nil {
		return raft.Keyring{}, fmt.Errorf("%w: %v", jobs.ErrKeyringInput, err)
	}
	ring, err := c.gossip.Keyring()
	if err != nil {
		return raft.Keyring{}, fmt.Errorf("%w: %v", jobs.ErrKeyringInput, err)
	}
	if op != "list" {
		if err := c.a.saveKeyring(ring); err != nil {
			return ring, err
		}
		c.a.log.Info("gossip keyring changed", "op", op)
	}
	return ring, nil
}

// saveKeyring writes the keyring (0600, replaced atomically).
func (a *Agent) saveKeyring(ring raft.Keyring) error {
	b, err := json.Marshal(savedKeyring{Primary: ring.Primary, Keys: ring.Keys})
	if err != nil {
		return err
	}
	tmp := a.keyringPath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("save gossip keyring: %w", err)
	}
	if err := os.Rename(tmp, a.keyringPath()); err != nil {
		return fmt.Errorf("save gossip keyring: %w", err)
	}
	return nil
}

// keyringFanoutTimeout bounds asking one other server.
const keyringFanoutTimeout = 10 * time.Second

// Keyring implements jobs.KeyringManager. Without local it runs op
// here and on every other live server gossip knows (over their HTTP API,
// ?local=true, with the caller's token), and adds the answers up; a server
// that fails is named in Messages and makes the whole answer an error, so
// a rotation is never reported done while a server missed a step.
func (c *clusterState) Keyring(ctx context.Context, op, key string, local bool, token string) (*state.KeyringResponse, error) {
	if op != "list" {
		// A malformed key is refused before any server changes.
		if _, err := raft.DecodeGossipKey(key); err != nil {
			return nil, fmt.Errorf("%w: Key: %v", jobs.ErrKeyringInput, err)
		}
	}
	resp := &state.KeyringResponse{Messages: map[string]string{}, Keys: map[string]int{}, PrimaryKeys: map[string]int{}}
	add := func(ring raft.Keyring) {
		resp.NumNodes++
		resp.PrimaryKeys[ring.Primary]++
		for _, k := range ring.Keys {
			resp.Keys[k]++
		}
	}
	// This server first: what it refuses (a key not installed, the
	// primary removed) no other server is asked to do.
	ring, err := c.localKeyring(op, key)
	if err != nil {
		return nil, err
	}
	add(ring)
	if local {
		return resp, nil
	}
	type answer struct {
		name string
		ring raft.Keyring
		err  error
	}
	var others []raft.Member
	for _, m := range c.gossip.Members() {
		if m.ID != c.a.node.ID() && m.Status == raft.MemberAlive {
			others = append(others, m)
		}
	}
	answers := make(chan answer, len(others))
	for _, m := range others {
		go func() {
			r, err := c.peerKeyring(ctx, m, op, key, token)
			answers <- answer{m.Name, r, err}
		}()
	}
	for range others {
		a := <-answers
		if a.err != nil {
			resp.Messages[a.name] = a.err.Error()
			continue
		}
		add(a.ring)
	}
	if len(resp.Messages) > 0 {
		names := make([]string, 0, len(resp.Messages))
		for n, m := range resp.Messages {
			names = append(names, n+": "+m)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("keyring %s failed on %d of %d servers: %s", op, len(resp.Messages), len(others)+1, strings.Join(names, "; "))
	}
	return resp, nil
}

// peerKeyring runs op on another server's keyring alone.
func (c *clusterState) peerKeyring(ctx context.Context, m raft.Member, op, key, token string) (raft.Keyring, error) {
	if m.HTTPAddr == "" {
		return raft.Keyring{}, errors.New("no HTTP address advertised")
	}
	ctx, cancel := context.WithTimeout(ctx, keyringFanoutTimeout)
	defer cancel()
	method, path, body := http.MethodPost, "/v1/agent/keyring/"+op+"?local=true", io.Reader(nil)
	if op == "list" {
		method = http.MethodGet
	} else {
		b, _ := json.Marshal(state.KeyringRequest{Key: key})
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.a.serversScheme()+"://"+m.HTTPAddr+path, body)
	if err != nil {
		return raft.Keyring{}, err
	}
	if token != "" {
		req.Header.Set(schedhttp.HeaderToken, token)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return raft.Keyring{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return raft.Keyring{}, fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	var kr state.KeyringResponse
	if err := json.Unmarshal(b, &kr); err != nil {
		return raft.Keyring{}, err
	}
	var ring raft.Keyring
	for k := range kr.PrimaryKeys {
		ring.Primary = k
	}
	for k := range kr.Keys {
		ring.Keys = append(ring.Keys, k)
	}
	return ring, nil
}
