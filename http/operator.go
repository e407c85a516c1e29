package http

import (
	"io"
	"net/http"

	"github.com/julienschmidt/httprouter"
)

func (s *Server) operatorRaftConfiguration(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	conf, err := s.cfg.Forwarder.RaftConfiguration()
	if err != nil {
		return nil, err
	}
	if conf.Index > 0 {
		s.setMeta(w, conf.Index)
	}
	return conf, nil
}

// operatorRaftRemovePeer serves DELETE /v1/operator/raft/peer?id=ID or
// ?address=HOST:PORT. Exactly one must be given.
func (s *Server) operatorRaftRemovePeer(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	q := r.URL.Query()
	id, addr := q.Get("id"), q.Get("address")
	if (id == "") == (addr == "") {
		return nil, badRequest("exactly one of the query parameters id and address is required")
	}
	if err := s.cfg.Forwarder.RemoveRaftPeer(id, addr); err != nil {
		return nil, err
	}
	return nil, nil
}

// operatorSnapshotSave serves GET /v1/operator/snapshot: the body is a
// snapshot archive (gzip) of the answering server's state, the leader's
// unless ?stale. An error after the stream began cuts the connection, so
// the client sees a truncated archive, which restore refuses, rather than a
// damaged one.
func (s *Server) operatorSnapshotSave(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	h := w.Header()
	h.Set("Content-Type", "application/gzip")
	h.Set("Content-Disposition", `attachment; filename="sched.snap"`)
	cw := &countingWriter{w: w}
	if err := s.cfg.Forwarder.SaveSnapshot(cw); err != nil {
		if cw.n == 0 {
			h.Del("Content-Disposition")
			return nil, err
		}
		s.log.Error("snapshot stream failed", "after_bytes", cw.n, "error", err)
		panic(http.ErrAbortHandler)
	}
	return alreadyWritten{}, nil
}

// operatorSnapshotRestore serves PUT /v1/operator/snapshot: the body is an
// archive from GET /v1/operator/snapshot. It has no size limit beyond the
// disk, unlike other request bodies.
func (s *Server) operatorSnapshotRestore(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	body := r.Body
	if raw, ok := r.Context().Value(rawBodyKey{}).(io.ReadCloser); ok {
		body = raw
	}
	if body == nil || body == http.NoBody {
		return nil, badRequest("request body is required: a snapshot archive")
	}
	if err := s.cfg.Forwarder.RestoreSnapshot(r.Context(), body); err != nil {
		return nil, err
	}
	return nil, nil
}

// rawBodyKey keys the request body as it arrived, before the general size
// limit, in the context of a snapshot restore.
type rawBodyKey struct{}

func isSnapshotRestore(r *http.Request) bool {
	return r.URL.Path == "/v1/operator/snapshot" && (r.Method == http.MethodPut || r.Method == http.MethodPost)
}

// countingWriter counts bytes written, to tell "failed before anything was
// sent" from "failed mid-stream".
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
