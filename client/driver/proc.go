package driver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// clockTicks is USER_HZ, the unit of the times in /proc/<pid>/stat. It is
// 100 on every Linux architecture Go supports (the kernel fixes it for
// user space regardless of CONFIG_HZ), and Go cannot ask sysconf without
// cgo.
const clockTicks = 100

// procStat is the part of /proc/<pid>/stat the driver uses.
type procStat struct {
	State      byte
	Pgrp       int
	UTime      uint64 // clock ticks
	STime      uint64 // clock ticks
	StartTicks uint64 // clock ticks after boot
	// ExitStatus is the wait status of a zombie (field 52, Linux 3.5+),
	// -1 when absent.
	ExitStatus int
}

// readProcStat reads /proc/<pid>/stat.
func readProcStat(pid int) (*procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	return parseProcStat(b)
}

// parseProcStat parses a stat line. The command name (field 2) may hold
// spaces and parentheses, so fields are counted from the last ')'.
func parseProcStat(b []byte) (*procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return nil, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+2:]))
	// f[0] is field 3 (state); field n is f[n-3].
	if len(f) < 20 {
		return nil, errors.New("short /proc stat")
	}
	num := func(n int) uint64 {
		v, _ := strconv.ParseUint(f[n-3], 10, 64)
		return v
	}
	s := &procStat{
		State:      f[0][0],
		Pgrp:       int(num(5)),
		UTime:      num(14),
		STime:      num(15),
		StartTicks: num(22),
		ExitStatus: -1,
	}
	if len(f) >= 52-2 {
		if v, err := strconv.Atoi(f[52-3]); err == nil {
			s.ExitStatus = v
		}
	}
	return s, nil
}

// procAlive reports whether pid is the live (not zombie) process that
// started at startTicks. A pid recycled by another process has another
// start time.
func procAlive(pid int, startTicks uint64) (bool, *procStat) {
	s, err := readProcStat(pid)
	if err != nil || s.StartTicks != startTicks {
		return false, nil
	}
	return s.State != 'Z' && s.State != 'X', s
}

// exitFromStatus decodes a wait status into an ExitResult.
func exitFromStatus(status int) *ExitResult {
	ws := syscall.WaitStatus(status)
	switch {
	case ws.Exited():
		return &ExitResult{ExitCode: ws.ExitStatus()}
	case ws.Signaled():
		return &ExitResult{ExitCode: 128 + int(ws.Signal()), Signal: int(ws.Signal())}
	}
	return &ExitResult{Err: ErrExitUnknown}
}

// groupUsage sums CPU ticks and resident bytes over the live members of
// process group pgid.
func groupUsage(pgid int) (cpuTicks, rss uint64, members int, err error) {
	d, err := os.Open("/proc")
	if err != nil {
		return 0, 0, 0, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, 0, 0, err
	}
	page := uint64(os.Getpagesize())
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		s, err := readProcStat(pid)
		if err != nil || s.Pgrp != pgid || s.State == 'Z' {
			continue
		}
		members++
		cpuTicks += s.UTime + s.STime
		if m, err := os.ReadFile("/proc/" + name + "/statm"); err == nil {
			if f := strings.Fields(string(m)); len(f) > 1 {
				pages, _ := strconv.ParseUint(f[1], 10, 64)
				rss += pages * page
			}
		}
	}
	return cpuTicks, rss, members, nil
}

// ticksToDuration converts clock ticks.
func ticksToDuration(t uint64) time.Duration {
	return time.Duration(t) * time.Second / clockTicks
}

// uptime is the time since boot, from /proc/uptime.
func uptime() (time.Duration, error) {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, errors.New("malformed /proc/uptime")
	}
	secs, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("malformed /proc/uptime: %w", err)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// waitExitedNoReap blocks until child pid has exited, leaving it a zombie
// (waitid with WNOWAIT). While the zombie exists its pid, which is also
// the task's process group ID, cannot be reused, so the group can be
// killed safely before the child is reaped.
func waitExitedNoReap(pid int) error {
	const (
		pPID    = 1
		wExited = 0x4
		wNoWait = 0x1000000
	)
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), wExited|wNoWait, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		}
		return errno
	}
}
