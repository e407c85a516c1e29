package services

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// The Manager's writes follow one rule: what it wants registered is kept
// locally (pendingUpsert, pendingDelete) until the servers took it, and
// flushes are serialized, so a delete queued after an upsert of the same
// ID always reaches the servers after it. A write the servers refuse as
// invalid (a 4xx other than 404, 408 and 429) is dropped with an error
// log: sending it again would not change the answer.

// queueLocked records entries to upsert and IDs to delete. m.mu must be
// held.
func (m *Manager) queueLocked(upserts []*state.ServiceRegistration, deletes []string) {
	for _, r := range upserts {
		m.pendingUpsert[r.ID] = r
		delete(m.pendingDelete, r.ID)
	}
	for _, id := range deletes {
		m.pendingDelete[id] = true
		delete(m.pendingUpsert, id)
	}
}

// flush sends what is pending. It returns the first error; what failed
// stays pending for the sync loop.
func (m *Manager) flush(ctx context.Context) error {
	select {
	case m.flushSem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("services: waiting to write: %w", ctx.Err())
	}
	defer func() { <-m.flushSem }()

	m.mu.Lock()
	upserts := make([]*state.ServiceRegistration, 0, len(m.pendingUpsert))
	for _, id := range sortedKeys(m.pendingUpsert) {
		upserts = append(upserts, m.pendingUpsert[id])
	}
	deletes := sortedKeys(m.pendingDelete)
	m.mu.Unlock()
	if len(upserts) == 0 && len(deletes) == 0 {
		return nil
	}

	w := &api.WriteOptions{Token: m.cfg.NodeSecret}
	nodes := m.api().Nodes()
	var firstErr error
	if len(upserts) > 0 {
		wctx, cancel := context.WithTimeout(ctx, m.cfg.WriteTimeout)
		_, _, err := nodes.RegisterServices(wctx, m.cfg.NodeID, upserts, w)
		cancel()
		if err == nil || permanent(err) {
			if err != nil {
				m.log.Error("servers refused service registrations; dropping them", "count", len(upserts), "error", err)
				firstErr = fmt.Errorf("services: register: %w", err)
			}
			m.mu.Lock()
			for _, r := range upserts {
				if m.pendingUpsert[r.ID] == r {
					delete(m.pendingUpsert, r.ID)
				}
			}
			m.mu.Unlock()
		} else {
			firstErr = fmt.Errorf("services: register: %w", err)
		}
	}
	// Deletes go in batches small enough for a URL.
	for start := 0; start < len(deletes); start += 50 {
		batch := deletes[start:min(start+50, len(deletes))]
		wctx, cancel := context.WithTimeout(ctx, m.cfg.WriteTimeout)
		_, _, err := nodes.DeregisterServices(wctx, m.cfg.NodeID, batch, nil, w)
		cancel()
		if err != nil && !permanent(err) {
			if firstErr == nil {
				firstErr = fmt.Errorf("services: deregister: %w", err)
			}
			continue
		}
		if err != nil {
			m.log.Error("servers refused service deregistrations; dropping them", "count", len(batch), "error", err)
		}
		m.mu.Lock()
		for _, id := range batch {
			delete(m.pendingDelete, id)
		}
		m.mu.Unlock()
	}
	if firstErr != nil {
		m.log.Warn("service catalog write failed; retrying in the background", "error", firstErr)
	}
	return firstErr
}

// api returns the client of the server to write to.
func (m *Manager) api() *api.Client {
	if m.cfg.CurrentAPI != nil {
		if c := m.cfg.CurrentAPI(); c != nil {
			return c
		}
	}
	return m.cfg.API
}

// permanent reports whether err is an answer that a retry would not
// change.
func permanent(err error) bool {
	var se *api.StatusError
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code {
	case http.StatusNotFound, http.StatusRequestTimeout, http.StatusTooManyRequests:
		// 404: the node is not registered yet (or again, after a
		// failover that lost it); its registration will bring it back.
		return false
	}
	return se.Code >= 400 && se.Code < 500
}

// pending reports whether writes wait for the servers.
func (m *Manager) pending() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pendingUpsert) > 0 || len(m.pendingDelete) > 0
}

// syncLoop retries pending writes every RetryInterval until Close.
func (m *Manager) syncLoop() {
	defer m.wg.Done()
	t := time.NewTicker(m.cfg.RetryInterval)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		if m.pending() {
			_ = m.flush(m.ctx)
		}
	}
}

// Sync sends every pending write now and returns the first error. The
// background loop does the same on its own; Sync is for callers that must
// know (tests, a client shutting down).
func (m *Manager) Sync(ctx context.Context) error { return m.flush(ctx) }
