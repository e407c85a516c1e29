package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/schedhq/sched/http/api"
)

// servers is the client's list of server addresses, in this client's own
// order, and the one it talks to now. The order is shuffled once per
// client (newServers), so a cluster's clients spread over its servers and
// the clients of a server that fails spread over the others.
//
// A call that cannot get an answer from its server (a network error, or a
// 5xx such as "no cluster leader") moves to the next address. Moving
// costs nothing else: every server forwards the node's writes to the
// leader, and the leader keeps the node's heartbeat timer whichever
// server carried the heartbeat, so the node registers again only when the
// servers answer that they do not know it (404; see heartbeatLoop), not
// because it changed servers.
type servers struct {
	mu      sync.Mutex
	clients []*api.Client
	cur     int
}

// newServers makes the clients of addrs, shuffled with rnd. Moving on 5xx
// as well as on network errors is deliberate: a server cut off from the
// others answers "no cluster leader" while the rest of the cluster has
// one, and only another server helps; during an election every server
// answers so, and call's one turn around the list then ends in the
// caller's backoff.
func newServers(addrs []string, token string, hc *http.Client, rnd *rand.Rand) (*servers, error) {
	s := &servers{}
	for _, a := range addrs {
		c, err := api.NewClient(api.Config{Address: a, Token: token, HTTPClient: hc})
		if err != nil {
			return nil, fmt.Errorf("client: server %q: %w", a, err)
		}
		s.clients = append(s.clients, c)
	}
	rnd.Shuffle(len(s.clients), func(i, j int) { s.clients[i], s.clients[j] = s.clients[j], s.clients[i] })
	return s, nil
}

// current returns the server in use.
func (s *servers) current() *api.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients[s.cur]
}

// failover moves past bad, unless another call already did.
func (s *servers) failover(bad *api.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clients[s.cur] != bad {
		return
	}
	s.cur = (s.cur + 1) % len(s.clients)
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
		c := s.current()
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
