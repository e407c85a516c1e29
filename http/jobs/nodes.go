package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// The node endpoints are the servers' side of client agents: a client
// registers its node, heartbeats within the TTL the leader hands out,
// learns its work by a blocking read of its allocations and reports their
// status back. Operators read nodes and change their eligibility and
// drain.
//
// Node reads accept a unique prefix of a node ID, as Nomad's CLI does: an
// exact ID wins, a prefix matching one node reads that node, and a prefix
// matching several is a 400 listing them. Writes name the node by its
// full ID.

// NodeRegisterRequest is the body of POST /v1/node/register. Node.SecretID
// (never shown in reads) travels in the body as "Node.SecretID".
type NodeRegisterRequest struct {
	Node *state.Node
}

// NodeStatusRequest is the body of PUT /v1/node/:node_id/status.
type NodeStatusRequest struct {
	Status            string
	StatusDescription string
}

// NodeEligibilityRequest is the body of PUT /v1/node/:node_id/eligibility.
type NodeEligibilityRequest struct {
	Eligibility string
}

// NodeDrainRequest is the body of PUT /v1/node/:node_id/drain. A null
// DrainSpec cancels the drain; MarkEligible then also makes the node
// eligible again (it stays ineligible otherwise, as in Nomad).
type NodeDrainRequest struct {
	DrainSpec    *state.DrainSpec
	MarkEligible bool
}

// nodeWire is how a node arrives in a register body: state.Node hides
// SecretID from JSON so that reads never show it, so the body's SecretID
// is read here.
type nodeWire struct {
	*state.Node
	SecretID string
}

// nodeAPI serves /v1/nodes, /v1/node (register, heartbeats, status, drain, eligibility, the allocations of a node and their client updates) and node pools.
type nodeAPI struct{ *api }

// nodeRoutes registers the node endpoints. /v1/node/register and the pool
// routes (node_pools.go) share a position with :node_id; the router
// prefers the static segment.
func (h nodeAPI) nodeRoutes() {
	h.core.Route(http.MethodGet, "/v1/nodes", h.nodeList)
	h.write("/v1/node/register", h.nodeRegister)
	h.core.Route(http.MethodGet, "/v1/node/:node_id", h.nodeRead)
	h.write("/v1/node/:node_id/heartbeat", h.nodeHeartbeat)
	h.write("/v1/node/:node_id/status", h.nodeUpdateStatus)
	h.write("/v1/node/:node_id/eligibility", h.nodeUpdateEligibility)
	h.write("/v1/node/:node_id/drain", h.nodeUpdateDrain)
	h.core.Route(http.MethodGet, "/v1/node/:node_id/allocations", h.nodeAllocations)
	h.core.Route(http.MethodGet, "/v1/node/:node_id/allocations/changes", h.nodeAllocChanges)
	h.write("/v1/node/:node_id/allocations", h.nodeUpdateAllocs)
}

