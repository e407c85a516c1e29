package api

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// EventStream opens the cluster's event stream (GET /v1/event/stream):
// NDJSON, one object {"Index":N,"Events":[...]} per applied log entry with
// matching events, and `{}` heartbeats. topics are `Topic` or `Topic:Key`
// (none: every topic); index > 0 resumes at that index while the server
// still keeps it. q's namespace ("*": every namespace) filters namespaced
// events. Close the stream when done; ctx bounds it.
func (c *Client) EventStream(ctx context.Context, topics []string, index uint64, q *QueryOptions) (io.ReadCloser, error) {
	params := url.Values{}
	for _, t := range topics {
		params.Add("topic", t)
	}
	if index > 0 {
		params.Set("index", strconv.FormatUint(index, 10))
	}
	token := q.apply(c.cfg, params)
	resp, err := c.stream(ctx, http.MethodGet, PathOf("v1", "event", "stream"), params, token, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Monitor streams the agent's own log lines (GET /v1/agent/monitor) at
// level (trace, debug, info, warn, error; "" means info), as text or, with
// jsonFormat, as JSON objects, one per line. Close it when done.
func (c *Client) Monitor(ctx context.Context, level string, jsonFormat bool, q *QueryOptions) (io.ReadCloser, error) {
	return c.MonitorAgent(ctx, MonitorRequest{LogLevel: level, JSON: jsonFormat}, q)
}

// MonitorRequest is what MonitorAgent follows.
type MonitorRequest struct {
	// LogLevel is trace, debug, info, warn or error; "" means info.
	LogLevel string
	// JSON asks for JSON objects instead of text lines.
	JSON bool
	// NodeID follows the agent of that client node instead of the one
	// asked; ServerID (name or ID) another server. At most one of them.
	NodeID, ServerID string
}

// MonitorAgent streams an agent's log lines (GET /v1/agent/monitor): the
// one asked, or the one req names. Close it when done.
func (c *Client) MonitorAgent(ctx context.Context, req MonitorRequest, q *QueryOptions) (io.ReadCloser, error) {
	params := url.Values{}
	setIf(params, "log_level", req.LogLevel)
	if req.JSON {
		params.Set("log_json", "true")
	}
	setIf(params, "node_id", req.NodeID)
	setIf(params, "server_id", req.ServerID)
	token := q.apply(c.cfg, params)
	resp, err := c.stream(ctx, http.MethodGet, PathOf("v1", "agent", "monitor"), params, token, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
