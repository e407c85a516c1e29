package command

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"

	"github.com/schedhq/sched/state"
)

// gossipTable is `sched operator gossip`: its one group, keyring.
func (c *operatorCLI) gossipTable() []entry {
	return []entry{
		{"keyring", "Rotate the gossip encryption keys of every server", nil, c.keyringTable()},
	}
}

func (c *operatorCLI) keyringTable() []entry {
	return []entry{
		{"list", "List the keys each server holds and sends with", c.operatorKeyringList, nil},
		{"install", "Add a key on every server (accepted, not yet sent with)", c.operatorKeyringInstall, nil},
		{"use", "Make an installed key the one every server sends with", c.operatorKeyringUse, nil},
		{"remove", "Remove a key that no server sends with", c.operatorKeyringRemove, nil},
		{"generate", "Print a new random key (32 bytes, base64)", c.operatorKeyringGenerate, nil},
	}
}

const keyringHelp = `Rotate with: install NEW, use NEW, remove OLD. Each step runs on every
live server the receiving one knows through gossip, and fails, naming the
servers, if one of them did not take it. Servers save their keyring in
<data_dir>/server/keyring.json, which wins over server.encrypt at start.
Needs agent:write (the list shows the keys).`

func (c *operatorCLI) operatorKeyringList(args []string) int {
	fs, m := c.flagSet("operator gossip keyring list", "[options]", "List the gossip keys of every server.\n\n"+keyringHelp)
	client, code := c.parseClient(fs, m, args, 0, 0)
	if client == nil {
		return code
	}
	resp, err := client.Agent().KeyringList(c.ctx)
	if err != nil {
		return c.fail("listing the gossip keys", err)
	}
	c.printKeyring(resp)
	return 0
}

func (c *operatorCLI) operatorKeyringInstall(args []string) int {
	return c.keyringOp("install", "Installed", args)
}

func (c *operatorCLI) operatorKeyringUse(args []string) int {
	return c.keyringOp("use", "Now sending with", args)
}

func (c *operatorCLI) operatorKeyringRemove(args []string) int {
	return c.keyringOp("remove", "Removed", args)
}

func (c *operatorCLI) keyringOp(op, done string, args []string) int {
	fs, m := c.flagSet("operator gossip keyring "+op, "[options] KEY", "Run `"+op+"` for a base64 gossip key on every server.\n\n"+keyringHelp)
	if stop, code := parseFlags(fs, args, 1, 1); stop {
		return code
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	api := client.Agent()
	call := map[string]func() (*state.KeyringResponse, error){
		"install": func() (*state.KeyringResponse, error) { return api.KeyringInstall(c.ctx, fs.Arg(0)) },
		"use":     func() (*state.KeyringResponse, error) { return api.KeyringUse(c.ctx, fs.Arg(0)) },
		"remove":  func() (*state.KeyringResponse, error) { return api.KeyringRemove(c.ctx, fs.Arg(0)) },
	}[op]
	resp, err := call()
	if err != nil {
		return c.fail("changing the gossip keyring", err)
	}
	fmt.Fprintf(c.stdout, "%s the key on %d servers\n", done, resp.NumNodes)
	return 0
}

func (c *operatorCLI) operatorKeyringGenerate(args []string) int {
	fs, _ := c.flagSet("operator gossip keyring generate", "", "Print a new random gossip key for server.encrypt or `keyring install`.")
	if done, code := parseFlags(fs, args, 0, 0); done {
		return code
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return c.fail("generating a key", err)
	}
	fmt.Fprintln(c.stdout, base64.StdEncoding.EncodeToString(key))
	return 0
}

// printKeyring prints each key with how many servers hold it, the
// primary ones marked.
func (c *operatorCLI) printKeyring(resp *state.KeyringResponse) {
	keys := make([]string, 0, len(resp.Keys))
	for k := range resp.Keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rows := make([][]string, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, []string{k, strconv.Itoa(resp.Keys[k]) + "/" + strconv.Itoa(resp.NumNodes), strconv.Itoa(resp.PrimaryKeys[k]) + "/" + strconv.Itoa(resp.NumNodes)})
	}
	writeTable(c.stdout, []string{"Key", "Servers", "Primary on"}, rows)
}
