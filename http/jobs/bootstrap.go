package jobs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// ACLBootstrapRequest is the optional body of POST /v1/acl/bootstrap.
type ACLBootstrapRequest struct {
	// BootstrapSecret, when set, becomes the secret of the bootstrap token
	// (a UUID), so automation can choose it ahead of time.
	BootstrapSecret string
	// AdminName and AdminEmail name the site administrator the bootstrap
	// token speaks for on the management API (defaults: admin and
	// admin@localhost), so that organizations it creates have an owner.
	AdminName  string `json:",omitempty"`
	AdminEmail string `json:",omitempty"`
}

// aclBootstrap serves POST /v1/acl/bootstrap: the first management token,
// exactly once, whether or not /v1 enforcement is on. Further calls are
// refused with a 400 naming the reset index, unless the reset file holds
// that index.
func (h aclAPI) aclBootstrap(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	var req ACLBootstrapRequest
	if err := decodeOptionalBody(r, &req); err != nil {
		return nil, err
	}
	if req.BootstrapSecret != "" && !state.IsID(req.BootstrapSecret) {
		return nil, codec.BadRequest("BootstrapSecret: must be a UUID")
	}
	resetPath := h.core.BootstrapResetPath()
	resetIndex, haveReset, err := readResetFile(resetPath)
	if err != nil {
		return nil, err
	}
	if done, resetAt, err := h.bootstrapped(); err != nil {
		return nil, err
	} else if done && (!haveReset || resetIndex != resetAt) {
		// Refuse here, without a log entry; Apply decides races.
		return nil, codec.BadRequest("%s", store.BootstrapDoneMessage(resetAt))
	}

	secret := req.BootstrapSecret
	if secret == "" {
		secret = state.NewID()
	}
	tok := &state.ACLToken{
		AccessorID: h.core.NewID(),
		SecretHash: state.HashSecret(secret),
		Name:       "Bootstrap Token",
		Type:       state.ACLTokenTypeManagement,
		Global:     true,
		CreateTime: h.core.Now().UTC(),
	}
	admin, err := store.NewBootstrapAdmin(req.AdminName, req.AdminEmail, h.core.Now(), h.core.NewID())
	if err != nil {
		return nil, err
	}
	if _, _, err := h.core.Propose(w, r, store.ACLBootstrapRequestType, &store.ACLBootstrapRequest{Token: tok, ResetIndex: resetIndex, AdminUser: admin}); err != nil {
		return nil, err
	}
	if haveReset {
		if err := os.Remove(resetPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			// The reset index moved with this bootstrap, so the file
			// cannot be used twice even if it stays.
			h.core.Logger().Warn("remove ACL bootstrap reset file", "path", resetPath, "error", err)
		}
	}
	return h.tokenWithSecret(tok.AccessorID, secret)
}

// bootstrapped reports whether bootstrap happened, and its reset index.
func (h aclAPI) bootstrapped() (bool, uint64, error) {
	idx, done, err := h.store.ACLBootstrapped(nil)
	return done, idx, err
}

// readResetFile reads the reset index an operator wrote to path. A missing
// file (or no path) is no reset; a malformed one is a 400 naming the file,
// since the operator meant something by it.
func readResetFile(path string) (uint64, bool, error) {
	if path == "" {
		return 0, false, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read ACL bootstrap reset file: %w", err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		// Name the file, not its path: the caller may be anyone.
		return 0, false, codec.BadRequest("%s on the leader: %q is not a reset index (a non-negative integer)", filepath.Base(path), strings.TrimSpace(string(data)))
	}
	return n, true, nil
}

// decodeOptionalBody decodes a JSON body into v when there is one; an
// empty body leaves v as it is.
func decodeOptionalBody(r *http.Request, v any) error {
	if r.Body == nil {
		return nil
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &codec.CodedError{Code: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("request body exceeds %d bytes", mbe.Limit)}
		}
		return codec.BadRequest("read request body: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	return codec.DecodeBody(r, v)
}
