package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// allocDir is an allocation's directory tree:
//
//	<data_dir>/client/alloc/<alloc id>/
//	    alloc/            shared by the group's tasks (SCHED_ALLOC_DIR)
//	    alloc/logs/       every task's rotated stdout and stderr
//	    <task>/           the task's working directory
//	    <task>/local/     the task's own files (SCHED_TASK_DIR)
//	    <task>/secrets/   mode 0700 (SCHED_SECRETS_DIR)
//
// Nothing more: a client builds it for every allocation, and on some
// filesystems each directory costs a visible fraction of a millisecond.
type allocDir struct {
	// Root is <data_dir>/client/alloc/<alloc id>.
	Root string
}

// Shared is alloc/, LogDir alloc/logs.
func (d allocDir) Shared() string { return filepath.Join(d.Root, "alloc") }

// LogDir is where the tasks' logs are written.
func (d allocDir) LogDir() string { return filepath.Join(d.Root, "alloc", "logs") }

// TaskDir is <task>/.
func (d allocDir) TaskDir(task string) string { return filepath.Join(d.Root, task) }

// LocalDir is <task>/local.
func (d allocDir) LocalDir(task string) string { return filepath.Join(d.Root, task, "local") }

// SecretsDir is <task>/secrets.
func (d allocDir) SecretsDir(task string) string { return filepath.Join(d.Root, task, "secrets") }

// dirSpec is one directory to create and its mode.
type dirSpec struct {
	path string
	mode os.FileMode
}

// build creates the shared directories and one directory tree per task.
// It is idempotent: a restarted client builds over what is there.
func (d allocDir) build(tasks []string) error {
	dirs := []dirSpec{{d.Shared(), 0o755}, {d.LogDir(), 0o755}}
	for _, t := range tasks {
		if err := checkTaskDirName(t); err != nil {
			return err
		}
		dirs = append(dirs, dirSpec{d.TaskDir(t), 0o755}, dirSpec{d.LocalDir(t), 0o755}, dirSpec{d.SecretsDir(t), 0o700})
	}
	// Parents come before children, so a plain Mkdir per directory does.
	if err := os.Mkdir(d.Root, 0o711); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("build alloc dir: %w", err)
	}
	for _, x := range dirs {
		err := os.Mkdir(x.path, x.mode.Perm())
		if err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("build alloc dir: %w", err)
		}
		// Mkdir applies the umask: set the mode we mean on a directory
		// that was already there (the umask only takes bits away, and
		// these modes give nothing a usual umask takes).
		if err != nil {
			if err := os.Chmod(x.path, x.mode); err != nil {
				return fmt.Errorf("build alloc dir: %w", err)
			}
		}
	}
	return nil
}

// checkTaskDirName refuses a task name that is not one plain path
// element: servers refuse such names, but a job stored before they did
// must not make a client create directories outside the allocation's.
func checkTaskDirName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return fmt.Errorf("task name %q cannot name a directory inside the allocation directory", name)
	}
	return nil
}

// destroy removes the whole tree.
func (d allocDir) destroy() error { return os.RemoveAll(d.Root) }
