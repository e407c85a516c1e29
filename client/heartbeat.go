package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// fallbackTTL is used when a server answers a registration or heartbeat
// with no TTL: the servers' least TTL (leader.DefaultMinHeartbeatTTL).
const fallbackTTL = 10 * time.Second

// heartbeatLoop registers the node, then heartbeats at a fraction of the
// TTL the servers hand out. It registers again only when the servers no
// longer know the node: a 404 to a heartbeat or to a status report
// (needRegister; a 404 to a stale read only brings the next heartbeat
// forward, checkRegistered). Changing servers is no reason: whichever server
// carries it, a heartbeat reaches the leader, which keeps the node's timer
// (and a new leader gives every node a failover TTL to find it), so a
// leader election or one server's 5xx costs a heartbeat's retry, not a
// registration of every node of the cluster. When no server answers a
// registration it retries with exponential backoff; a heartbeat's retries
// are bounded by the time left before the node's TTL runs out
// (heartbeatRetryWait). The first registration waits for
// Config.BeforeRegister.
func (c *Client) heartbeatLoop(ctx context.Context) {
	bo := backoff{min: c.cfg.MinBackoff, max: c.cfg.MaxBackoff}
	register := true
	// ttl is the servers' last TTL; expires is when it runs out by this
	// client's reckoning: ttl after the last answered heartbeat (or
	// registration) was sent. wait is the time before the next heartbeat.
	var ttl, wait time.Duration
	var expires time.Time
	var warnedTTL bool
	if c.cfg.BeforeRegister != nil {
		if err := c.cfg.BeforeRegister(ctx); err != nil && ctx.Err() == nil {
			c.log.Debug("registering without waiting for the servers", "error", err)
		}
	}
	for ctx.Err() == nil {
		if register {
			sent := time.Now()
			answered, err := c.register(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				c.log.Warn("node registration failed", "error", err)
				sleepCtx(ctx, bo.next())
				continue
			}
			bo.reset()
			register = false
			ttl = c.serverTTL(answered, &warnedTTL)
			expires, wait = sent.Add(ttl), c.heartbeatWait(ttl)
			c.registration.Add(1)
			c.regOnce.Do(func() { close(c.registered) })
			c.log.Info("node registered", "node_id", c.nodeID, "server", c.CurrentServer(), "ttl", ttl)
		}
		due := time.Now().Add(wait)
		select {
		case <-ctx.Done():
			return
		case <-c.reregister:
			register = true
			continue
		case <-c.beatNow:
		case <-time.After(wait):
		}
		sent := time.Now()
		var resp *state.NodeUpdateResponse
		err := c.servers.call(ctx, func(s *api.Client) error {
			// One server's slow answer must not use up the TTL: past
			// heartbeatCallLimit the call fails over to the next.
			cctx, cancel := context.WithTimeout(ctx, heartbeatCallLimit(ttl))
			defer cancel()
			var err error
			resp, _, err = s.Nodes().Heartbeat(cctx, c.nodeID, nil)
			if err != nil && cctx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("heartbeat to %s: no answer within %v: %w", s.Address(), heartbeatCallLimit(ttl), err)
			}
			return err
		})
		if err == nil {
			c.heartbeatsOK.Add(1)
			c.noteHeartbeatDelay(time.Since(due))
		} else if ctx.Err() == nil {
			c.heartbeatsFailed.Add(1)
		}
		switch {
		case err == nil:
			bo.reset()
			ttl = c.serverTTL(resp.HeartbeatTTL, &warnedTTL)
			expires, wait = sent.Add(ttl), c.heartbeatWait(ttl)
		case api.IsNotFound(err):
			c.log.Warn("servers do not know this node; registering again")
			register = true
		case ctx.Err() != nil:
			return
		default:
			// Retry soon, on the next server, well within the TTL.
			wait = c.heartbeatRetryWait(bo.next(), time.Until(expires), ttl)
			c.log.Warn("heartbeat failed", "error", err, "retry_in", wait)
		}
	}
}

// serverTTL is the TTL a registration or heartbeat answer gave, or
// fallbackTTL when it gave none: a zero TTL would make the client
// heartbeat without pause. The first such answer is logged (warned
// records it).
func (c *Client) serverTTL(ttl time.Duration, warned *bool) time.Duration {
	if ttl > 0 {
		return ttl
	}
	if !*warned {
		*warned = true
		c.log.Warn("the servers answered with no heartbeat TTL; using the fallback", "ttl", fallbackTTL)
	}
	return fallbackTTL
}

// heartbeatRetryWait is the wait before retrying a failed heartbeat, given
// the backoff's next wait d and the time left before the node's TTL runs
// out. Within the TTL it is at most a third of the time left, so however
// long the backoff has grown the client tries several more times before
// the servers' timer runs out (they add a grace this client does not
// know), and a server that answers again meanwhile keeps the node up.
// Past the TTL it is at most the regular heartbeat interval: the node may
// be marked down already, and comes back with the first heartbeat that
// gets through, at the rate the servers sized the TTL for. Never less than
// MinBackoff.
func (c *Client) heartbeatRetryWait(d, left, ttl time.Duration) time.Duration {
	if left > 0 {
		d = min(d, left/3)
	} else {
		d = min(d, time.Duration(float64(ttl)*c.cfg.HeartbeatFraction))
	}
	return max(d, c.cfg.MinBackoff)
}

// heartbeatWait is the wait before the next heartbeat: a fraction of the
// TTL, less up to 10% jitter so that many nodes spread out.
func (c *Client) heartbeatWait(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return 0
	}
	w := time.Duration(float64(ttl) * c.cfg.HeartbeatFraction)
	return w - time.Duration(c.jitter()*0.1*float64(w))
}

// heartbeatCallLimit bounds one heartbeat request: a quarter of the TTL
// (so a failover still has time before it runs out), at least 2 s.
func heartbeatCallLimit(ttl time.Duration) time.Duration {
	return max(ttl/4, 2*time.Second)
}

// noteHeartbeatDelay records how long after it was due a heartbeat was
// answered (the timer's lateness plus the request).
func (c *Client) noteHeartbeatDelay(d time.Duration) {
	for {
		cur := c.heartbeatMaxDelay.Load()
		if int64(d) <= cur || c.heartbeatMaxDelay.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// HeartbeatMaxDelay is the longest a heartbeat was answered after it was
// due, since the start: a client whose goroutines or requests are held up
// shows it here well before the servers mark the node down.
func (c *Client) HeartbeatMaxDelay() time.Duration {
	return time.Duration(c.heartbeatMaxDelay.Load())
}

// isForbidden reports whether err is a 403 from the servers.
func isForbidden(err error) bool {
	var se *api.StatusError
	return errors.As(err, &se) && se.Code == http.StatusForbidden
}

// register sends the node to the servers and returns the heartbeat TTL
// they answered (zero: none; see serverTTL).
func (c *Client) register(ctx context.Context) (time.Duration, error) {
	node := c.nodeSnapshot()
	var resp *state.NodeUpdateResponse
	err := c.servers.call(ctx, func(s *api.Client) error {
		var err error
		resp, _, err = s.Nodes().Register(ctx, node, nil)
		if intro := c.cfg.IntroToken; intro != "" && isForbidden(err) {
			// With ACLs on, the node's own secret proves only the identity
			// of a node the servers know: a new node (or one garbage
			// collected meanwhile) is introduced by the operator's token.
			resp, _, err = s.Nodes().Register(ctx, node, &api.WriteOptions{Token: intro})
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	return resp.HeartbeatTTL, nil
}
