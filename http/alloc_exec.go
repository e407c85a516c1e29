package http

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/clientapi"
	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// execRoutes registers the operator's ways into running allocations,
// relayed to their node: a job's action (spec §4 row 24; the list of
// actions, row 23, is the jobs API's), exec, and the allocation lifecycle
// (alloc_lifecycle.go).
func (s relay) execRoutes() {
	s.handle(http.MethodGet, "/v1/job/:job_id/action", s.jobAction)
	s.handle(http.MethodGet, "/v1/client/allocation/:alloc_id/exec", s.allocExec)
	s.lifecycleRoutes()
}

// jobAction serves the WebSocket of GET /v1/job/:job_id/action: it runs
// the action named by ?action= of task ?task= in allocation ?alloc_id=
// (or ?allocID=) of the job, as an exec of the action's command and
// arguments, with a terminal when ?tty=true.
func (s relay) jobAction(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	jobID := p.ByName("job_id")
	// The allocation and task the guard checked (requestScope).
	sc := scopeOf(r)
	if sc == nil {
		resolved, err := resolveQuery(r)
		if err != nil {
			return nil, err
		}
		sc = &resolved
	}
	q, allocID, task := sc.query, sc.allocID, sc.task
	var v state.ValidationError
	for _, req := range []struct{ name, value string }{{"action", q.Get("action")}, {"alloc_id", allocID}, {"task", task}} {
		if req.value == "" {
			v.Add(req.name, "required query parameter")
		}
	}
	tty, err := boolParam(r, "tty")
	if err != nil {
		v.Add("tty", "%v", err)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if !clientapi.IsWebSocket(r) {
		return nil, codec.BadRequest("a WebSocket upgrade is required (Connection: Upgrade, Upgrade: websocket)")
	}
	name := q.Get("action")
	resolve := func(loc allocLocation) (clientapi.ExecRequest, error) {
		job, err := s.store.JobByID(nil, namespaceOf(r), jobID)
		if err != nil {
			return clientapi.ExecRequest{}, err
		}
		if job == nil {
			return clientapi.ExecRequest{}, state.NotFoundf("job %q", jobID)
		}
		a := loc.alloc
		if a == nil && loc.local != nil {
			if a, err = loc.local.Alloc(allocID); err != nil {
				return clientapi.ExecRequest{}, err
			}
		}
		if a == nil || a.JobID != job.ID || a.Namespace != job.Namespace {
			return clientapi.ExecRequest{}, state.NotFoundf("allocation %q of job %q", allocID, jobID)
		}
		// The allocation runs the job version it was placed with.
		defined := a.Job
		if defined == nil {
			defined = job
		}
		act := findAction(defined, a.TaskGroup, task, name)
		if act == nil {
			return clientapi.ExecRequest{}, state.NotFoundf("action %q of task %q in group %q of job %q", name, task, a.TaskGroup, jobID)
		}
		return clientapi.ExecRequest{Task: task, Command: append([]string{act.Command}, act.Args...), TTY: tty}, nil
	}
	s.serveExec(w, r, allocID, resolve)
	return codec.AlreadyWritten{}, nil
}

// findAction is the action called name of task in group of job, or nil.
func findAction(job *state.Job, group, task, name string) *state.Action {
	for _, tg := range job.TaskGroups {
		if tg.Name != group {
			continue
		}
		for _, t := range tg.Tasks {
			if t.Name != task {
				continue
			}
			for _, a := range t.Actions {
				if a != nil && a.Name == name {
					return a
				}
			}
		}
	}
	return nil
}

// allocExec serves the WebSocket of GET
// /v1/client/allocation/:alloc_id/exec?task=&command=["..."]&tty=: a
// command inside a running task of the allocation (docs/exec.md).
func (s relay) allocExec(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	allocID := p.ByName("alloc_id")
	task := queryOf(r).Get("task")
	if sc := scopeOf(r); sc != nil {
		task = sc.task // as the core resolved it (requestScope)
	}
	req, err := clientapi.ParseExecQuery(queryOf(r), task)
	if err != nil {
		return nil, err
	}
	if !clientapi.IsWebSocket(r) {
		return nil, codec.BadRequest("a WebSocket upgrade is required (Connection: Upgrade, Upgrade: websocket)")
	}
	resolve := func(loc allocLocation) (clientapi.ExecRequest, error) {
		if loc.alloc != nil && loc.alloc.Job != nil && findTask(loc.alloc.Job, loc.alloc.TaskGroup, req.Task) == nil {
			return clientapi.ExecRequest{}, state.NotFoundf("task %q in allocation %q", req.Task, allocID)
		}
		return req, nil
	}
	s.serveExec(w, r, allocID, resolve)
	return codec.AlreadyWritten{}, nil
}

// findTask is task of group in job, or nil.
func findTask(job *state.Job, group, task string) *state.Task {
	for _, tg := range job.TaskGroups {
		if tg.Name == group {
			for _, t := range tg.Tasks {
				if t.Name == task {
					return t
				}
			}
		}
	}
	return nil
}

// serveExec runs an exec session of allocID: resolve turns where the
// allocation runs into the command. The local client runs it, or the
// session is relayed to the node's agent. Failures found before the
// upgrade are HTTP errors; with ws_handshake the caller's token arrives in
// the first frame, so authorization and everything after it happen on the
// socket, and failures are close frames (clientapi/stream.go).
func (s relay) serveExec(w http.ResponseWriter, r *http.Request, allocID string, resolve func(allocLocation) (clientapi.ExecRequest, error)) {
	ctx := r.Context()
	prepare := func() (*allocLocation, clientapi.ExecRequest, *clientapi.Conn, error) {
		loc, err := s.locateAlloc(r, allocID)
		if err != nil {
			return nil, clientapi.ExecRequest{}, nil, err
		}
		req, err := resolve(loc)
		if err != nil {
			return nil, clientapi.ExecRequest{}, nil, err
		}
		if loc.local != nil {
			return &loc, req, nil, nil
		}
		cmd, _ := json.Marshal(req.Command)
		query := url.Values{"task": {req.Task}, "command": {string(cmd)}, "tty": {fmt.Sprint(req.TTY)}}
		if ns := namespaceOf(r); ns != state.DefaultNamespace {
			query.Set("namespace", ns)
		}
		node, err := dialNodeExec(ctx, r, loc.node, "/v1/client/allocation/"+url.PathEscape(allocID)+"/exec", query, s.execTimes)
		if err != nil {
			return nil, clientapi.ExecRequest{}, nil, err
		}
		return &loc, req, node, nil
	}
	run := func(caller *clientapi.Conn, loc *allocLocation, req clientapi.ExecRequest, node *clientapi.Conn) {
		if node != nil {
			clientapi.Relay(ctx, caller, node)
			return
		}
		clientapi.RunLocalExec(ctx, caller, loc.local, allocID, req)
	}

	if a := authOf(r); a == nil || a.pending == nil {
		loc, req, node, err := prepare()
		if err != nil {
			codec.WriteError(w, err)
			return
		}
		caller, err := clientapi.Upgrade(w, r, s.execTimes)
		if err != nil {
			if node != nil {
				_ = node.Close()
			}
			return // Upgrade answered the caller
		}
		run(caller, loc, req, node)
		return
	}
	caller, err := clientapi.Upgrade(w, r, s.execTimes)
	if err != nil {
		return
	}
	if err := readHandshake(r, caller); err != nil {
		caller.CloseWithError(err)
		return
	}
	loc, req, node, err := prepare()
	if err != nil {
		caller.CloseWithError(err)
		return
	}
	run(caller, loc, req, node)
}

// readHandshake reads the first frame of a ws_handshake session, which
// carries the caller's token, and completes the request's authorization
// with it.
func readHandshake(r *http.Request, w *clientapi.Conn) error {
	token, err := w.ReadHandshake()
	if err != nil {
		return err
	}
	return completeHandshakeAuth(r, token)
}
