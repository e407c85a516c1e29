package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/state"
)

// What a client keeps about its allocations so that, restarted on the
// same data dir, it finds its tasks again instead of starting duplicates:
// one file per allocation,
//
//	<data_dir>/client/state/<alloc id>.json
//
// holding the allocation as last received and its runner's state (task
// states, driver handles, restart counters). A file is replaced whole by
// a rename, so a client killed mid-write leaves the previous version.
// Files are not fsynced: they survive the client process dying (a crash
// or SIGKILL of the agent, the case that matters), not the machine
// losing power, after which no task survives either. One file, written
// only when something a restarted client needs changes, because on some
// disks each file operation costs a visible fraction of a millisecond and
// a client starts allocations by the thousand.

// persistedTask is one task's durable state.
type persistedTask struct {
	State *state.TaskState
	// Handle is the running task's driver handle; nil when not running.
	Handle *driver.TaskHandle `json:",omitempty"`
	// Restart is the restart tracker's window.
	Restart restartWindow
}

// persistedRun is an alloc runner's durable state.
type persistedRun struct {
	Tasks map[string]*persistedTask
	// Stopping is set once the runner began killing the allocation, so a
	// restarted client finishes the job instead of restarting tasks.
	Stopping bool `json:",omitempty"`
	// Failed and Description carry an allocation-level failure (one that
	// happened before any task ran).
	Failed      bool   `json:",omitempty"`
	Description string `json:",omitempty"`
	// TerminalAt is when every task had finished; zero while running.
	TerminalAt time.Time `json:",omitempty"`
	// WorkloadUID is the allocation's workload uid (workload_user.go),
	// which its tasks may still run as; 0: none.
	WorkloadUID uint32 `json:",omitempty"`
}

// stateStore reads and writes the per-allocation files.
type stateStore struct{ dir string }

// stateSuffix ends every allocation's file name.
const stateSuffix = ".json"

// persistedAlloc is one allocation's file.
type persistedAlloc struct {
	Alloc *state.Allocation
	Run   *persistedRun
}

// put records an allocation and its runner's state.
func (s *stateStore) put(a *state.Allocation, r *persistedRun) error {
	return writeJSON(filepath.Join(s.dir, a.ID+stateSuffix), &persistedAlloc{Alloc: a, Run: r})
}

// remove forgets an allocation.
func (s *stateStore) remove(id string) error {
	err := os.Remove(filepath.Join(s.dir, id+stateSuffix))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// load reads every allocation kept on disk. A file that cannot be read is
// reported in errs and skipped: one corrupt file must not keep the client
// from starting.
func (s *stateStore) load() (out []*persistedAlloc, errs []error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []error{err}
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), stateSuffix)
		if !ok || e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		var p persistedAlloc
		if err := readJSON(filepath.Join(s.dir, e.Name()), &p); err != nil {
			errs = append(errs, fmt.Errorf("restore alloc %s: %w", id, err))
			continue
		}
		if p.Alloc == nil || p.Alloc.ID != id || p.Alloc.Job == nil {
			errs = append(errs, fmt.Errorf("restore alloc %s: %s is incomplete", id, e.Name()))
			continue
		}
		if p.Run == nil {
			p.Run = &persistedRun{}
		}
		out = append(out, &p)
	}
	return out, errs
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, b, 0o600)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeFileAtomic replaces path with data through a temporary file and a
// rename, creating the parent directory when it is missing. It makes as
// few system calls as it can: a client writes these files for every
// allocation it starts.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		f, err = os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	}
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	var merr error
	if perm != 0o600 { // CreateTemp's mode
		merr = os.Chmod(tmp, perm)
	}
	if err := errors.Join(werr, cerr, merr); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
