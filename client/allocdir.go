package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/state"
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
// Nothing more, and only when something uses it: the tree is built
// before the first task starts when any task needs it (its driver is not
// a dirUser that says otherwise, or it has templates, artifacts, a
// dispatch payload, volume mounts or services), else on first use (the
// fs and logs endpoints). Six directories per allocation were a tenth of
// a dev agent's CPU while its client started mock allocations by the
// thousand (issue 34).
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

// dirUser is implemented by a driver that can tell whether a task with
// config uses the allocation's directories (its working directory, its
// logs). A driver that does not implement it gets them built before its
// tasks start.
type dirUser interface {
	UsesTaskDirs(config map[string]any) bool
}

// taskNeedsDirs reports whether task t, run by drv, needs the allocation
// directory built before it starts: its driver uses it, or the client
// writes into it for the task (templates, artifacts, a dispatch payload),
// or something reaches the task through it (volume mounts, services and
// their script checks).
func taskNeedsDirs(t *state.Task, drv driver.Driver) bool {
	if len(t.Templates) > 0 || len(t.Artifacts) > 0 || t.DispatchPayload != nil ||
		len(t.VolumeMounts) > 0 || len(t.Services) > 0 {
		return true
	}
	if du, ok := drv.(dirUser); ok {
		return du.UsesTaskDirs(t.Config)
	}
	// An unknown driver (nil) fails the task before it uses anything.
	return drv != nil
}
