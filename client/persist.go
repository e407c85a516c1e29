package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/state"
)

// What a client keeps about its allocations so that, restarted on the
// same data dir, it finds its tasks again instead of starting duplicates:
// for each allocation, the allocation as last received and its runner's
// state (task states, driver handles, restart counters), written only
// when something a restarted client needs changes, as one record of the
// state journal (journal.go), because on some disks each file operation
// costs a visible fraction of a millisecond and a client starts
// allocations by the thousand. Nothing is fsynced: the state survives
// the client process dying (a crash or SIGKILL of the agent, the case
// that matters), not the machine losing power, after which no task
// survives either.

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

// stateStore reads and writes the allocations' state: the journal, and
// the per-allocation files of earlier versions. Its methods are safe for
// concurrent use.
type stateStore struct {
	dir string

	mu sync.Mutex
	// f is the journal open for appending (nil until the first put or
	// load) and size its length.
	f    *os.File
	size int64
	// live is where each allocation's live records lie, liveBytes their
	// sum.
	live      map[string]liveRecs
	liveBytes int64
	// legacy holds the allocations load found in files of earlier
	// versions: remove deletes those.
	legacy map[string]bool
	// jobs are the encodings of the jobs last written, nextJob the one
	// to replace next (journal.go).
	jobs    []encodedJob
	nextJob int
	// queue holds the records waiting to be written, writing is set while
	// a put writes them with mu released, and written is signalled when it
	// has (journal.go: appendLocked).
	queue   []*queuedRecord
	writing bool
	// pending holds the queued records' frames, in order; spare is the
	// buffer of the last group written, for reuse; enc encodes into
	// pending (journal.go: frameLocked).
	pending, spare []byte
	enc            *json.Encoder
	written        *sync.Cond
}

// stateSuffix ends the name of an allocation's file of earlier versions.
const stateSuffix = ".json"

// persistedAlloc is one allocation's file.
type persistedAlloc struct {
	Alloc *state.Allocation
	Run   *persistedRun
}

// put records an allocation and its runner's state.
func (s *stateStore) put(a *state.Allocation, r *persistedRun) error {
	return s.journalPut(&journalRecord{ID: a.ID, Alloc: a, Run: r})
}

// putRun records the runner's state of an allocation put before, whose
// allocation has not changed since.
func (s *stateStore) putRun(id string, r *persistedRun) error {
	return s.journalPut(&journalRecord{ID: id, Run: r})
}

// remove forgets an allocation.
func (s *stateStore) remove(id string) error { return s.journalRemove(id) }

// load reads every allocation kept on disk: the files of earlier
// versions, then the journal, whose records override them. A file that
// cannot be read, or the journal's torn tail, is reported in errs and
// skipped: one corrupt file must not keep the client from starting.
func (s *stateStore) load() (out []*persistedAlloc, errs []error) {
	byID := map[string]*persistedAlloc{}
	legacy := map[string]bool{}
	entries, err := os.ReadDir(s.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
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
		legacy[id] = true
		byID[id] = &p
	}
	s.mu.Lock()
	s.legacy = legacy
	s.mu.Unlock()
	tailErr, err := s.loadJournal(byID)
	if tailErr != nil {
		errs = append(errs, fmt.Errorf("restore: %w", tailErr))
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("restore: %w", err))
	}
	for id, p := range byID {
		if p.Alloc == nil || p.Alloc.ID != id || p.Alloc.Job == nil {
			errs = append(errs, fmt.Errorf("restore alloc %s: its state is incomplete", id))
			continue
		}
		if p.Run == nil {
			p.Run = &persistedRun{}
		}
		out = append(out, p)
	}
	return out, errs
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