// poolNameRE is what a node pool name may hold, as in Nomad.
var poolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// nodeRegister serves POST /v1/node/register: it validates the node, fills
// the server-side fields (ComputedClass, status, eligibility for a new
// node), writes it with the evaluations its arrival calls for (one per
// system or sysbatch job that may run on it, and, when it comes back from
// down or changes class, one per job with allocations on it), and starts
// its heartbeat timer.
func (h nodeAPI) nodeRegister(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	var body struct{ Node *nodeWire }
	if err := codec.DecodeBody(r, &body); err != nil {
		return nil, err
	}
	if body.Node == nil || body.Node.Node == nil {
		return nil, codec.BadRequest("Node: a node is required")
	}
	n := body.Node.Node.Copy()
	n.SecretID = body.Node.SecretID
	if err := validateNode(n); err != nil {
		return nil, err
	}
	leader, err := h.leader()
	if err != nil {
		return nil, err
	}
	// Servers own these: a client cannot register itself eligible,
	// undrained or into a class of its choosing.
	n.SchedulingEligibility, n.Drain, n.DrainStrategy = "", false, nil
	n.CreateIndex, n.ModifyIndex = 0, 0
	if n.NodePool == "" {
		n.NodePool = state.NodePoolDefault
	}
	if n.Name == "" {
		n.Name = n.ID
	}
	if n.Status == "" {
		n.Status = state.NodeStatusReady
	}
	n.ComputedClass = scheduler.ComputeClass(n)

	old, err := h.store.NodeByID(nil, n.ID)
	if err != nil {
		return nil, err
	}
	// Only the secret's hash is proposed: raft and snapshots never hold it.
	n.SealSecret()
	if old != nil && old.SecretHash != "" && n.SecretHash != "" && old.SecretHash != n.SecretHash {
		return nil, codec.BadRequest("Node.SecretID: does not match the secret node %q registered with", n.ID)
	}
	now := h.core.Now()
	var evals []*state.Evaluation
	if n.Status == state.NodeStatusReady && (old == nil || old.Status != state.NodeStatusReady ||
		old.ComputedClass != n.ComputedClass || old.NodePool != n.NodePool || old.Datacenter != n.Datacenter) {
		if evals, err = h.nodeEvals(n, true, now.UnixNano()); err != nil {
			return nil, err
		}
	}
	// A node back from down or disconnected by registering (its client
	// restarted, or the servers answered its heartbeat 404) joins the
	// evaluations held for its jobs, as a heartbeat bringing it back does.
	returning := old != nil && old.Status != state.NodeStatusReady && n.Status == state.NodeStatusReady
	cmd := &store.NodeUpsertRequest{Node: n, Evals: evals, UpdatedAt: now.Unix(), Returning: returning}
	resp, index, err := h.core.Propose(w, r, store.NodeUpsertRequestType, cmd)
	if err != nil {
		return nil, err
	}
	ttl, err := leader.Heartbeat(n.ID)
	if err != nil {
		return nil, leaderError(err)
	}
	return nodeUpdateResponse(index, ttl, resp), nil
}

