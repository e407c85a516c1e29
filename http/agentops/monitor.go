package agentops

import (
	"bufio"
	"log/slog"
	"net/http"
	"sort"
	"strings"

	"github.com/schedhq/sched/http/codec"
)

// LogMonitor copies an agent's log lines to a reader.
type LogMonitor interface {
	// Subscribe copies every line at level or above, formatted as JSON
	// objects or as text, to the channel until cancel is called. A slow
	// reader loses lines; the agent never waits for it.
	Subscribe(level slog.Level, asJSON bool) (lines <-chan []byte, cancel func())
}

// monitorLevels are the log_level values of /v1/agent/monitor.
var monitorLevels = map[string]slog.Level{
	"trace": slog.LevelDebug - 4, "debug": slog.LevelDebug, "info": slog.LevelInfo,
	"warn": slog.LevelWarn, "error": slog.LevelError,
}

// maxMonitorIDLen bounds node_id and server_id of /v1/agent/monitor.
const maxMonitorIDLen = 128

// MonitorRequest is what GET /v1/agent/monitor asks for.
type MonitorRequest struct {
	Level slog.Level
	JSON  bool
	// NodeID and ServerID name the agent to follow; both empty: this one.
	NodeID, ServerID string
}

// ParseMonitorRequest reads log_level (default info), log_json, node_id
// and server_id (at most one of the two).
func ParseMonitorRequest(r *http.Request) (MonitorRequest, error) {
	q := r.URL.Query()
	name := strings.ToLower(q.Get("log_level"))
	if name == "" {
		name = "info"
	}
	level, ok := monitorLevels[name]
	if !ok {
		names := make([]string, 0, len(monitorLevels))
		for n := range monitorLevels {
			names = append(names, n)
		}
		sort.Strings(names)
		return MonitorRequest{}, codec.BadRequest("log_level: %q is not one of %s", name, strings.Join(names, ", "))
	}
	asJSON, err := codec.BoolParam(q, "log_json")
	if err != nil {
		return MonitorRequest{}, err
	}
	mr := MonitorRequest{Level: level, JSON: asJSON, NodeID: q.Get("node_id"), ServerID: q.Get("server_id")}
	switch {
	case mr.NodeID != "" && mr.ServerID != "":
		return MonitorRequest{}, codec.BadRequest("node_id and server_id: give one agent to follow, not both")
	case len(mr.NodeID) > maxMonitorIDLen:
		return MonitorRequest{}, codec.BadRequest("node_id: over %d bytes", maxMonitorIDLen)
	case len(mr.ServerID) > maxMonitorIDLen:
		return MonitorRequest{}, codec.BadRequest("server_id: over %d bytes", maxMonitorIDLen)
	}
	return mr, nil
}

// StreamMonitor streams m's lines at mr's level, in mr's format, until the
// caller goes away.
func StreamMonitor(w http.ResponseWriter, r *http.Request, m LogMonitor, mr MonitorRequest) (any, error) {
	if m == nil {
		return nil, &codec.CodedError{Code: http.StatusNotImplemented, Message: "this agent does not stream its logs"}
	}
	lines, cancel := m.Subscribe(mr.Level, mr.JSON)
	defer cancel()
	if mr.JSON {
		w.Header().Set("Content-Type", "application/x-ndjson")
	} else {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	bw := bufio.NewWriter(w)
	if rc.Flush() != nil {
		return codec.AlreadyWritten{}, nil
	}
	for {
		select {
		case <-r.Context().Done():
			return codec.AlreadyWritten{}, nil
		case line := <-lines:
			bw.Write(line)
			// Write what else is waiting before flushing once.
			for more := true; more; {
				select {
				case l := <-lines:
					bw.Write(l)
				default:
					more = false
				}
			}
			if bw.Flush() != nil || rc.Flush() != nil {
				return codec.AlreadyWritten{}, nil
			}
		}
	}
}
