package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/schedhq/sched/http/api"
)

// servers is the client's list of server addresses and the one it talks
// to now. A call that cannot reach its server (a network error, or a 5xx
// such as "no cluster leader") moves to the next address, and the change
// is counted so the node re-registers with whoever it reaches next.
type servers struct {
	mu      sync.Mutex
	clients []*api.Client
	cur     int
	// epoch counts failovers; the heartbeat loop re-registers when it
	// moves.
	epoch uint64
}

func newServers(addrs []string, token string, hc *http.Client) (*servers, error) {
	s := &servers{}
	for _, a := range addrs {
		c, err := api.NewClient(api.Config{Address: a, Token: token, HTTPClient: hc})
		if err != nil {
			return nil, fmt.Errorf("client: server %q: %w", a, err)
		}
		s.clients = append(s.clients, c)
	}
	return s, nil
}

// current returns the server in use and the failover epoch.
func (s *servers) current() (*api.Client, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients[s.cur], s.epoch
}

// failover moves past bad, unless another call already did.
func (s *servers) failover(bad *api.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clients[s.cur] != bad {
		return
	}
	s.cur = (s.cur + 1) % len(s.clients)
	s.epoch++
}

// epochNow returns how many failovers happened.
func (s *servers) epochNow() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// retryable reports whether err means "this server cannot answer now"
// rather than "the request is wrong": then another server may.
func retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var se *api.StatusError
	if errors.As(err, &se) {
		return se.Code >= 500 || se.Code == http.StatusTooManyRequests
	}
	return true // transport errors
}

// call runs fn against the current server; when that fails in a way
// another server may not, it fails over and tries the next, once around
// the list. It returns fn's last error.
func (s *servers) call(ctx context.Context, fn func(*api.Client) error) error {
	var err error
	for range len(s.clients) {
		c, _ := s.current()
		if err = fn(c); err == nil || !retryable(err) || ctx.Err() != nil {
			return err
		}
		s.failover(c)
	}
	return err
}

// backoff is an exponential wait between min and max.
type backoff struct {
	min, max, cur time.Duration
}

// next returns the wait before the next attempt and doubles it.
func (b *backoff) next() time.Duration {
	if b.cur < b.min {
		b.cur = b.min
	}
	d := b.cur
	b.cur = min(b.cur*2, b.max)
	return d
}

// reset starts again from min.
func (b *backoff) reset() { b.cur = 0 }

// sleepCtx waits d or until ctx is done, reporting whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
