package jobs

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"strconv"

	"github.com/julienschmidt/httprouter"
	"github.com/schedhq/sched/http/codec"
)

func (h clusterAPI) operatorRaftConfiguration(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	conf, err := h.cfg.Cluster.RaftConfiguration()
	if err != nil {
		return nil, err
	}
	if conf.Index > 0 {
		h.core.SetMeta(w, conf.Index)
	}
	return conf, nil
}

// operatorRaftRemovePeer serves DELETE /v1/operator/raft/peer?id=ID or
// ?address=HOST:PORT. Exactly one must be given.
func (h clusterAPI) operatorRaftRemovePeer(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	q := h.core.Query(r)
	id, addr := q.Get("id"), q.Get("address")
	if (id == "") == (addr == "") {
		return nil, codec.BadRequest("exactly one of the query parameters id and address is required")
	}
	if err := h.cfg.Cluster.RemoveRaftPeer(id, addr); err != nil {
		return nil, err
	}
	return nil, nil
}

// operatorSnapshotSave serves GET /v1/operator/snapshot: the body is a
// snapshot archive (gzip) of the answering server's state, the leader's
// unless ?stale. The archive is spooled to a temporary file first, so the
// answer carries a Digest header (sha-256, base64, RFC 3230) that clients
// such as Nomad's check the body against, and a failure while taking the
// snapshot is an ordinary error answer rather than a cut stream.
func (h clusterAPI) operatorSnapshotSave(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	f, err := os.CreateTemp("", "sched-snapshot-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	sum := sha256.New()
	if err := h.cfg.Cluster.SaveSnapshot(io.MultiWriter(f, sum)); err != nil {
		return nil, err
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/gzip")
	hd.Set("Content-Disposition", `attachment; filename="sched.snap"`)
	hd.Set("Digest", "sha-256="+base64.StdEncoding.EncodeToString(sum.Sum(nil)))
	hd.Set("Content-Length", strconv.FormatInt(size, 10))
	if n, err := io.Copy(w, f); err != nil {
		h.core.Logger().Error("snapshot stream failed", "after_bytes", n, "error", err)
		panic(http.ErrAbortHandler)
	}
	return codec.AlreadyWritten{}, nil
}

// operatorSnapshotRestore serves PUT /v1/operator/snapshot: the body is an
// archive from GET /v1/operator/snapshot. It has no size limit beyond the
// disk, unlike other request bodies.
func (h clusterAPI) operatorSnapshotRestore(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	body := r.Body
	if raw, ok := h.core.RawBody(r); ok {
		body = raw
	}
	if body == nil || body == http.NoBody {
		return nil, codec.BadRequest("request body is required: a snapshot archive")
	}
	if err := h.cfg.Cluster.RestoreSnapshot(r.Context(), body); err != nil {
		return nil, err
	}
	return nil, nil
}
