package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/clientapi"
	"github.com/schedhq/sched/http/codec"
)

// The node-local endpoints of an allocation (logs, file system, stats) as
// a server serves them: by the local client (dev mode) when it runs the
// allocation, otherwise proxied, signed, to the agent of the allocation's
// node (node_proxy.go), which serves them with package clientapi.

// nodeLocalRoutes registers the allocation's logs, stats and file system.
func (s relay) nodeLocalRoutes() {
	s.handle(http.MethodGet, "/v1/client/fs/logs/:alloc_id", s.allocLogs)
	s.handle(http.MethodGet, "/v1/client/allocation/:alloc_id/stats", s.allocStats)
	for _, op := range clientapi.FSOps() {
		s.handle(http.MethodGet, "/v1/client/fs/"+op+"/:alloc_id", s.allocFS(op))
	}
}

// allocLogs serves GET /v1/client/fs/logs/:alloc_id (clientapi.ServeLogs):
// the task's log files in rotation order, as one stream, followed or not.
func (s relay) allocLogs(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	lr, err := clientapi.ParseLogRequest(r)
	if err != nil {
		return nil, err
	}
	local, err := s.clientFor(w, r, p.ByName("alloc_id"))
	if err != nil || local == nil {
		return alreadyWrittenOr(err)
	}
	return clientapi.ServeLogs(w, r, local, p.ByName("alloc_id"), lr)
}

// allocFS serves one file system operation, locally or proxied.
func (s relay) allocFS(op string) codec.Handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
		id := p.ByName("alloc_id")
		q, err := clientapi.ParseFSQuery(r, op)
		if err != nil {
			return nil, err
		}
		local, err := s.clientFor(w, r, id)
		if err != nil || local == nil {
			return alreadyWrittenOr(err)
		}
		return clientapi.ServeFS(w, r, local, id, op, q)
	}
}

// allocStats serves GET /v1/client/allocation/:alloc_id/stats: the
// allocation's CPU and memory use per running task and in total.
func (s relay) allocStats(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("alloc_id")
	local, err := s.clientFor(w, r, id)
	if err != nil || local == nil {
		return alreadyWrittenOr(err)
	}
	return clientapi.Stats(r.Context(), local, id)
}
