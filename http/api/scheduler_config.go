package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/schedhq/sched/state"
)

// SchedulerGetConfiguration reads the cluster's scheduler configuration
// (GET /v1/operator/scheduler/configuration; ACL operator:read).
func (o *Operator) SchedulerGetConfiguration(ctx context.Context, q *QueryOptions) (*state.SchedulerConfigurationResponse, *QueryMeta, error) {
	return get[*state.SchedulerConfigurationResponse](ctx, o.c, "/v1/operator/scheduler/configuration", nil, q)
}

// SchedulerSetConfiguration replaces the scheduler configuration with c
// (PUT /v1/operator/scheduler/configuration; ACL operator:write). Every
// field is written: read, change and write back to keep the others.
func (o *Operator) SchedulerSetConfiguration(ctx context.Context, c *state.SchedulerConfiguration, w *WriteOptions) (*state.SchedulerSetConfigurationResponse, error) {
	var out state.SchedulerSetConfigurationResponse
	if _, err := o.c.write(ctx, http.MethodPut, "/v1/operator/scheduler/configuration", nil, w, c, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SchedulerCASConfiguration is SchedulerSetConfiguration as a
// check-and-set: it writes only when the stored configuration's
// ModifyIndex is c.ModifyIndex, and answers Updated false otherwise.
func (o *Operator) SchedulerCASConfiguration(ctx context.Context, c *state.SchedulerConfiguration, w *WriteOptions) (*state.SchedulerSetConfigurationResponse, error) {
	var out state.SchedulerSetConfigurationResponse
	params := url.Values{"cas": {strconv.FormatUint(c.ModifyIndex, 10)}}
	if _, err := o.c.write(ctx, http.MethodPut, "/v1/operator/scheduler/configuration", params, w, c, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
