package jobs

import (
	"errors"
	"net/http"
	"testing"

	schedhttp "github.com/schedhq/sched/http"
	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// A leader elected a moment ago may not have applied the previous
// leader's last entries: a node registered just before the election is
// missing from its store for a moment. Its heartbeat and status update
// look again after the read barrier instead of answering 404 (which makes
// the client register again), and answer the barrier's error when it
// fails.
func TestNodeHeartbeatMissingNodeWaitsForTheBarrier(t *testing.T) {
	for _, via := range []string{"heartbeat", "status"} {
		t.Run(via, func(t *testing.T) {
			h, fl := newSchedHarness(t)
			n := apitest.TestNode(1)
			send := func(want int) {
				t.Helper()
				url, body := "/v1/node/"+n.ID+"/heartbeat", any(nil)
				if via == "status" {
					url, body = "/v1/node/"+n.ID+"/status", map[string]any{"Status": "ready"}
				}
				if want == http.StatusOK {
					var out state.NodeUpdateResponse
					h.OK(http.MethodPut, url, body, &out)
					if out.HeartbeatTTL != apitest.TTL {
						t.Errorf("TTL %v, want %v", out.HeartbeatTTL, apitest.TTL)
					}
					return
				}
				h.Fail(http.MethodPut, url, body, want)
			}

			// The barrier applies the registration, as a new leader's
			// store catches up.
			h.cluster.OnBarrier = func() {
				if got, _ := h.Store.NodeByID(nil, n.ID); got == nil {
					h.Apply(store.NodeRegisterRequestType, &store.NodeRegisterRequest{Node: n.Copy()})
				}
			}
			send(http.StatusOK)
			if got := fl.Beats(); len(got) != 1 || got[0] != n.ID {
				t.Errorf("leader heartbeats %v, want the node's", got)
			}

			// A node the servers do not know after the barrier: 404.
			h.cluster.OnBarrier = nil
			n = apitest.TestNode(2)
			send(http.StatusNotFound)

			// The barrier fails (no leader): not a 404.
			h.cluster.FailBarrier(&schedhttp.CodedError{Code: http.StatusServiceUnavailable, Message: "no cluster leader", Err: errors.New("no leader")})
			send(http.StatusServiceUnavailable)
		})
	}
}

// A client's report on its allocations to a leader that has not yet
// applied the node's registration waits for the barrier too, as the
// heartbeat does; after it, an unknown node is a 404.
func TestNodeAllocsReportMissingNodeWaitsForTheBarrier(t *testing.T) {
	h, _ := newSchedHarness(t)
	n := apitest.TestNode(1)
	body := map[string]any{"Allocs": []any{map[string]any{"ID": "20000000-0000-4000-8000-000000000001", "ClientStatus": "running"}}}
	h.cluster.OnBarrier = func() {
		if got, _ := h.Store.NodeByID(nil, n.ID); got == nil {
			h.Apply(store.NodeRegisterRequestType, &store.NodeRegisterRequest{Node: n.Copy()})
		}
	}
	h.OK(http.MethodPost, "/v1/node/"+n.ID+"/allocations", body, nil)
	if got, _ := h.Store.NodeByID(nil, n.ID); got == nil {
		t.Fatal("the barrier did not run: the node is not in the store")
	}

	h.cluster.OnBarrier = nil
	h.Fail(http.MethodPost, "/v1/node/"+apitest.TestNode(2).ID+"/allocations", body, http.StatusNotFound)

	h.cluster.FailBarrier(&schedhttp.CodedError{Code: http.StatusServiceUnavailable, Message: "no cluster leader", Err: errors.New("no leader")})
	h.Fail(http.MethodPost, "/v1/node/"+apitest.TestNode(3).ID+"/allocations", body, http.StatusServiceUnavailable)
}
