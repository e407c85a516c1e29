package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/client/workloaduser"
	"github.com/schedhq/sched/state"
)

// One workload user per allocation: on a root client with
// Config.WorkloadUsers set, every allocation gets a uid of its own from
// that range when it first runs (acquireUser). Its tasks that name no user
// run as that uid (gid the same number), which owns the allocation's task
// directories (mode 0700) and, through its group, alloc/ (root's, mode
// 1770, so no task can replace alloc/logs, which the client writes into).
// Another allocation's tasks therefore cannot signal its processes or
// read what it keeps in its directory. The uid is persisted with the
// allocation's state (persistedRun.WorkloadUID), claimed again by a
// restarted client before any new allocation is given one, and freed when
// the allocation is destroyed, after every process still running as it
// is killed.

// setupWorkloadUsers makes the client's pool of workload uids, and lets
// them through the data dir to their allocations (traverse, not list:
// state/ stays the client's). A client that is not root cannot switch
// uids: its tasks run as its own user, as without the range.
func (c *Client) setupWorkloadUsers() error {
	r := c.cfg.WorkloadUsers
	if r.IsZero() {
		return nil
	}
	if os.Geteuid() != 0 {
		c.log.Info("the client does not run as root: tasks run as its own user, not as a workload uid per allocation", "range", r.String())
		return nil
	}
	p, err := workloaduser.NewPool(r)
	if err != nil {
		return err
	}
	for _, d := range []string{c.cfg.DataDir, c.dir, filepath.Join(c.dir, "alloc")} {
		info, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
		if info.Mode().Perm()&0o011 != 0o011 {
			if err := os.Chmod(d, info.Mode()|0o011); err != nil {
				return fmt.Errorf("data dir: %w", err)
			}
		}
	}
	c.users = p
	return nil
}

// workloadUID is the allocation's uid; 0 when it has none.
func (ar *allocRunner) workloadUID() uint32 {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.uid
}

// restoreUser takes back, for an allocation a previous client run
// persisted, the uid it had: its tasks may still run as it. An allocation
// whose tasks ran before, without a uid (a client without workload users
// started them), is given none: its running tasks would lose their own
// directories.
func (ar *allocRunner) restoreUser(r *persistedRun) {
	uid := r.WorkloadUID
	if uid == 0 {
		for _, pt := range r.Tasks {
			if pt != nil && (pt.Handle != nil || pt.State != nil && pt.State.State != state.TaskStatePending) {
				ar.noUser = true
				break
			}
		}
		return
	}
	ar.uid = uid
	if p := ar.c.users; p != nil {
		if err := p.Claim(ar.id, uid); err != nil {
			ar.c.log.Warn("restored allocation's workload uid", "alloc", ar.id, "uid", uid, "error", err)
		}
	}
}

// acquireUser gives the allocation a workload uid unless it has one or
// the client hands out none. It fails when the range is exhausted.
func (ar *allocRunner) acquireUser() error {
	p := ar.c.users
	if p == nil || ar.noUser || ar.workloadUID() != 0 {
		return nil
	}
	uid, err := p.Acquire(ar.id)
	if err != nil {
		return fmt.Errorf("workload user: %w", err)
	}
	ar.mu.Lock()
	ar.uid = uid
	ar.mu.Unlock()
	return nil
}

// ownDirs hands the allocation's directories to its workload uid. It runs
// after every build of the directory tree, which resets the modes of
// directories a previous client run made: a restored task that keeps
// running is not started again, so the driver would not do it. Tasks that
// name a user get their directories from the driver when they start.
func (ar *allocRunner) ownDirs() error {
	uid := ar.workloadUID()
	if uid == 0 || ar.c.users == nil {
		return nil
	}
	if err := driver.ShareAllocDir(ar.dir.Shared(), uid); err != nil {
		return err
	}
	for _, t := range ar.tasks {
		if t.currentTask().User != "" {
			continue
		}
		for _, d := range []string{ar.dir.TaskDir(t.name), ar.dir.LocalDir(t.name), ar.dir.SecretsDir(t.name)} {
			if err := os.Chown(d, int(uid), int(uid)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("give %s to uid %d: %w", d, uid, err)
			}
			if err := os.Chmod(d, 0o700); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("give %s to uid %d: %w", d, uid, err)
			}
		}
	}
	return nil
}

// killUser kills what still runs as the allocation's uid once its tasks
// are dead (a daemon that left its task's process group), so that the
// next allocation given the uid inherits none of it. It reports whether
// the allocation holds its uid in the pool, and so may free it.
func (ar *allocRunner) killUser() bool {
	uid := ar.workloadUID()
	p := ar.c.users
	if uid == 0 || p == nil {
		return false
	}
	if held, ok := p.Held(ar.id); !ok || held != uid {
		return false // another allocation's, as a corrupt state file may claim
	}
	if n, err := workloaduser.Kill(uid); err != nil || n > 0 {
		ar.c.log.Warn("killed processes left by a destroyed allocation", "alloc", ar.id, "uid", uid, "count", n, "error", err)
	}
	return true
}

// releaseUser frees the allocation's uid for another allocation.
func (ar *allocRunner) releaseUser() {
	if p := ar.c.users; p != nil {
		p.Release(ar.id)
	}
}
