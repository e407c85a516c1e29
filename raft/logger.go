package raft

import (
	"github.com/hashicorp/go-hclog"
)

// floorLogger drops messages below a minimum level before they reach the
// wrapped logger. hashicorp/raft logs every election and snapshot at info;
// that is noise in a server's log, while its warnings matter. A child
// logger's SetLevel would change the parent's level too (hclog shares it), so
// the filter is a wrapper instead.
type floorLogger struct {
	hclog.Logger
	min hclog.Level
}

// withFloor wraps l so that only messages at min or above pass.
func withFloor(l hclog.Logger, min hclog.Level) hclog.Logger {
	return &floorLogger{Logger: l, min: min}
}

func (f *floorLogger) Log(level hclog.Level, msg string, args ...any) {
	if level >= f.min {
		f.Logger.Log(level, msg, args...)
	}
}

func (f *floorLogger) Trace(msg string, args ...any) { f.Log(hclog.Trace, msg, args...) }
func (f *floorLogger) Debug(msg string, args ...any) { f.Log(hclog.Debug, msg, args...) }
func (f *floorLogger) Info(msg string, args ...any)  { f.Log(hclog.Info, msg, args...) }
func (f *floorLogger) Warn(msg string, args ...any)  { f.Log(hclog.Warn, msg, args...) }
func (f *floorLogger) Error(msg string, args ...any) { f.Log(hclog.Error, msg, args...) }

func (f *floorLogger) IsTrace() bool { return f.min <= hclog.Trace && f.Logger.IsTrace() }
func (f *floorLogger) IsDebug() bool { return f.min <= hclog.Debug && f.Logger.IsDebug() }
func (f *floorLogger) IsInfo() bool  { return f.min <= hclog.Info && f.Logger.IsInfo() }

func (f *floorLogger) GetLevel() hclog.Level {
	if l := f.Logger.GetLevel(); l > f.min {
		return l
	}
	return f.min
}

// With, Named and ResetNamed keep the floor on derived loggers; raft derives
// one per subsystem.
func (f *floorLogger) With(args ...any) hclog.Logger {
	return withFloor(f.Logger.With(args...), f.min)
}

func (f *floorLogger) Named(name string) hclog.Logger {
	return withFloor(f.Logger.Named(name), f.min)
}

func (f *floorLogger) ResetNamed(name string) hclog.Logger {
	return withFloor(f.Logger.ResetNamed(name), f.min)
}
