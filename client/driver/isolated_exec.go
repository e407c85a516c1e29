package driver

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/schedhq/sched/client/driver/nsinit"
)

var _ Execer = (*Exec)(nil)

// ExecTask implements Execer: the command runs inside the task, in its
// namespaces and root, as its user and in its cgroup. The sched binary
// joins the cgroup (nsinit.JoinArg0) and becomes nsenter (util-linux,
// which the client needs on its PATH for this), which joins the task's
// mount, UTS, IPC and PID namespaces and its root. Like raw_exec's, the
// command is a child of the client in a process group of its own, killed
// when ctx ends.
func (d *Exec) ExecTask(ctx context.Context, req *ExecRequest) (int, error) {
	t, err := d.tasks.get(req.TaskID)
	if err != nil {
		return 0, err
	}
	if t.exit.get() != nil {
		return 0, fmt.Errorf("%s has exited: %w", req.TaskID, ErrTaskNotFound)
	}
	if len(req.Command) == 0 || req.Command[0] == "" {
		return 0, fmt.Errorf("%w: no command", ErrBadConfig)
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return 0, fmt.Errorf("running a command in an exec task needs nsenter (util-linux) on the client's PATH: %w", err)
	}
	initPath, err := d.initPath()
	if err != nil {
		return 0, err
	}
	tu, err := d.taskUser(&TaskConfig{User: req.User, WorkloadUID: req.WorkloadUID})
	if err != nil {
		return 0, err
	}
	var uid, gid uint32
	if tu.cred != nil {
		uid, gid = tu.cred.Uid, tu.cred.Gid
	}
	args := []string{nsinit.JoinArg0, t.cg.Path(), nsenter, "--target", strconv.Itoa(t.pid),
		"--mount", "--uts", "--ipc", "--pid", "--root", "--wd",
		"--setuid", strconv.FormatUint(uint64(uid), 10), "--setgid", strconv.FormatUint(uint64(gid), 10), "--"}
	if t.netns != "" {
		// The allocation's network namespace, by its path: the init's
		// main thread may not be the one that joined it.
		args = slices.Insert(args, 5, "--net="+t.netns)
	}
	args = append(args, req.Command...)
	cmd := &exec.Cmd{Path: initPath, Args: args, Env: execEnv(req), SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if req.TTY {
		return runOnPTY(ctx, cmd, req)
	}
	return runOnPipes(ctx, cmd, req)
}

// execEnv is the task's environment with its directories as the task
// sees them (req.Dir is the task directory on the host).
func execEnv(req *ExecRequest) []string {
	inRoot := map[string]string{}
	if req.Dir != "" {
		inRoot[req.Dir] = "/"
		inRoot[filepath.Join(req.Dir, "local")] = "/local"
		inRoot[filepath.Join(req.Dir, "secrets")] = "/secrets"
		inRoot[filepath.Join(filepath.Dir(req.Dir), "alloc")] = "/alloc"
	}
	out := make([]string, 0, len(req.Env)+1)
	for _, k := range slices.Sorted(maps.Keys(req.Env)) {
		v := req.Env[k]
		if p, ok := inRoot[v]; ok {
			v = p
		}
		out = append(out, k+"="+v)
	}
	if _, ok := req.Env["PATH"]; !ok {
		out = append(out, "PATH="+defaultPath)
	}
	return out
}