// validateNode checks a node a client registers, listing every problem
// with its field path.
func validateNode(n *state.Node) error {
	v := &state.ValidationError{}
	switch {
	case n.ID == "":
		v.Add("Node.ID", "required")
	case !state.IsID(n.ID):
		v.Add("Node.ID", "%q is not a UUID", n.ID)
	}
	if n.SecretID != "" && !state.IsID(n.SecretID) {
		v.Add("Node.SecretID", "is not a UUID")
	}
	if n.Datacenter == "" {
		v.Add("Node.Datacenter", "required")
	} else if strings.ContainsAny(n.Datacenter, "*\x00") {
		v.Add("Node.Datacenter", "%q must not contain '*'", n.Datacenter)
	}
	switch {
	case n.NodePool == state.NodePoolAll:
		v.Add("Node.NodePool", "nodes cannot join the built-in %q node pool", state.NodePoolAll)
	case n.NodePool != "" && !poolNameRE.MatchString(n.NodePool):
		v.Add("Node.NodePool", "%q must be 1 to 128 letters, digits, '_' or '-'", n.NodePool)
	}
	switch n.Status {
	case "", state.NodeStatusInit, state.NodeStatusReady:
	default:
		v.Add("Node.Status", "a node registers as %q or %q, not %q", state.NodeStatusInit, state.NodeStatusReady, n.Status)
	}
	if n.HTTPAddr != "" {
		if _, port, err := net.SplitHostPort(n.HTTPAddr); err != nil || port == "" {
			v.Add("Node.HTTPAddr", "%q is not host:port", n.HTTPAddr)
		}
	}
	if res := n.NodeResources; res != nil {
		for _, f := range []struct {
			name string
			val  int
		}{{"CPU", res.CPU}, {"Cores", res.Cores}, {"MemoryMB", res.MemoryMB}, {"DiskMB", res.DiskMB}} {
			if f.val < 0 {
				v.Add("Node.NodeResources."+f.name, "must not be negative, got %d", f.val)
			}
		}
		checkPortRange(v, "Node.NodeResources.MinDynamicPort", res.MinDynamicPort)
		checkPortRange(v, "Node.NodeResources.MaxDynamicPort", res.MaxDynamicPort)
		if res.MinDynamicPort != 0 && res.MaxDynamicPort != 0 && res.MinDynamicPort > res.MaxDynamicPort {
			v.Add("Node.NodeResources.MinDynamicPort", "%d is above MaxDynamicPort %d", res.MinDynamicPort, res.MaxDynamicPort)
		}
		for i, nw := range res.Networks {
			if nw == nil {
				v.Add(fmt.Sprintf("Node.NodeResources.Networks[%d]", i), "must not be null")
			}
		}
	}
	if rr := n.ReservedResources; rr != nil {
		for _, f := range []struct {
			name string
			val  int
		}{{"CPU", rr.CPU}, {"MemoryMB", rr.MemoryMB}, {"DiskMB", rr.DiskMB}} {
			if f.val < 0 {
				v.Add("Node.ReservedResources."+f.name, "must not be negative, got %d", f.val)
			}
		}
		if err := checkPortList(rr.ReservedPorts); err != nil {
			v.Add("Node.ReservedResources.ReservedPorts", "%v", err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(n.Drivers)) {
		if n.Drivers[name] == nil {
			v.Add("Node.Drivers["+name+"]", "must not be null")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(n.HostNetworks)) {
		hn := n.HostNetworks[name]
		if hn == nil {
			v.Add("Node.HostNetworks["+name+"]", "must not be null")
			continue
		}
		if hn.CIDR != "" {
			if _, _, err := net.ParseCIDR(hn.CIDR); err != nil {
				v.Add("Node.HostNetworks["+name+"].CIDR", "%q is not a CIDR", hn.CIDR)
			}
		}
		if err := checkPortList(hn.ReservedPorts); err != nil {
			v.Add("Node.HostNetworks["+name+"].ReservedPorts", "%v", err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(n.HostVolumes)) {
		if hv := n.HostVolumes[name]; hv == nil {
			v.Add("Node.HostVolumes["+name+"]", "must not be null")
		} else if !strings.HasPrefix(hv.Path, "/") {
			v.Add("Node.HostVolumes["+name+"].Path", "%q is not an absolute path", hv.Path)
		}
	}
	return v.Err()
}

func checkPortRange(v *state.ValidationError, field string, port int) {
	if port < 0 || port > 65535 {
		v.Add(field, "%d is not a port (0 to 65535)", port)
	}
}

// checkPortList checks a reserved-port list such as "22,80,8000-8100".
func checkPortList(s string) error {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err1 != nil || err2 != nil || a < 1 || b > 65535 || a > b {
			return fmt.Errorf("%q is not a port or port range (1 to 65535) in %q", part, s)
		}
	}
	return nil
}

// nodeHeartbeat serves PUT /v1/node/:node_id/heartbeat. A node that was
// marked down (or disconnected) and heartbeats again becomes ready, with
// the evaluations that brings; then the leader resets its TTL timer.
func (h nodeAPI) nodeHeartbeat(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("node_id")
	leader, err := h.leader()
	if err != nil {
		return nil, err
	}
	n, err := h.knownNode(r.Context(), id)
	if err != nil {
		return nil, err
	}
	out := &state.NodeUpdateResponse{EvalIDs: []string{}, NodeModifyIndex: n.ModifyIndex, Index: h.store.LatestIndex()}
	if n.Status == state.NodeStatusDown || n.Status == state.NodeStatusDisconnected {
		resp, err := h.setNodeStatus(w, r, n, state.NodeStatusReady, "")
		if err != nil {
			return nil, err
		}
		out = resp
	} else {
		h.core.SetMeta(w, out.Index)
	}
	if out.HeartbeatTTL, err = leader.Heartbeat(id); err != nil {
		return nil, leaderError(err)
	}
	return out, nil
}

// nodeUpdateStatus serves PUT /v1/node/:node_id/status. Becoming ready
// creates evaluations for the system jobs and the jobs with allocations on
// the node; going down or disconnected creates them for the jobs with
// allocations on it, so the scheduler replaces what it ran. Any status but
// down also counts as a heartbeat; an unchanged status writes nothing.
func (h nodeAPI) nodeUpdateStatus(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("node_id")
	var req NodeStatusRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	switch req.Status {
	case state.NodeStatusInit, state.NodeStatusReady, state.NodeStatusDown, state.NodeStatusDisconnected:
	case "":
		return nil, codec.BadRequest("Status: required, one of %s", nodeStatuses)
	default:
		return nil, codec.BadRequest("Status: %q is not one of %s", req.Status, nodeStatuses)
	}
	leader, err := h.leader()
	if err != nil {
		return nil, err
	}
	n, err := h.knownNode(r.Context(), id)
	if err != nil {
		return nil, err
	}
	var out *state.NodeUpdateResponse
	if req.Status == n.Status && req.StatusDescription == n.StatusDescription {
		// Nothing changes: clients report their status as a heartbeat,
		// and that must not cost a log entry.
		out = &state.NodeUpdateResponse{EvalIDs: []string{}, NodeModifyIndex: n.ModifyIndex, Index: h.store.LatestIndex()}
		h.core.SetMeta(w, out.Index)
	} else if out, err = h.setNodeStatus(w, r, n, req.Status, req.StatusDescription); err != nil {
		return nil, err
	}
	if req.Status != state.NodeStatusDown {
		if out.HeartbeatTTL, err = leader.Heartbeat(id); err != nil {
			return nil, leaderError(err)
		}
	}
	return out, nil
}

// knownNode returns node id for a client's heartbeat or status update. A
// node this server's store lacks is looked up again after the read
// barrier before the 404, which makes the node's client register again:
// a leader elected a moment ago serves before its store has applied the
// last entries of the previous leader (a registration just before the
// election among them), and a 404 then would make every node registered
// in that window register again.
func (h nodeAPI) knownNode(ctx context.Context, id string) (*state.Node, error) {
	n, err := h.node(id)
	if !errors.Is(err, state.ErrNotFound) {
		return n, err
	}
	if err := h.core.ReadBarrier(ctx); err != nil {
		return nil, err
	}
	return h.node(id)
}

var nodeStatuses = strings.Join([]string{state.NodeStatusInit, state.NodeStatusReady, state.NodeStatusDown, state.NodeStatusDisconnected}, ", ")

// setNodeStatus writes node n's new status with the evaluations the
// transition calls for.
func (h nodeAPI) setNodeStatus(w http.ResponseWriter, r *http.Request, n *state.Node, status, desc string) (*state.NodeUpdateResponse, error) {
	now := h.core.Now()
	var evals []*state.Evaluation
	var err error
	switch {
	case status == n.Status:
	case status == state.NodeStatusReady:
		evals, err = h.nodeEvals(n, true, now.UnixNano())
	case status == state.NodeStatusDown || status == state.NodeStatusDisconnected:
		evals, err = h.nodeEvals(n, false, now.UnixNano())
	}
	if err != nil {
		return nil, err
	}
	cmd := &store.NodeUpdateStatusRequest{NodeID: n.ID, Status: status, StatusDescription: desc, UpdatedAt: now.Unix(), Evals: evals}
	resp, index, err := h.core.Propose(w, r, store.NodeUpdateStatusRequestType, cmd)
	if err != nil {
		return nil, err
	}
	return nodeUpdateResponse(index, 0, resp), nil
}

// nodeUpdateEligibility serves PUT /v1/node/:node_id/eligibility. A
// draining node cannot be made eligible (400): cancel the drain instead.
// Becoming eligible creates the evaluations a ready node gets.
func (h nodeAPI) nodeUpdateEligibility(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("node_id")
	var req NodeEligibilityRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	switch req.Eligibility {
	case state.NodeSchedulingEligible, state.NodeSchedulingIneligible:
	case "":
		return nil, codec.BadRequest("Eligibility: required, %q or %q", state.NodeSchedulingEligible, state.NodeSchedulingIneligible)
	default:
		return nil, codec.BadRequest("Eligibility: %q is not %q or %q", req.Eligibility, state.NodeSchedulingEligible, state.NodeSchedulingIneligible)
	}
	n, err := h.node(id)
	if err != nil {
		return nil, err
	}
	if req.Eligibility == state.NodeSchedulingEligible && n.DrainStrategy != nil {
		return nil, codec.BadRequest("Eligibility: node %q is draining: cancel the drain (with MarkEligible) to make it eligible", id)
	}
	now := h.core.Now()
	var evals []*state.Evaluation
	if req.Eligibility == state.NodeSchedulingEligible && n.SchedulingEligibility != state.NodeSchedulingEligible && n.Status == state.NodeStatusReady {
		if evals, err = h.nodeEvals(n, true, now.UnixNano()); err != nil {
			return nil, err
		}
	}
	cmd := &store.NodeUpdateEligibilityRequest{NodeID: id, Eligibility: req.Eligibility, Evals: evals, UpdatedAt: now.Unix()}
	resp, index, err := h.core.Propose(w, r, store.NodeUpdateEligibilityRequestType, cmd)
	if err != nil {
		return nil, err
	}
	return nodeUpdateResponse(index, 0, resp), nil
}

// nodeUpdateDrain serves PUT /v1/node/:node_id/drain: it records the drain
// strategy (the leader's drainer migrates the allocations) or cancels it.
// The leader stamps when the drain started and, from Deadline, when it is
// forced.
func (h nodeAPI) nodeUpdateDrain(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("node_id")
	var req NodeDrainRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.DrainSpec != nil {
		if req.DrainSpec.Deadline < -1 {
			return nil, codec.BadRequest("DrainSpec.Deadline: %d is negative: use -1 to force the drain now, 0 for no deadline", req.DrainSpec.Deadline)
		}
		if req.MarkEligible {
			return nil, codec.BadRequest("MarkEligible: only applies when cancelling a drain (DrainSpec null)")
		}
	}
	n, err := h.node(id)
	if err != nil {
		return nil, err
	}
	now := h.core.Now()
	cmd := &store.NodeUpdateDrainRequest{NodeID: id, MarkEligible: req.MarkEligible, UpdatedAt: now.Unix()}
	if spec := req.DrainSpec; spec != nil {
		ds := &state.DrainStrategy{Deadline: int64(spec.Deadline), IgnoreSystemJobs: spec.IgnoreSystemJobs, StartedAt: now.UnixNano()}
		switch {
		case spec.Deadline < 0:
			ds.ForceDeadline = now.UnixNano()
		case spec.Deadline > 0:
			ds.ForceDeadline = now.Add(spec.Deadline).UnixNano()
		}
		cmd.DrainStrategy = ds
	} else if req.MarkEligible && n.SchedulingEligibility != state.NodeSchedulingEligible && n.Status == state.NodeStatusReady {
		if cmd.Evals, err = h.nodeEvals(n, true, now.UnixNano()); err != nil {
			return nil, err
		}
	}
	resp, index, err := h.core.Propose(w, r, store.NodeUpdateDrainRequestType, cmd)
	if err != nil {
		return nil, err
	}
	return nodeUpdateResponse(index, 0, resp), nil
}

// nodeUpdateResponse answers a node write applied at index: applied is
// what the store's apply answered (a *store.NodeEvalsResponse), so the
// answer lists the evaluations the write created, not those the handler
// proposed: a node coming back ready proposes one per job, and the apply
// drops those a held evaluation already covers (store.joinHeldOnReturn).
func nodeUpdateResponse(index uint64, ttl time.Duration, applied any) *state.NodeUpdateResponse {
	out := &state.NodeUpdateResponse{HeartbeatTTL: ttl, EvalIDs: []string{}, NodeModifyIndex: index, Index: index}
	if r, ok := applied.(*store.NodeEvalsResponse); ok && len(r.EvalIDs) > 0 {
		out.EvalIDs = r.EvalIDs
		out.EvalCreateIndex = index
	}
	return out
}

// nodeEvals builds the evaluations a change of node n calls for: one per
// job with live allocations on n and, with withSystem, one per system or
// sysbatch job whose node pool n is in (the scheduler checks the rest of
// feasibility). They are ordered by namespace and job ID, and stamped by
// this leader.
func (h nodeAPI) nodeEvals(n *state.Node, withSystem bool, now int64) ([]*state.Evaluation, error) {
	type key struct{ ns, id string }
	jobs := map[key]*state.Job{}
	if withSystem {
		all, err := h.store.Jobs(nil, "*", "")
		if err != nil {
			return nil, err
		}
		for _, j := range all {
			if (j.Type != state.JobTypeSystem && j.Type != state.JobTypeSysBatch) || j.Stop || j.IsPeriodic() || j.IsParameterized() {
				continue
			}
			if j.NodePool != state.NodePoolAll && cmp.Or(j.NodePool, state.NodePoolDefault) != n.NodePool {
				continue
			}
			jobs[key{j.Namespace, j.ID}] = j
		}
	}
	allocs, err := h.store.AllocsByNode(nil, n.ID)
	if err != nil {
		return nil, err
	}
	for _, a := range allocs {
		if a.Terminal() {
			continue
		}
		k := key{a.Namespace, a.JobID}
		if _, ok := jobs[k]; ok {
			continue
		}
		j, err := h.store.JobByID(nil, a.Namespace, a.JobID)
		if err != nil {
			return nil, err
		}
		if j != nil {
			jobs[k] = j
		}
	}
	keys := slices.SortedFunc(maps.Keys(jobs), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.ns, b.ns), cmp.Compare(a.id, b.id))
	})
	evals := make([]*state.Evaluation, 0, len(keys))
	for _, k := range keys {
		j := jobs[k]
		e := h.newEval(j, 0, state.EvalTriggerNodeUpdate, now)
		e.NodeID = n.ID
		e.JobModifyIndex = j.JobModifyIndex
		evals = append(evals, e)
	}
	return evals, nil
}

// nodeStub makes n's list entry. Address is the node's advertised IP (its
// unique.network.ip-address attribute), else the host of its HTTP address.
func nodeStub(n *state.Node, withResources, withAttributes bool) *state.NodeListStub {
	addr := n.Attributes["unique.network.ip-address"]
	if addr == "" && n.HTTPAddr != "" {
		if host, _, err := net.SplitHostPort(n.HTTPAddr); err == nil {
			addr = host
		}
	}
	stub := &state.NodeListStub{
		ID: n.ID, Name: n.Name, Address: addr, HTTPAddr: n.HTTPAddr, Datacenter: n.Datacenter,
		NodePool: n.NodePool, NodeClass: n.NodeClass, Version: n.Attributes["sched.version"],
		Drain: n.Drain, SchedulingEligibility: n.SchedulingEligibility, Status: n.Status,
		StatusDescription: n.StatusDescription, StatusUpdatedAt: n.StatusUpdatedAt,
		Drivers: n.Drivers, CreateIndex: n.CreateIndex, ModifyIndex: n.ModifyIndex,
	}
	if withResources {
		stub.NodeResources, stub.ReservedResources = n.NodeResources, n.ReservedResources
	}
	if withAttributes {
		stub.Attributes = n.Attributes
	}
	return stub
}

// nodeList serves GET /v1/nodes: prefix, filter (over NodeListStub),
// per_page and next_token (a node ID), resources=true and os=true.
func (h nodeAPI) nodeList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	opts, err := parseListOptions(h.core.Query(r))
	if err != nil {
		return nil, err
	}
	withResources, err := codec.BoolParam(h.core.Query(r), "resources")
	if err != nil {
		return nil, err
	}
	withAttrs, err := codec.BoolParam(h.core.Query(r), "os")
	if err != nil {
		return nil, err
	}
	var pg *page[*state.NodeListStub]
	err = h.core.Read(w, r, func(ws memdb.WatchSet, _ string) (uint64, error) {
		pg = newPage[*state.NodeListStub](opts)
		nodes, err := h.store.Nodes(ws, opts.Prefix)
		if err != nil {
			return 0, err
		}
		for _, n := range nodes {
			if !pg.add(n.ID, nodeStub(n, withResources, withAttrs)) {
				break
			}
		}
		return h.maxIndex(store.TableNodes), nil
	})
	if err != nil {
		return nil, err
	}
	return pg.finish(w), nil
}

