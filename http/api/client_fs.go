package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/schedhq/sched/state"
)

// The node-local client endpoints: an allocation's task logs and its
// resource usage. Any server answers them, proxying to the node that runs
// the allocation when it is not its own.

// HeaderLogInitialBytes is how many bytes of a log stream were on disk
// when the request arrived, from the stream's starting point.
const HeaderLogInitialBytes = "X-Sched-Log-Initial-Bytes"

// AllocFS is the client of /v1/client/fs.
type AllocFS struct{ c *Client }

// AllocFS returns the allocation file-system endpoints.
func (c *Client) AllocFS() *AllocFS { return &AllocFS{c: c} }

// LogsOptions say which log to read and from where.
type LogsOptions struct {
	// Task is required.
	Task string
	// Type is "stdout" (the default) or "stderr".
	Type string
	// Follow keeps the stream open for new data, across rotations,
	// until the task is dead or ctx ends.
	Follow bool
	// Offset counts bytes from the start of the log, or back from its
	// end with FromEnd.
	Offset  int64
	FromEnd bool
}

// LogStream is a task's log as raw bytes. Close it when done.
type LogStream struct {
	io.ReadCloser
	// InitialBytes is how much of the stream was on disk when the request
	// arrived: reading that much first gives "what exists", before what
	// the task writes next.
	InitialBytes int64
}

// Logs opens the log of a task of allocation allocID. q names the
// allocation's namespace (and token); ctx bounds the whole stream.
func (a *AllocFS) Logs(ctx context.Context, allocID string, o *LogsOptions, q *QueryOptions) (*LogStream, error) {
	if o == nil || o.Task == "" {
		return nil, fmt.Errorf("api: logs: a task is required")
	}
	params := url.Values{"task": {o.Task}, "plain": {"true"}}
	setIf(params, "type", o.Type)
	if o.Follow {
		params.Set("follow", "true")
	}
	if o.Offset != 0 {
		params.Set("offset", strconv.FormatInt(o.Offset, 10))
	}
	if o.FromEnd {
		params.Set("origin", "end")
	}
	token := q.apply(a.c.cfg, params)
	resp, err := a.c.stream(ctx, http.MethodGet, PathOf("v1", "client", "fs", "logs", allocID), params, token, nil)
	if err != nil {
		return nil, err
	}
	n, _ := strconv.ParseInt(resp.Header.Get(HeaderLogInitialBytes), 10, 64)
	return &LogStream{ReadCloser: resp.Body, InitialBytes: n}, nil
}

// Stats measures the running tasks of allocation id on its node.
func (a *Allocations) Stats(ctx context.Context, id string, q *QueryOptions) (*state.AllocResourceUsage, error) {
	out, _, err := get[*state.AllocResourceUsage](ctx, a.c, PathOf("v1", "client", "allocation", id, "stats"), nil, q)
	return out, err
}
