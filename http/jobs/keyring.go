package jobs

import (
	"context"
	"errors"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// KeyringManager is implemented by a Forwarder that can manage the gossip
// encryption keys. Op is "list", "install", "use" or "remove" (key empty
// for list). With local, only this server's keyring is read or changed;
// without, every server gossip knows is asked (each with token, as the
// caller's request was) and the answers are added up.
type KeyringManager interface {
	Keyring(ctx context.Context, op, key string, local bool, token string) (*state.KeyringResponse, error)
}

// keyringOps are the operations of POST /v1/agent/keyring/:op.
var keyringOps = map[string]bool{"install": true, "use": true, "remove": true}

// keyringRoutes registers the gossip keyring endpoints when the cluster
// can serve them. Every server answers them itself (no forwarding to the
// leader); ?local=true keeps the operation on the receiving server, which
// is how a server fans one out to the others.
func (h clusterAPI) keyringRoutes() {
	km, ok := h.cfg.Cluster.(KeyringManager)
	if !ok {
		return
	}
	h.core.Route(http.MethodGet, "/v1/agent/keyring/list", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
		return keyringAnswer(km.Keyring(r.Context(), "list", "", h.core.Query(r).Get("local") == "true", h.core.RequestToken(r)))
	})
	h.write("/v1/agent/keyring/:op", func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
		op := p.ByName("op")
		if !keyringOps[op] {
			return nil, state.NotFoundf("keyring operation %q (install, use, remove or list)", op)
		}
		var req state.KeyringRequest
		if err := codec.DecodeBody(r, &req); err != nil {
			return nil, err
		}
		if req.Key == "" {
			return nil, codec.BadRequest("Key: a base64 gossip key is required")
		}
		return keyringAnswer(km.Keyring(r.Context(), op, req.Key, h.core.Query(r).Get("local") == "true", h.core.RequestToken(r)))
	})
}

// ErrKeyringInput marks a keyring error caused by the request (a key that
// is not base64 or of the wrong size, gossip not encrypted): a 400.
var ErrKeyringInput = errors.New("keyring")

func keyringAnswer(resp *state.KeyringResponse, err error) (any, error) {
	if errors.Is(err, ErrKeyringInput) {
		return nil, codec.BadRequest("%s", err.Error())
	}
	return resp, err
}
