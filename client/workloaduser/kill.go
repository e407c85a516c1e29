package workloaduser

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"
)

// killPasses bounds Kill's scans: a process forking as fast as it can
// adds children between two scans, but each scan kills every one it saw.
const killPasses = 10

// killSettle is the pause between two scans that both found processes.
const killSettle = 10 * time.Millisecond

// Kill SIGKILLs every process whose real, effective or saved uid is uid,
// as a client does when it destroys the allocation that held uid: a task
// that escaped its process group (a daemon) would otherwise live on, and
// the next allocation given uid could signal it and it could read that
// allocation's files. It scans /proc until a scan finds none (at most a
// few times) and returns how many processes it signalled. uid 0 is
// refused.
func Kill(uid uint32) (int, error) {
	if uid == 0 {
		return 0, errors.New("workload user: refusing to kill uid 0")
	}
	signalled := map[int]bool{}
	for pass := range killPasses {
		pids, err := processesOf(uid)
		if err != nil {
			return len(signalled), err
		}
		if len(pids) == 0 {
			return len(signalled), nil
		}
		if pass > 0 {
			// A SIGKILLed process takes a moment to become a zombie.
			time.Sleep(killSettle)
		}
		for _, pid := range pids {
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				signalled[pid] = true
			}
		}
	}
	return len(signalled), errors.New("workload user: processes of uid " + strconv.FormatUint(uint64(uid), 10) + " keep appearing")
}

// processesOf lists the live processes running as uid (real, effective or
// saved), zombies left out.
func processesOf(uid uint32) ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/status")
		if err != nil {
			continue // gone meanwhile
		}
		if ids, zombie := statusUIDs(b); !zombie && (ids[0] == uid || ids[1] == uid || ids[2] == uid) {
			out = append(out, pid)
		}
	}
	return out, nil
}

// statusUIDs reads the real, effective and saved uid of a
// /proc/<pid>/status, and whether the process is a zombie. A status
// without a Uid line yields uids that match nothing a pool hands out.
func statusUIDs(b []byte) (ids [3]uint32, zombie bool) {
	ids = [3]uint32{0, 0, 0}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte("State:")):
			f := bytes.Fields(line[len("State:"):])
			zombie = len(f) > 0 && (f[0][0] == 'Z' || f[0][0] == 'X')
		case bytes.HasPrefix(line, []byte("Uid:")):
			f := bytes.Fields(line[len("Uid:"):])
			for i := 0; i < 3 && i < len(f); i++ {
				if v, err := strconv.ParseUint(string(f[i]), 10, 32); err == nil {
					ids[i] = uint32(v)
				}
			}
		}
	}
	return ids, zombie
}
