package jobs

import (
	"net/http"
	"strconv"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// schedConfigAPI serves /v1/operator/scheduler/configuration, the
// cluster's scheduler configuration (state.SchedulerConfiguration), in
// Nomad's wire shape.
type schedConfigAPI struct{ *api }

func (h schedConfigAPI) routes() {
	h.core.Route(http.MethodGet, "/v1/operator/scheduler/configuration", h.get)
	h.write("/v1/operator/scheduler/configuration", h.set)
}

// get serves GET /v1/operator/scheduler/configuration: {SchedulerConfig,
// Index}. Before any write it answers the defaults with index 0 in the
// configuration (the table's index in the answer).
func (h schedConfigAPI) get(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	var out state.SchedulerConfigurationResponse
	err := h.core.Read(w, r, func(ws memdb.WatchSet, _ string) (uint64, error) {
		c, err := h.store.SchedulerConfig(ws)
		if err != nil {
			return 0, err
		}
		out.SchedulerConfig = c.Copy()
		out.Index = h.maxIndex(store.TableSchedulerConfig)
		return out.Index, nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// set serves PUT/POST /v1/operator/scheduler/configuration: the body is
// the whole configuration (Nomad's client sends every field; an absent
// one is its zero value), ?cas=<ModifyIndex> makes it a check-and-set
// answered {Updated: false} when the index does not match.
func (h schedConfigAPI) set(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	var c state.SchedulerConfiguration
	if err := codec.DecodeBody(r, &c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.CreateIndex, c.ModifyIndex = 0, 0
	req := &store.SchedulerConfigSetRequest{Config: &c}
	if s := h.core.Query(r).Get("cas"); s != "" {
		idx, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, codec.BadRequest("cas: must be a non-negative integer (the configuration's ModifyIndex), got %q", s)
		}
		req.CAS, req.CASIndex = true, idx
	}
	resp, index, err := h.core.Propose(w, r, store.SchedulerConfigSetRequestType, req)
	if err != nil {
		return nil, err
	}
	out := &state.SchedulerSetConfigurationResponse{Index: index}
	if rr, ok := resp.(*store.SchedulerConfigSetResponse); ok {
		out.Updated = rr.Updated
	}
	return out, nil
}

// errRegistrationRejected is the answer to a job registration, dispatch,
// scale or revert while the scheduler configuration's
// RejectJobRegistration is set and the caller is not a management token.
var errRegistrationRejected = &codec.CodedError{
	Code:    http.StatusForbidden,
	Message: "Permission denied: job registration, dispatch, scale and revert are disabled by the scheduler configuration (RejectJobRegistration); only a management token may write jobs",
}

// checkRegistrationAllowed refuses the request when the scheduler
// configuration rejects job registrations and the caller's token is not a
// management token. With ACLs disabled there is no management token: every
// registration is refused, as in Nomad.
func (h *api) checkRegistrationAllowed(r *http.Request) error {
	c, err := h.store.SchedulerConfig(nil)
	if err != nil {
		return err
	}
	if !c.RejectJobRegistration {
		return nil
	}
	if tok := h.core.Token(r); tok != nil && tok.IsManagement() {
		return nil
	}
	return errRegistrationRejected
}
