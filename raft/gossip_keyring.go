package raft

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/hashicorp/memberlist"
)

// ErrGossipNotEncrypted: a keyring operation on a server whose gossip is
// not encrypted. Encryption is turned on by a restart with server.encrypt,
// never at run time: half a pool encrypting would split it.
var ErrGossipNotEncrypted = errors.New("gossip encryption is off on this server: set server.encrypt and restart it before managing keys")

// Keyring is this server's gossip keys, base64 as in server.encrypt:
// Primary encrypts what it sends, Keys (Primary included) decrypt what it
// receives.
type Keyring struct {
	Primary string
	Keys    []string
}

// Keyring returns the keys in use.
func (g *Gossip) Keyring() (Keyring, error) {
	if g.keyring == nil {
		return Keyring{}, ErrGossipNotEncrypted
	}
	var k Keyring
	k.Primary = base64.StdEncoding.EncodeToString(g.keyring.GetPrimaryKey())
	for _, key := range g.keyring.GetKeys() {
		k.Keys = append(k.Keys, base64.StdEncoding.EncodeToString(key))
	}
	return k, nil
}

// DecodeGossipKey reads a base64 key of 16, 24 or 32 bytes.
func DecodeGossipKey(b64 string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("the key is not valid base64: %v", err)
	}
	if err := memberlist.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("the key is %d bytes; it must be 16, 24 or 32", len(key))
	}
	return key, nil
}

// InstallKey adds a key messages are accepted under. Installing a key
// already there is a no-op.
func (g *Gossip) InstallKey(b64 string) error {
	key, err := g.keyOp(b64)
	if err != nil {
		return err
	}
	return g.keyring.AddKey(key)
}

// UseKey makes an installed key the one messages are sent with.
func (g *Gossip) UseKey(b64 string) error {
	key, err := g.keyOp(b64)
	if err != nil {
		return err
	}
	if !g.hasKey(key) {
		return fmt.Errorf("the key is not installed: install it on every server first")
	}
	return g.keyring.UseKey(key)
}

// RemoveKey drops a key; the primary key cannot be removed. Removing a key
// that is not there is a no-op.
func (g *Gossip) RemoveKey(b64 string) error {
	key, err := g.keyOp(b64)
	if err != nil {
		return err
	}
	if bytes.Equal(key, g.keyring.GetPrimaryKey()) {
		return errors.New("the key is the primary key: use another key first")
	}
	return g.keyring.RemoveKey(key)
}

func (g *Gossip) keyOp(b64 string) ([]byte, error) {
	if g.keyring == nil {
		return nil, ErrGossipNotEncrypted
	}
	return DecodeGossipKey(b64)
}

func (g *Gossip) hasKey(key []byte) bool {
	for _, k := range g.keyring.GetKeys() {
		if bytes.Equal(k, key) {
			return true
		}
	}
	return false
}
