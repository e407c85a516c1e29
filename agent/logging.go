package agent

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// LevelTrace is the slog level of hclog's trace messages (raft's and
// gossip's most detailed ones), shown with log_level = "trace".
const LevelTrace = slog.LevelDebug - 4

// NewLogger returns the agent's one logger: format "json" writes one JSON
// object per line, anything else key=value text; level is a log_level
// name. raft and gossip log through it too (newHCLogger).
func NewLogger(w io.Writer, format, level string) *slog.Logger {
	return slog.New(newFormatHandler(w, format == "json", slogLevel(level)))
}

// newFormatHandler is the slog handler of one output format. Trace shows
// as TRACE rather than slog's DEBUG-4.
func newFormatHandler(w io.Writer, asJSON bool, level slog.Leveler) slog.Handler {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.LevelKey && len(groups) == 0 {
			if l, ok := a.Value.Any().(slog.Level); ok && l <= LevelTrace {
				return slog.String(slog.LevelKey, "TRACE")
			}
		}
		return a
	}}
	if asJSON {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// hclogSlog is an hclog.Logger that logs through a slog.Logger, so that
// hashicorp/raft, raft-boltdb and memberlist (through StandardLogger) write
// the agent's one format. The module name rides as the "module"
// attribute.
type hclogSlog struct {
	// root is the agent's logger; l is root with the module name and the
	// implied arguments.
	root    *slog.Logger
	l       *slog.Logger
	name    string
	implied []any
}

var _ hclog.Logger = (*hclogSlog)(nil)

// newHCLogger adapts l for a library named name (raft, gossip).
func newHCLogger(l *slog.Logger, name string) hclog.Logger {
	return newHCLog(l, name, nil)
}

func newHCLog(root *slog.Logger, name string, implied []any) *hclogSlog {
	return &hclogSlog{root: root, l: root.With("module", name).With(implied...), name: name, implied: implied}
}

func toSlogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return LevelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (h *hclogSlog) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off || level == hclog.NoLevel && !h.l.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	h.l.Log(context.Background(), toSlogLevel(quietLevel(level, msg, args)), msg, args...) // logging_quiet.go
}

func (h *hclogSlog) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogSlog) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogSlog) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogSlog) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogSlog) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hclogSlog) enabled(level hclog.Level) bool {
	return h.l.Enabled(context.Background(), toSlogLevel(level))
}

func (h *hclogSlog) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *hclogSlog) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *hclogSlog) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *hclogSlog) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *hclogSlog) IsError() bool { return h.enabled(hclog.Error) }

func (h *hclogSlog) ImpliedArgs() []any { return h.implied }

func (h *hclogSlog) With(args ...any) hclog.Logger {
	return newHCLog(h.root, h.name, append(append([]any{}, h.implied...), args...))
}

func (h *hclogSlog) Name() string { return h.name }

func (h *hclogSlog) Named(name string) hclog.Logger {
	if h.name != "" {
		name = h.name + "." + name
	}
	return h.ResetNamed(name)
}

// ResetNamed replaces the module name.
func (h *hclogSlog) ResetNamed(name string) hclog.Logger { return newHCLog(h.root, name, h.implied) }

// SetLevel does nothing: the agent's one log_level decides.
func (h *hclogSlog) SetLevel(hclog.Level) {}

func (h *hclogSlog) GetLevel() hclog.Level {
	for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if h.enabled(l) {
			return l
		}
	}
	return hclog.Off
}

func (h *hclogSlog) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

// StandardWriter returns a writer whose lines are logged through h, each
// at the level its "[LEVEL]" prefix names (memberlist writes
// "[DEBUG] memberlist: ..."); a line without one is info.
func (h *hclogSlog) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return &levelWriter{h: h}
}

// levelWriter is StandardWriter's writer.
type levelWriter struct {
	h   *hclogSlog
	mu  sync.Mutex
	buf []byte
}

func (w *levelWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.logLine(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *levelWriter) logLine(line string) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	level := hclog.Info
	if rest, ok := strings.CutPrefix(line, "["); ok {
		if tag, msg, ok := strings.Cut(rest, "]"); ok {
			switch strings.ToUpper(tag) {
			case "TRACE":
				level = hclog.Trace
			case "DEBUG":
				level = hclog.Debug
			case "WARN", "WARNING":
				level = hclog.Warn
			case "ERR", "ERROR":
				level = hclog.Error
			}
			line = strings.TrimSpace(msg)
		}
	}
	w.h.Log(level, line)
}