// lookupNode finds the node named by id: an exact ID, or a prefix matching
// exactly one node.
func (h nodeAPI) lookupNode(ws memdb.WatchSet, id string) (*state.Node, error) {
	n, err := h.store.NodeByID(ws, id)
	if err != nil || n != nil {
		return n, err
	}
	if id == "" {
		return nil, state.NotFoundf("node %q", id)
	}
	nodes, err := h.store.Nodes(ws, id)
	if err != nil {
		return nil, err
	}
	switch len(nodes) {
	case 0:
		return nil, state.NotFoundf("node %q", id)
	case 1:
		return nodes[0], nil
	}
	ids := make([]string, 0, 5)
	for _, m := range nodes[:min(len(nodes), 5)] {
		ids = append(ids, m.ID)
	}
	more := ""
	if len(nodes) > len(ids) {
		more = ", ..."
	}
	return nil, codec.BadRequest("node_id: prefix %q matches %d nodes (%s%s): give more of the ID", id, len(nodes), strings.Join(ids, ", "), more)
}

// nodeRead serves GET /v1/node/:node_id.
func (h nodeAPI) nodeRead(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	var out *state.Node
	err := h.core.Read(w, r, func(ws memdb.WatchSet, _ string) (uint64, error) {
		var err error
		out, err = h.lookupNode(ws, p.ByName("node_id"))
		return h.maxIndex(store.TableNodes), err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
