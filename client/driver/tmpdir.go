package driver

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Each raw_exec and exec task has a temporary directory of its own, tmp/
// in its task directory, named by TMPDIR (unless the task's env sets
// one): what a task leaves there goes with its allocation's directory,
// and no allocation reads another's scratch files in the host's /tmp.
// An exec task sees it as /tmp in its root (made by its init); a
// raw_exec task gets the host path.

// taskTmpDir makes <task dir>/tmp for a task running as cred (nil: the
// client's own user), mode 0700 and the task's own, and returns it.
func taskTmpDir(taskDir string, cred *syscall.Credential) (string, error) {
	if taskDir == "" {
		return "", nil
	}
	dir := filepath.Join(taskDir, "tmp")
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("task tmp dir: %w", err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("task tmp dir %s is not a directory", dir)
	}
	if cred != nil {
		if err := os.Lchown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return "", fmt.Errorf("give %s to uid %d: %w", dir, cred.Uid, err)
		}
	}
	return dir, nil
}

// withTmpDir is env with TMPDIR set to dir, unless env sets it or dir is
// empty. env is not changed.
func withTmpDir(env map[string]string, dir string) map[string]string {
	if dir == "" {
		return env
	}
	if _, ok := env["TMPDIR"]; ok {
		return env
	}
	out := make(map[string]string, len(env)+1)
	for k, v := range env {
		out[k] = v
	}
	out["TMPDIR"] = dir
	return out
}
