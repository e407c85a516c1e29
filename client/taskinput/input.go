// Package taskinput prepares what a task reads before and while it runs:
// templates rendered into the task directory (and re-rendered when their
// data change), a dispatched job's payload, and artifacts fetched from
// file:// and http(s):// sources.
//
// Everything here writes only inside the task directory: every
// destination is a relative path that is checked, after symlinks are
// resolved, to stay inside Input.TaskDir.
//
// The task runner calls, in order, FetchArtifacts, WriteDispatchPayload and
// RenderTemplates before it starts the task, and RenderTemplates again
// (through a Rerenderer) whenever the allocation or the node changes while
// the task runs.
package taskinput

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/schedhq/sched/state"
)

// Task event types this package produces data for. The task runner records
// the events; these are the §6 names.
const (
	EventTemplateRendered     = "Template Rendered"
	EventDownloadingArtifacts = "Downloading Artifacts"
)

// Input is everything this package needs about one task.
type Input struct {
	// Task is the task spec: Templates, Artifacts and DispatchPayload are
	// read from it.
	Task *state.Task
	// TaskDir is <alloc dir>/<task>; every destination is relative to it.
	// LocalDir is its local/ (where the dispatch payload goes and the
	// default artifact destination).
	TaskDir  string
	LocalDir string
	// Env is the task's interpolated environment: the `env` template
	// function reads it (not the client's own environment).
	Env map[string]string
	// Meta is the job, group and task meta merged (task wins); see
	// MergeMeta. The `meta` template function reads it.
	Meta map[string]string
	// NodeAttrs are the node's attributes; the `attr` function reads them.
	NodeAttrs map[string]string
	// Node, when set, feeds the `node` template function (ID, Name,
	// Datacenter, NodeClass, NodePool). Nil makes every field empty.
	Node *state.Node
	// Payload is the dispatched job's payload (Job.Payload).
	Payload []byte
	// Owner is the uid (and gid) the task runs as when the client gives
	// it one of its own (the allocation's workload user): every file this
	// package writes for the task (templates, the dispatch payload,
	// artifacts) is handed to it, so a template with perms 0600 is
	// readable by its task. Zero leaves them to the client's user.
	Owner uint32
}

// own hands path to in.Owner, without following a link; nothing when the
// task has no uid of its own.
func (in *Input) own(path string) error {
	if in.Owner == 0 {
		return nil
	}
	if err := os.Lchown(path, int(in.Owner), int(in.Owner)); err != nil {
		return fmt.Errorf("give %s to uid %d: %w", path, in.Owner, err)
	}
	return nil
}

// ownTree hands root and everything below it to in.Owner (an artifact's
// destination), without following links.
func (in *Input) ownTree(root string) error {
	if in.Owner == 0 {
		return nil
	}
	return filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return in.own(path)
	})
}

// MergeMeta merges job, group and task meta: a task key overrides the
// group's, which overrides the job's. Nil inputs are allowed.
func MergeMeta(job, group, task map[string]string) map[string]string {
	out := make(map[string]string, len(job)+len(group)+len(task))
	for _, m := range []map[string]string{job, group, task} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// ErrEscapes reports a destination or source path that would leave the
// task directory.
var ErrEscapes = errors.New("path escapes the task directory")

// insideDir joins rel to root and fails with ErrEscapes when the result,
// after resolving the symlinks of every existing ancestor, is not root or
// below it. rel must be relative: an absolute path is refused too, so a
// job cannot name a host path.
func insideDir(root, rel string) (string, error) {
	if rel == "" {
		return "", fmt.Errorf("empty path: %w", ErrEscapes)
	}
	if filepath.IsAbs(rel) || !filepath.IsLocal(filepath.Clean(rel)) && filepath.Clean(rel) != "." {
		return "", fmt.Errorf("%q: %w", rel, ErrEscapes)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("task directory: %w", err)
	}
	full := filepath.Join(realRoot, rel)
	// Resolve the longest existing prefix: a symlink inside the task
	// directory must not point out of it.
	existing, rest := full, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("%q: %w", rel, err)
	}
	if !within(realRoot, resolved) {
		return "", fmt.Errorf("%q: %w", rel, ErrEscapes)
	}
	return filepath.Join(resolved, rest), nil
}

// within reports whether path is root or below it (both clean, absolute).
func within(root, path string) bool {
	return path == root || strings.HasPrefix(path, root+string(filepath.Separator))
}
