package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"
)

// StartupProfileEnv names the environment variable that makes `sched
// agent` write a CPU profile of its start to the file it names: from
// before the state is restored until the agent first serves a consistent
// read (the leader confirmed and every committed entry applied), or
// startupProfileLimit. A restart at millions of allocations spends its
// time before the HTTP API answers, where /v1/agent/pprof cannot reach it.
// A "%p" in the name is replaced by the process ID, so that the starts of
// an agent restarted by a benchmark keep a profile each.
const StartupProfileEnv = "SCHED_STARTUP_CPUPROFILE"

// startupProfileLimit ends a startup profile that never sees a consistent
// read (a follower whose cluster has no leader).
const startupProfileLimit = 10 * time.Minute

// startupProfile is a CPU profile of the agent's start, or nil.
type startupProfile struct {
	f     *os.File
	began time.Time
	log   *slog.Logger
	once  sync.Once
}

// startStartupProfile starts the profile StartupProfileEnv asks for, if
// any; a profile that cannot start is reported on stderr and skipped.
func startStartupProfile(stderr io.Writer) *startupProfile {
	path := os.Getenv(StartupProfileEnv)
	if path == "" {
		return nil
	}
	f, err := os.Create(strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid())))
	if err != nil {
		fmt.Fprintf(stderr, "startup profile: %v\n", err)
		return nil
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(stderr, "startup profile: %v\n", err)
		f.Close()
		return nil
	}
	return &startupProfile{f: f, began: time.Now()}
}

// followAgent ends the profile once a serves a consistent read (at once
// for a client-only agent), logging how long that took.
func (p *startupProfile) followAgent(a *Agent) {
	if p == nil {
		return
	}
	p.log = a.log
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), startupProfileLimit)
		defer cancel()
		for a.node != nil && ctx.Err() == nil && !consistentReadOnce(ctx, a) {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
		p.stop()
	}()
}

// consistentReadOnce reports whether a consistent read succeeds now.
func consistentReadOnce(ctx context.Context, a *Agent) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	idx, err := a.node.VerifyLeader(ctx)
	return err == nil && a.node.WaitForApplied(ctx, idx) == nil
}

// stop ends the profile (once; a nil profile does nothing).
func (p *startupProfile) stop() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		pprof.StopCPUProfile()
		err := p.f.Close()
		if p.log != nil {
			p.log.Warn("startup profile written", "file", p.f.Name(), "after", time.Since(p.began).Round(time.Millisecond), "error", err)
		}
	})
}
