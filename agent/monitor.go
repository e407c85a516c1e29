package agent

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
)

// monitorBuffer is how many lines a slow monitor may fall behind before
// lines are dropped for it (the agent never waits for a reader).
const monitorBuffer = 512

// logHub copies the agent's log records to the subscribers of
// /v1/agent/monitor, each at its own level and in its own format. With no
// subscriber it costs one atomic load per record.
type logHub struct {
	mu   sync.Mutex
	subs map[*logSub]struct{}
	// min is the lowest level any subscriber wants (MaxInt when none).
	min atomic.Int64
}

// logSub is one monitor.
type logSub struct {
	level  slog.Level
	asJSON bool
	ch     chan []byte
}

func newLogHub() *logHub {
	h := &logHub{subs: map[*logSub]struct{}{}}
	h.min.Store(int64(^uint32(0) >> 1))
	return h
}

// Subscribe starts copying records at level or above to the returned
// channel, one formatted line each; cancel stops it and closes nothing the
// caller still reads from.
func (h *logHub) Subscribe(level slog.Level, asJSON bool) (<-chan []byte, func()) {
	s := &logSub{level: level, asJSON: asJSON, ch: make(chan []byte, monitorBuffer)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.updateMinLocked()
	h.mu.Unlock()
	return s.ch, func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.updateMinLocked()
		h.mu.Unlock()
	}
}

func (h *logHub) updateMinLocked() {
	m := int64(^uint32(0) >> 1)
	for s := range h.subs {
		m = min(m, int64(s.level))
	}
	h.min.Store(m)
}

// wrap returns a handler that writes to base and copies to h's
// subscribers.
func (h *logHub) wrap(base slog.Handler) slog.Handler { return &hubHandler{base: base, hub: h} }

// hubHandler is the handler of the agent's logger.
type hubHandler struct {
	base slog.Handler
	hub  *logHub
	// ops are the WithAttrs/WithGroup calls made on the way here, replayed
	// on each subscriber's formatter.
	ops []func(slog.Handler) slog.Handler
}

func (h *hubHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.base.Enabled(ctx, l) || int64(l) >= h.hub.min.Load()
}

func (h *hubHandler) Handle(ctx context.Context, r slog.Record) error {
	var err error
	if h.base.Enabled(ctx, r.Level) {
		err = h.base.Handle(ctx, r)
	}
	if int64(r.Level) < h.hub.min.Load() {
		return err
	}
	h.hub.mu.Lock()
	defer h.hub.mu.Unlock()
	for s := range h.hub.subs {
		if r.Level < s.level {
			continue
		}
		var buf bytes.Buffer
		f := newFormatHandler(&buf, s.asJSON, s.level)
		for _, op := range h.ops {
			f = op(f)
		}
		if f.Handle(ctx, r.Clone()) != nil {
			continue
		}
		select {
		case s.ch <- buf.Bytes():
		default: // a slow reader loses lines rather than stalling the agent
		}
	}
	return err
}

func (h *hubHandler) with(op func(slog.Handler) slog.Handler) *hubHandler {
	ops := append(append([]func(slog.Handler) slog.Handler{}, h.ops...), op)
	return &hubHandler{base: op(h.base), hub: h.hub, ops: ops}
}

func (h *hubHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return h.with(func(x slog.Handler) slog.Handler { return x.WithAttrs(attrs) })
}

func (h *hubHandler) WithGroup(name string) slog.Handler {
	return h.with(func(x slog.Handler) slog.Handler { return x.WithGroup(name) })
}
