package driver

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/user"
	"slices"
	"strconv"
	"syscall"
)

// ErrRawExecDisabled is the answer of a raw_exec driver its client has not
// enabled: a task under it would run with the client's privileges and no
// isolation, so an operator must opt in (client { raw_exec { enabled =
// true } }).
var ErrRawExecDisabled = errors.New("raw_exec is disabled on this client (enable it with client { raw_exec { enabled = true } })")

// RawExecPolicy is what a client allows raw_exec tasks. Its zero value
// runs every task as the task's user, its allocation's workload uid
// (TaskConfig.WorkloadUID) or the client's own, as a test or an embedded
// client wants; agents build it from their configuration, where raw_exec
// is off unless enabled and a root client runs tasks as their
// allocation's workload uid (or nobody, with dynamic users off).
type RawExecPolicy struct {
	// Disabled refuses every task, and the driver fingerprints as not
	// detected, so servers place no raw_exec task on the node.
	Disabled bool
	// DefaultUser runs tasks that name no user when the client runs as
	// root and the task has no workload uid. Empty: the client's own
	// user.
	DefaultUser string
	// DeniedUsers may not run tasks, whether a task names them or they
	// are the default; "root" also denies every user with uid 0.
	DeniedUsers []string
}

// taskUser is who a task runs as: its name (for messages) and its
// credential, nil for the client's own user.
type taskUser struct {
	name string
	cred *syscall.Credential
	// workload: cred is the allocation's workload uid, which has no
	// passwd entry and owns the allocation's directories.
	workload bool
}

// taskUser is who a task that asked for user requested runs as (empty:
// it named none), workload being its allocation's uid (0: none), or an
// error naming the policy that refuses it. A root client runs a task that
// names no user as the workload uid, else as DefaultUser; a task that
// names one runs as that user, which the deny list may refuse.
func (p RawExecPolicy) taskUser(requested string, workload uint32) (taskUser, error) {
	name := requested
	if name == "" && os.Geteuid() == 0 {
		if workload != 0 {
			return taskUser{name: "uid " + strconv.FormatUint(uint64(workload), 10), cred: workloadCredential(workload), workload: true}, nil
		}
		name = p.DefaultUser
	}
	if name == "" {
		cur, err := user.Current()
		if err != nil {
			return taskUser{}, fmt.Errorf("client user: %w", err)
		}
		if err := p.allowed(cur); err != nil {
			return taskUser{}, err
		}
		return taskUser{name: cur.Username}, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return taskUser{}, fmt.Errorf("user %q: %w", name, err)
	}
	if err := p.allowed(u); err != nil {
		return taskUser{}, err
	}
	cred, err := credentialFor(name)
	if err != nil {
		return taskUser{}, err
	}
	if cred != nil && workload != 0 {
		// A named user in an allocation that has a workload uid: the
		// allocation's group lets it into the shared alloc/.
		cred.Groups = append(cred.Groups, workload)
	}
	return taskUser{name: name, cred: cred}, nil
}

// workloadCredential runs a process as uid, with the gid of the same
// number and no supplementary groups: Groups is empty and NoSetGroups
// false, so the root client's own groups are dropped (setgroups(0)).
func workloadCredential(uid uint32) *syscall.Credential {
	return &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}
}

// env is the environment a task of tu runs with: env itself, plus HOME
// (the task directory) for a workload uid, which has no passwd entry and
// so no home of its own, when env sets none. env is not changed.
func (tu taskUser) env(env map[string]string, taskDir string) map[string]string {
	if !tu.workload || taskDir == "" {
		return env
	}
	if _, ok := env["HOME"]; ok {
		return env
	}
	out := maps.Clone(env)
	if out == nil {
		out = map[string]string{}
	}
	out["HOME"] = taskDir
	return out
}

// allowed refuses a user of the deny list.
func (p RawExecPolicy) allowed(u *user.User) error {
	if slices.Contains(p.DeniedUsers, u.Username) || (u.Uid == "0" && slices.Contains(p.DeniedUsers, "root")) {
		return fmt.Errorf("user %q (uid %s) may not run raw_exec tasks on this client (client.raw_exec.denied_users)", u.Username, u.Uid)
	}
	return nil
}

// giveDirs hands the task's own directories to the user it runs as and
// lets it into the shared alloc/ directory. The log directory stays the
// client's.
//
// A workload uid (one per allocation) gets its task directories with
// mode 0700, and alloc/ becomes the client's with the allocation's group,
// mode 1770: the allocation's tasks share it, other allocations' uids
// enter none of it. Without a workload uid, alloc/ is opened to every
// user (sticky, as /tmp: tasks of different users share it without
// deleting each other's files), as a named user's tasks need. In both
// cases the sticky bit keeps a task from renaming logs/, which the client
// writes into.
func giveDirs(cfg *TaskConfig, tu taskUser) error {
	cred := tu.cred
	for _, d := range []string{cfg.TaskDir, cfg.LocalDir, cfg.SecretsDir} {
		if d == "" {
			continue
		}
		if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("give %s to uid %d: %w", d, cred.Uid, err)
		}
		if tu.workload {
			if err := os.Chmod(d, 0o700); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("give %s to uid %d: %w", d, cred.Uid, err)
			}
		}
	}
	if cfg.AllocDir == "" {
		return nil
	}
	if cfg.WorkloadUID != 0 {
		if err := ShareAllocDir(cfg.AllocDir, cfg.WorkloadUID); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.Chmod(cfg.AllocDir, 0o777|os.ModeSticky); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("share %s: %w", cfg.AllocDir, err)
	}
	return nil
}

// ShareAllocDir gives an allocation's shared alloc/ directory to its
// workload uid's group, mode 1770: the client (root) owns it, so no task
// can rename the logs/ directory the client writes into, and no other
// allocation's uid can enter it.
func ShareAllocDir(dir string, uid uint32) error {
	if err := os.Chown(dir, -1, int(uid)); err != nil {
		return fmt.Errorf("share %s with gid %d: %w", dir, uid, err)
	}
	if err := os.Chmod(dir, 0o770|os.ModeSticky); err != nil {
		return fmt.Errorf("share %s with gid %d: %w", dir, uid, err)
	}
	return nil
}

// ptrCopy returns a shallow copy of cfg, so that the driver's choices do
// not change its caller's config.
func ptrCopy(cfg *TaskConfig) *TaskConfig {
	c := *cfg
	return &c
}
