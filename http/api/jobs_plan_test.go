package api

import (
	"context"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

func TestJobPlanAndEvaluateEndpoints(t *testing.T) {
	job := &state.Job{ID: "web", Type: "service"}
	launch := time.Date(2025, 6, 2, 2, 30, 0, 0, time.UTC)
	cases := []endpointCase{
		{
			name: "plan",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Jobs().Plan(ctx, job, true, false, &WriteOptions{Namespace: "prod"}))
			},
			reply: reply{Header: indexHeader, Body: `{"Index":17,"NextPeriodicLaunch":"2025-06-02T02:30:00Z","JobModifyIndex":9,
				"Diff":{"Type":"Added","ID":"web"},"CreatedEvals":[{"ID":"b1","Status":"blocked"}],
				"FailedTGAllocs":{"web":{"NodesEvaluated":3,"DimensionExhausted":{"memory":3}}},
				"Annotations":{"DesiredTGUpdates":{"web":{"Place":2,"Ignore":1}}}}`},
			method: "PUT", path: "/v1/job/web/plan", query: map[string][]string{"namespace": {"prod"}},
			body: `{"Job":` + testutil.MustJSON(t, job) + `,"Diff":true,"PolicyOverride":false}`,
			want: withMeta{&state.JobPlanResponse{
				Index: 17, NextPeriodicLaunch: launch, JobModifyIndex: 9,
				Diff:           &state.JobDiff{Type: state.DiffTypeAdded, ID: "web"},
				CreatedEvals:   []*state.Evaluation{{ID: "b1", Status: "blocked"}},
				FailedTGAllocs: map[string]*state.AllocMetric{"web": {NodesEvaluated: 3, DimensionExhausted: map[string]int{"memory": 3}}},
				Annotations:    &state.PlanAnnotations{DesiredTGUpdates: map[string]*state.DesiredUpdates{"web": {Place: 2, Ignore: 1}}},
			}, 17},
		},
		{
			name: "evaluate",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Jobs().Evaluate(ctx, "web", state.EvalOptions{ForceReschedule: true}, nil))
			},
			reply:  reply{Header: indexHeader, Body: `{"EvalID":"e1","EvalCreateIndex":17,"JobModifyIndex":9,"Index":17}`},
			method: "PUT", path: "/v1/job/web/evaluate",
			body: `{"JobID":"web","EvalOptions":{"ForceReschedule":true}}`,
			want: withMeta{&state.JobEvaluateResponse{EvalID: "e1", EvalCreateIndex: 17, JobModifyIndex: 9, Index: 17}, 17},
		},
	}
	runEndpointCases(t, cases)
}
