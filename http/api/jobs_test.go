package api

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// endpointCase is one client call checked on the wire: the request it must
// send, the answer the fake gives, and what the call must return.
type endpointCase struct {
	name      string
	call      func(ctx context.Context, c *Client) (any, error)
	reply     reply
	method    string
	path      string
	query     url.Values
	body      string // JSON the request body must equal; empty means no body
	want      any
	wantIndex uint64 // checked when the call returns a meta
}

func runEndpointCases(t *testing.T, cases []endpointCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.reply)
			got, err := tc.call(context.Background(), f.client(t, Config{Token: "s3cret"}))
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != tc.method || r.RawPath != tc.path {
				t.Errorf("request = %s %s, want %s %s", r.Method, r.RawPath, tc.method, tc.path)
			}
			wantQuery := tc.query
			if wantQuery == nil {
				wantQuery = url.Values{}
			}
			if !reflect.DeepEqual(r.Query, wantQuery) {
				t.Errorf("query = %v, want %v", r.Query, wantQuery)
			}
			if r.Header.Get(HeaderToken) != "s3cret" {
				t.Errorf("token header = %q", r.Header.Get(HeaderToken))
			}
			if tc.body == "" {
				if len(r.Body) != 0 {
					t.Errorf("unexpected body %s", r.Body)
				}
			} else {
				if ct := r.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q", ct)
				}
				if !testutil.JSONEqual(t, r.Body, tc.body) {
					t.Errorf("body = %s\nwant %s", r.Body, tc.body)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("result = %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

// withMeta pairs a result with its meta so a case can check both.
type withMeta struct {
	V     any
	Index uint64
}

func q(v any, qm *QueryMeta, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return withMeta{v, qm.LastIndex}, nil
}

func w(v any, wm *WriteMeta, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return withMeta{v, wm.LastIndex}, nil
}

func wOnly(wm *WriteMeta, err error) (any, error) { return w(nil, wm, err) }

var indexHeader = map[string]string{HeaderIndex: "17"}

func TestJobsEndpoints(t *testing.T) {
	job := &state.Job{ID: "web", Name: "web", Type: "service", Priority: 50,
		TaskGroups: []*state.TaskGroup{{Name: "cache", Count: 2}}}
	cases := []endpointCase{
		{
			name: "list",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Jobs().List(ctx, &QueryOptions{Prefix: "w"}))
			},
			reply:  reply{Header: indexHeader, Body: `[{"ID":"web","Type":"service","Priority":50,"Status":"running"}]`},
			method: "GET", path: "/v1/jobs", query: url.Values{"prefix": {"w"}},
			want: withMeta{[]*state.JobListStub{{ID: "web", Type: "service", Priority: 50, Status: "running"}}, 17},
		},
		{
			name: "register",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Jobs().Register(ctx, &state.Job{ID: "web"}, &RegisterOptions{
					EnforceIndex: true, ModifyIndex: 9, EvalPriority: 70, PolicyOverride: true, PreserveCounts: true,
					Submission: &state.JobSubmission{Format: "hcl2", Source: "job {}", VariableFlags: map[string]string{"a": "b"}},
				}, &WriteOptions{Namespace: "prod"}))
			},
			reply:  reply{Header: indexHeader, Body: `{"EvalID":"e1","EvalCreateIndex":17,"JobModifyIndex":17,"Warnings":"w","Index":17,"KnownLeader":true}`},
			method: "PUT", path: "/v1/jobs", query: url.Values{"namespace": {"prod"}},
			body: `{"Job":` + testutil.MustJSON(t, &state.Job{ID: "web"}) + `,
				"Submission":{"Format":"hcl2","Source":"job {}","VariableFlags":{"a":"b"},"Variables":"","JobID":"","JobIndex":0,"Namespace":"","Version":0},
				"EnforceIndex":true,"JobModifyIndex":9,"EvalPriority":70,"PolicyOverride":true,"PreserveCounts":true}`,
			want: withMeta{&state.JobRegisterResponse{EvalID: "e1", EvalCreateIndex: 17, JobModifyIndex: 17, Warnings: "w", Index: 17, KnownLeader: true}, 17},
		},
		{
			name: "register without options",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Jobs().Register(ctx, &state.Job{ID: "web"}, nil, nil))
			},
			reply:  reply{Body: `{"EvalID":"e1"}`},
			method: "PUT", path: "/v1/jobs",
			body: `{"Job":` + testutil.MustJSON(t, &state.Job{ID: "web"}) + `,"EnforceIndex":false,"JobModifyIndex":0,"EvalPriority":0,"PolicyOverride":false,"PreserveCounts":false}`,
			want: withMeta{&state.JobRegisterResponse{EvalID: "e1"}, 0},
		},
		{
			name: "parse",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Jobs().Parse(ctx, `job "web" {}`, `image = "redis"`, true, false, nil)
			},
			reply:  reply{Body: testutil.MustJSON(t, job)},
			method: "PUT", path: "/v1/jobs/parse",
			body: `{"JobHCL":"job \"web\" {}","Canonicalize":true,"Variables":"image = \"redis\"","HCLv1":false}`,
			want: job,
		},
		{
			name: "validate",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Jobs().Validate(ctx, &state.Job{ID: "web"}, nil)
			},
			reply:  reply{Body: `{"DriverConfigValidated":true,"ValidationErrors":["a","b"],"Error":"2 errors","Warnings":"w"}`},
			method: "PUT", path: "/v1/validate/job",
			body: `{"Job":` + testutil.MustJSON(t, &state.Job{ID: "web"}) + `}`,
			want: &state.JobValidateResponse{DriverConfigValidated: true, ValidationErrors: []string{"a", "b"}, Error: "2 errors", Warnings: "w"},
		},
		{
			name: "info escapes the ID",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Jobs().Info(ctx, "a/b c", &QueryOptions{WaitIndex: 3}))
			},
			reply:  reply{Header: indexHeader, Body: testutil.MustJSON(t, job)},
			method: "GET", path: "/v1/job/a%2Fb%20c", query: url.Values{"index": {"3"}},
			want: withMeta{job, 17},
		},
		{
			name: "versions with diffs",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Jobs().Versions(ctx, "web", true, nil))
			},
			reply:  reply{Header: indexHeader, Body: `{"Versions":[{"ID":"web","Version":1},{"ID":"web","Version":0}],"Diffs":[{"Type":"Edited","ID":"web"}],"Index":17,"KnownLeader":true,"LastContact":0}`},
			method: "GET", path: "/v1/job/web/versions", query: url.Values{"diffs": {"true"}},
			want: withMeta{&state.JobVersionsResponse{
				Versions: []*state.Job{{ID: "web", Version: 1}, {ID: "web", Version: 0}},
				Diffs:    []*state.JobDiff{{Type: state.DiffTypeEdited, ID: "web"}},
				Index:    17, KnownLeader: true,
			}, 17},
		},
		{
			name: "versions without diffs",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Jobs().Versions(ctx, "web", false, nil))
			},
			reply:  reply{Body: `{"Versions":[{"ID":"web"}],"Diffs":null}`},
			method: "GET", path: "/v1/job/web/versions",
			want: withMeta{&state.JobVersionsResponse{Versions: []*state.Job{{ID: "web"}}}, 0},
		},
		{
			name: "submission",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Jobs().Submission(ctx, "web", 3, nil))
			},
			reply:  reply{Body: `{"Format":"hcl2","Source":"job {}","JobID":"web","Version":3}`},
			method: "GET", path: "/v1/job/web/submission", query: url.Values{"version": {"3"}},
			want: withMeta{&state.JobSubmission{Format: "hcl2", Source: "job {}", JobID: "web", Version: 3}, 0},
		},
		{
			name: "allocations all",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Jobs().Allocations(ctx, "web", true, nil))
			},
			reply:  reply{Body: `[{"ID":"a1","TaskGroup":"cache","ClientStatus":"running"}]`},
			method: "GET", path: "/v1/job/web/allocations", query: url.Values{"all": {"true"}},
			want: withMeta{[]*state.AllocListStub{{ID: "a1", TaskGroup: "cache", ClientStatus: "running"}}, 0},
		},
		{
			name: "evaluations",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Jobs().Evaluations(ctx, "web", nil))
			},
			reply:  reply{Body: `[{"ID":"e1","Status":"complete"}]`},
			method: "GET", path: "/v1/job/web/evaluations",
			want: withMeta{[]*state.Evaluation{{ID: "e1", Status: "complete"}}, 0},
		},
		{
			name: "deployments",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Jobs().Deployments(ctx, "web", false, nil))
			},
			reply:  reply{Body: `[{"ID":"d1","Status":"running"}]`},
			method: "GET", path: "/v1/job/web/deployments",
			want: withMeta{[]*state.Deployment{{ID: "d1", Status: "running"}}, 0},
		},
		{
			name: "latest deployment",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Jobs().LatestDeployment(ctx, "web", nil))
			},
			reply:  reply{Body: `{"ID":"d1","Status":"successful"}`},
			method: "GET", path: "/v1/job/web/deployment",
			want: withMeta{&state.Deployment{ID: "d1", Status: "successful"}, 0},
		},
		{
			name: "latest deployment none",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Jobs().LatestDeployment(ctx, "web", nil))
			},
			reply:  reply{Body: "null\n"},
			method: "GET", path: "/v1/job/web/deployment",
			want: withMeta{(*state.Deployment)(nil), 0},
		},
		{
			name: "summary",
			call: func(ctx context.Context, c *Client) (any, error) {
				return q(c.Jobs().Summary(ctx, "web", nil))
			},
			reply:  reply{Body: `{"JobID":"web","Summary":{"cache":{"Running":2}}}`},
			method: "GET", path: "/v1/job/web/summary",
			want: withMeta{&state.JobSummary{JobID: "web", Summary: map[string]state.TaskGroupSummary{"cache": {Running: 2}}}, 0},
		},
		{
			name: "deregister plain",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Jobs().Deregister(ctx, "web", false, nil, nil))
			},
			reply:  reply{Header: indexHeader, Body: `{"EvalID":"e2","EvalCreateIndex":17,"JobModifyIndex":17}`},
			method: "DELETE", path: "/v1/job/web",
			want: withMeta{&state.JobDeregisterResponse{EvalID: "e2", EvalCreateIndex: 17, JobModifyIndex: 17}, 17},
		},
		{
			name: "deregister with every option",
			call: func(ctx context.Context, c *Client) (any, error) {
				return w(c.Jobs().Deregister(ctx, "web", true, &DeregisterOptions{Global: true, EvalPriority: 90, NoShutdownDelay: true}, nil))
			},
			reply:  reply{Body: `{"EvalID":"e2"}`},
			method: "DELETE", path: "/v1/job/web",
			query: url.Values{"purge": {"true"}, "global": {"true"}, "eval_priority": {"90"}, "no_shutdown_delay": {"true"}},
			want:  withMeta{&state.JobDeregisterResponse{EvalID: "e2"}, 0},
		},
	}
	runEndpointCases(t, cases)
}

func TestJobsErrorsPassThrough(t *testing.T) {
	f := newFake(t, reply{Status: http.StatusConflict, Body: "job modify index mismatch\n"})
	_, _, err := f.client(t, Config{}).Jobs().Register(context.Background(), &state.Job{ID: "web"}, &RegisterOptions{EnforceIndex: true}, nil)
	if err == nil || err.Error() != "Unexpected response code: 409 (job modify index mismatch)" {
		t.Fatalf("err = %v", err)
	}
}
