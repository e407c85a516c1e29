package command

import (
	"net/http"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

// TestJobRunShowsPlacementsAsTheyHappen: the monitor prints a placement as
// soon as the evaluation's allocations show it, while the evaluation is
// still pending. Gates in the fake order the answers: the allocation
// arrives after the monitor has seen the pending evaluation, and the
// evaluation completes only once the monitor is waiting for more
// allocations, that is after it printed the first one.
func TestJobRunShowsPlacementsAsTheyHappen(t *testing.T) {
	f := newFakeAPI(t)
	evalSeenPending := make(chan struct{})
	allocPrinted := make(chan struct{})
	const id = "e1e1e1e1-full"
	f.on("PUT", "/v1/jobs", reply(9, state.JobRegisterResponse{EvalID: id, JobModifyIndex: 9}))
	f.on("GET", "/v1/job/web/evaluations",
		reply(10, []*state.Evaluation{{ID: id, Status: "pending", TriggeredBy: "job-register"}}),
		func(w http.ResponseWriter, r *http.Request) {
			close(evalSeenPending)
			select {
			case <-allocPrinted:
			case <-r.Context().Done():
				return
			}
			reply(12, []*state.Evaluation{{ID: id, Status: "complete", TriggeredBy: "job-register"}})(w, r)
		},
	)
	f.on("GET", "/v1/evaluation/"+id+"/allocations",
		func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-evalSeenPending:
			case <-r.Context().Done():
				return
			}
			reply(11, []*state.AllocListStub{{ID: "a1a1a1a1-full", EvalID: id, NodeID: "n1n1n1n1-full", TaskGroup: "cache"}})(w, r)
		},
		func(w http.ResponseWriter, r *http.Request) {
			// The monitor asks for more only after printing what it got.
			close(allocPrinted)
			<-r.Context().Done()
		},
	)
	f.on("GET", "/v1/job/web/allocations", reply(12, []*state.Allocation{
		{ID: "a1a1a1a1-full", EvalID: id, NodeID: "n1n1n1n1-full", TaskGroup: "cache"},
		{ID: "a2a2a2a2-full", EvalID: id, NodeID: "n2n2n2n2-full", TaskGroup: "cache"},
	}))
	r := runCLI(t, f, runOpts{}, "job", "run", writeFile(t, "web.json", `{"ID":"web"}`))
	ts := "2025-03-01T12:00:00Z"
	r.check(t, 0, lines(
		"Job registration successful",
		"Evaluation ID: "+id,
		"Job Modify Index: 9",
		"",
		`==> `+ts+`: Monitoring evaluation "e1e1e1e1"`,
		`    `+ts+`: Evaluation triggered by job "web"`,
		`    `+ts+`: Allocation "a1a1a1a1" created: node "n1n1n1n1", group "cache"`,
		`    `+ts+`: Evaluation status changed: "pending" -> "complete"`,
		// The last placement is caught by the final listing.
		`    `+ts+`: Allocation "a2a2a2a2" created: node "n2n2n2n2", group "cache"`,
		`==> `+ts+`: Evaluation "e1e1e1e1" finished with status "complete"`,
	), "")
	reqs := f.requests("GET /v1/evaluation/" + id + "/allocations")
	if len(reqs) != 2 || reqs[0].Query.Get("index") != "" || reqs[1].Query.Get("index") != "11" || reqs[1].Query.Get("task_states") != "false" {
		t.Errorf("allocation watch requests %+v", reqs)
	}
}

// TestJobRunPlacementsBeforeEvaluationShowsUp: allocations seen before the
// evaluation itself are printed after the line that introduces it.
func TestJobRunPlacementsBeforeEvaluationShowsUp(t *testing.T) {
	f := newFakeAPI(t)
	allocReceived := make(chan struct{})
	const id = "e1e1e1e1-full"
	f.on("PUT", "/v1/jobs", reply(9, state.JobRegisterResponse{EvalID: id, JobModifyIndex: 9}))
	f.on("GET", "/v1/job/web/evaluations", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-allocReceived:
		case <-r.Context().Done():
			return
		}
		reply(12, []*state.Evaluation{{ID: id, Status: "complete", TriggeredBy: "job-register"}})(w, r)
	})
	f.on("GET", "/v1/evaluation/"+id+"/allocations",
		reply(11, []*state.AllocListStub{{ID: "a1a1a1a1-full", EvalID: id, NodeID: "n1n1n1n1-full", TaskGroup: "cache"}}),
		func(w http.ResponseWriter, r *http.Request) {
			close(allocReceived) // the monitor took the first answer
			<-r.Context().Done()
		},
	)
	f.on("GET", "/v1/job/web/allocations", reply(12, []*state.Allocation{{ID: "a1a1a1a1-full", EvalID: id, NodeID: "n1n1n1n1-full", TaskGroup: "cache"}}))
	r := runCLI(t, f, runOpts{}, "job", "run", writeFile(t, "web.json", `{"ID":"web"}`))
	ts := "2025-03-01T12:00:00Z"
	r.check(t, 0, lines(
		"Job registration successful",
		"Evaluation ID: "+id,
		"Job Modify Index: 9",
		"",
		`==> `+ts+`: Monitoring evaluation "e1e1e1e1"`,
		`    `+ts+`: Evaluation triggered by job "web"`,
		`    `+ts+`: Allocation "a1a1a1a1" created: node "n1n1n1n1", group "cache"`,
		`==> `+ts+`: Evaluation "e1e1e1e1" finished with status "complete"`,
	), "")
}

// job run exits 2 when the deployment it follows fails.
func TestJobRunFailedDeploymentExitsTwo(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/jobs", reply(9, state.JobRegisterResponse{EvalID: "e1", JobModifyIndex: 9}))
	f.on("GET", "/v1/job/web/evaluations", reply(12, []*state.Evaluation{{ID: "e1", Status: "complete", TriggeredBy: "job-register"}}))
	f.on("GET", "/v1/job/web/allocations", reply(12, []*state.Allocation{}))
	f.on("GET", "/v1/job/web/deployment", reply(13, &state.Deployment{ID: "d1", JobID: "web", JobModifyIndex: 9,
		Status: state.DeploymentStatusFailed, StatusDescription: "Failed due to progress deadline"}))
	r := runCLI(t, f, runOpts{}, "job", "run", writeFile(t, "web.json", `{"ID":"web"}`))
	if r.code != exitPlacementFailed || !strings.Contains(r.stdout, "failed (Failed due to progress deadline)") {
		t.Errorf("exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
	}
}
