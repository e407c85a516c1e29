package agent

import (
	"context"
	"sync"
	"time"
)

// leaderService is a duty only the leader performs: the eval broker, the
// plan applier, blocked evals, node heartbeat timers, GC, and so on. Every
// service rebuilds what it needs from the state store when it starts, so
// nothing held only in a leader's memory is lost by a failover.
type leaderService interface {
	// Name identifies the service in logs.
	Name() string
	// Start begins the duty. ctx is cancelled when leadership is lost.
	// Start must not block beyond setting the duty up.
	Start(ctx context.Context) error
	// Stop ends the duty and waits for its goroutines to exit.
	Stop()
}

// leadership starts the leader services when this server gains leadership
// and stops them, in reverse order, when it loses it.
type leadership struct {
	a        *Agent
	services []leaderService

	mu      sync.Mutex
	running []leaderService
	cancel  context.CancelFunc

	stopCh chan struct{}
	done   chan struct{}

	// established is closed the first time this server's leader duties
	// all run (client_start.go waits on it).
	established     chan struct{}
	establishedOnce sync.Once
}

func newLeadership(a *Agent, services []leaderService) *leadership {
	return &leadership{a: a, services: services, stopCh: make(chan struct{}), done: make(chan struct{}),
		established: make(chan struct{})}
}

// run follows raft's leadership notifications until stop.
func (l *leadership) run() {
	defer close(l.done)
	for {
		select {
		case <-l.stopCh:
			l.revoke()
			return
		case isLeader := <-l.a.node.LeaderCh():
			// A true while already leading means leadership was lost and
			// regained between notifications: rebuild from state.
			l.revoke()
			if isLeader {
				l.establish()
			}
		}
	}
}

// establish waits for the barrier (every entry of earlier terms applied to
// the store), then starts each service. A service that fails to start
// stops the ones before it; the duty is retried on the next leadership
// notification.
func (l *leadership) establish() {
	ctx, cancel := context.WithCancel(context.Background())
	bctx, bcancel := context.WithTimeout(ctx, 30*time.Second)
	err := l.a.node.Barrier(bctx)
	bcancel()
	if err != nil {
		l.a.log.Error("leadership barrier failed; leader duties not started", "error", err)
		cancel()
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cancel = cancel
	for _, s := range l.services {
		if err := s.Start(ctx); err != nil {
			l.a.log.Error("leader service failed to start", "service", s.Name(), "error", err)
			l.revokeLocked()
			return
		}
		l.running = append(l.running, s)
	}
	l.a.log.Info("leadership established", "services", len(l.running))
	l.establishedOnce.Do(func() { close(l.established) })
}

func (l *leadership) revoke() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.revokeLocked()
}

func (l *leadership) revokeLocked() {
	if l.cancel == nil {
		return
	}
	l.cancel()
	for i := len(l.running) - 1; i >= 0; i-- {
		l.running[i].Stop()
	}
	l.running, l.cancel = nil, nil
	l.a.log.Info("leader duties stopped")
}

// stop ends run, stopping any running services, and waits.
func (l *leadership) stop() {
	select {
	case <-l.stopCh:
	default:
		close(l.stopCh)
	}
	<-l.done
}
