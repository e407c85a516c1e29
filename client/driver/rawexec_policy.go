package driver

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"syscall"
)

// ErrRawExecDisabled is the answer of a raw_exec driver its client has not
// enabled: a task under it would run with the client's privileges and no
// isolation, so an operator must opt in (client { raw_exec { enabled =
// true } }).
var ErrRawExecDisabled = errors.New("raw_exec is disabled on this client (enable it with client { raw_exec { enabled = true } })")

// RawExecPolicy is what a client allows raw_exec tasks. Its zero value
// runs every task as the task's user or the client's own, as a test or an
// embedded client wants; agents build it from their configuration, where
// raw_exec is off unless enabled and a root client runs tasks as nobody.
type RawExecPolicy struct {
	// Disabled refuses every task, and the driver fingerprints as not
	// detected, so servers place no raw_exec task on the node.
	Disabled bool
	// DefaultUser runs tasks that name no user when the client runs as
	// root. Empty: the client's own user.
	DefaultUser string
	// DeniedUsers may not run tasks, whether a task names them or they
	// are the default; "root" also denies every user with uid 0.
	DeniedUsers []string
}

// taskUser is the user task cfg runs as, and its credential (nil for the
// client's own user), or an error naming the policy that refuses it.
func (p RawExecPolicy) taskUser(requested string) (string, *syscall.Credential, error) {
	name := requested
	if name == "" && os.Geteuid() == 0 {
		name = p.DefaultUser
	}
	if name == "" {
		cur, err := user.Current()
		if err != nil {
			return "", nil, fmt.Errorf("client user: %w", err)
		}
		if err := p.allowed(cur); err != nil {
			return "", nil, err
		}
		return cur.Username, nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return "", nil, fmt.Errorf("user %q: %w", name, err)
	}
	if err := p.allowed(u); err != nil {
		return "", nil, err
	}
	cred, err := credentialFor(name)
	return name, cred, err
}

// allowed refuses a user of the deny list.
func (p RawExecPolicy) allowed(u *user.User) error {
	if slices.Contains(p.DeniedUsers, u.Username) || (u.Uid == "0" && slices.Contains(p.DeniedUsers, "root")) {
		return fmt.Errorf("user %q (uid %s) may not run raw_exec tasks on this client (client.raw_exec.denied_users)", u.Username, u.Uid)
	}
	return nil
}

// giveDirs hands the task's own directories to the user it runs as, and
// lets it into the shared alloc/ directory (sticky, as /tmp: tasks of
// different users share it without deleting each other's files). The log
// directory stays the client's.
func giveDirs(cfg *TaskConfig, cred *syscall.Credential) error {
	for _, d := range []string{cfg.TaskDir, cfg.LocalDir, cfg.SecretsDir} {
		if d == "" {
			continue
		}
		if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("give %s to uid %d: %w", d, cred.Uid, err)
		}
	}
	if cfg.AllocDir != "" {
		if err := os.Chmod(cfg.AllocDir, 0o777|os.ModeSticky); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("share %s: %w", cfg.AllocDir, err)
		}
	}
	return nil
}

// ptrCopy returns a shallow copy of cfg, so that the driver's choices do
// not change its caller's config.
func ptrCopy(cfg *TaskConfig) *TaskConfig {
	c := *cfg
	return &c
}
