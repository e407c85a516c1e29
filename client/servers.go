package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
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
//
// Failing over only ever moves a client away from a server, so after a
// rolling restart the clients would pile up on the servers restarted
// first. With rebalanceEvery set, the order is shuffled again every
// period (rebalanceDue), and the client moves to the new first server at
// the start of its next call: a call under way, a blocking query
// included, finishes on its server.
type servers struct {
	mu      sync.Mutex
	clients []*api.Client
	cur     int

	// every is the rebalancing period, zero when off; next is when the
	// next reshuffle is due, now the clock, rnd the reshuffle's own
	// random source. failed holds when each server last made a call
	// fail over.
	every  time.Duration
	next   time.Time
	now    func() time.Time
	rnd    *rand.Rand
	failed map[*api.Client]time.Time
	log    *slog.Logger
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
	if s.failed != nil {
		s.failed[bad] = s.now()
	}
	if s.clients[s.cur] != bad {
		return
	}
	s.cur = (s.cur + 1) % len(s.clients)
}

// rebalanceEvery turns on rebalancing (see servers): the order is
// shuffled again every period of every to 1.5 every (jittered, so that
// clients started together do not move together), by the clock now, with
// a random source of its own seeded from seed; a move is logged at debug
// level on log. Call it before the first call.
func (s *servers) rebalanceEvery(every time.Duration, now func() time.Time, seed *rand.Rand, log *slog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if every <= 0 || len(s.clients) < 2 {
		return
	}
	s.every, s.now, s.log = every, now, log
	s.rnd = rand.New(rand.NewPCG(seed.Uint64(), seed.Uint64()))
	s.failed = map[*api.Client]time.Time{}
	s.next = now().Add(s.periodLocked())
}

// periodLocked is the time to the next reshuffle: every plus up to half
// of it.
func (s *servers) periodLocked() time.Duration {
	return s.every + time.Duration(s.rnd.Float64()*float64(s.every/2))
}

// rebalanceDue shuffles the order again when the period has passed and
// makes the new first server the current one. A server that made a call
// fail over within the last period goes to the end of the order: the
// shuffle spreads the clients over the servers that answer, and does not
// send them back to one still restarting. It is called at the start of
// every call, so a client changes servers only between calls; it does
// not register again (see servers).
func (s *servers) rebalanceDue() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.every == 0 {
		return
	}
	now := s.now()
	if now.Before(s.next) {
		return
	}
	s.next = now.Add(s.periodLocked())
	was := s.clients[s.cur]
	s.rnd.Shuffle(len(s.clients), func(i, j int) { s.clients[i], s.clients[j] = s.clients[j], s.clients[i] })
	recent := func(c *api.Client) int {
		if t, ok := s.failed[c]; ok && now.Sub(t) < s.every {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(s.clients, func(a, b *api.Client) int { return recent(a) - recent(b) })
	s.cur = 0
	if s.clients[0] != was {
		s.log.Debug("servers rebalanced; moving to another server", "from", was.Address(), "server", s.clients[0].Address())
	}
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

// call runs fn against the current server (after a rebalance, when one
// is due); when that fails in a way another server may not, it fails over
// and tries the next, once around the list. It returns fn's last error.
func (s *servers) call(ctx context.Context, fn func(*api.Client) error) error {
	s.rebalanceDue()
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

// next returns the wait before the next attempt, between half the
// current step and the whole of it, and doubles the step (up to max).
// The draw keeps clients that failed together (a server restarting under
// thousands of them) from all retrying at the same instants.
func (b *backoff) next() time.Duration {
	if b.cur < b.min {
		b.cur = b.min
	}
	d := b.cur
	b.cur = min(b.cur*2, b.max)
	if half := d / 2; half > 0 {
		d = half + rand.N(d-half+1)
	}
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
