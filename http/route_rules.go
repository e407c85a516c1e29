package http

import (
	"net/http"
	"strings"

	"github.com/schedhq/sched/state"
)

// ruleKind is what an endpoint demands of the caller's token.
type ruleKind int

const (
	// ruleManagement: a management token. Also the rule of any /v1 route
	// missing from the table, so a forgotten route fails closed.
	ruleManagement ruleKind = iota
	// ruleOpen: nothing; anonymous callers are served.
	ruleOpen
	// ruleAnyToken: any valid token, whatever its policies.
	ruleAnyToken
	// ruleNamespace: namespace capabilities (caps, "or" unless all).
	ruleNamespace
	// ruleNamespaceAny: any capability at all in the namespace named by
	// the path's first parameter, or (filtered) in some namespace.
	ruleNamespaceAny
	// ruleNode, ruleAgent, ruleOperator: the level rule, read or write.
	ruleNode
	ruleAgent
	ruleOperator
	// ruleTokenRead: management, or the token reading itself (the path
	// parameter is its accessor).
	ruleTokenRead
	// rulePolicyRead: management, or a token that holds the policy named
	// by the path parameter.
	rulePolicyRead
	// ruleFiltering: a caller who may read something the handler shows
	// (node:read, or read-job in some namespace); the handler checks the
	// request further and filters what it shows by the caller's ACL (the
	// event stream).
	ruleFiltering
	// ruleQuotaRead: the quota rule at read or write (Nomad Enterprise's
	// quota:read); quota writes are management-only.
	ruleQuotaRead
)

// nodeSecretSource says where a node-identity endpoint finds the node
// whose own SecretID may stand in for a token.
type nodeSecretSource int

const (
	noNodeSecret nodeSecretSource = iota
	// nodeSecretFromPath: the node named by the path's first parameter.
	nodeSecretFromPath
	// nodeSecretFromBody: Node.ID and Node.SecretID of a register body;
	// only a node that already exists may re-register with the secret it
	// registered with. A new node needs a node:write token.
	nodeSecretFromBody
)

// aclRule is one row of the enforcement table.
type aclRule struct {
	kind ruleKind
	// caps are namespace capabilities: any one suffices ("or"), or every
	// one is needed when all is set ("and").
	caps []string
	all  bool
	// write selects the write level of a node, agent or operator rule.
	write bool
	// override: gate-override is also needed when the body sets
	// PolicyOverride.
	override bool
	// bodyNamespace: the body's Job.Namespace, when set, is the namespace
	// checked (it is where the job is written); a query naming another is
	// a 400 (requestScope).
	bodyNamespace bool
	// filters: with namespace=* the handler drops what the token may not
	// see (namespaceFilter), so holding the capability in some namespace
	// is enough to be let in. Without it, `*` needs the capability in
	// every namespace.
	filters bool
	// nodeSecret: a node's own secret also passes (node-identity
	// endpoints used by client agents).
	nodeSecret nodeSecretSource
	// execDriver: alloc-node-exec is also needed when the task named by
	// ?task= runs under a driver without file-system isolation.
	execDriver bool
	// wsHandshake: with ?ws_handshake=true and no token header, the token
	// arrives in the first WebSocket frame; the handler completes the
	// check with completeHandshakeAuth.
	wsHandshake bool
	// always: enforced even when /v1 enforcement is off (the ACL
	// endpoints: tokens guard /api/v2 whatever /v1 does).
	always bool
}

func nsAny(caps ...string) aclRule { return aclRule{kind: ruleNamespace, caps: caps} }
func nsAll(caps ...string) aclRule { return aclRule{kind: ruleNamespace, caps: caps, all: true} }

var (
	aclOpen          = aclRule{kind: ruleOpen}
	aclManagement    = aclRule{kind: ruleManagement}
	aclAnyToken      = aclRule{kind: ruleAnyToken}
	aclNodeRead      = aclRule{kind: ruleNode}
	aclNodeWrite     = aclRule{kind: ruleNode, write: true}
	aclAgentRead     = aclRule{kind: ruleAgent}
	aclAgentWrite    = aclRule{kind: ruleAgent, write: true}
	aclOperatorRead  = aclRule{kind: ruleOperator}
	aclOperatorWrite = aclRule{kind: ruleOperator, write: true}
	aclReadJob       = nsAny(state.NamespaceCapabilityReadJob)
	aclSubmitJob     = nsAny(state.NamespaceCapabilitySubmitJob)
)

func (r aclRule) withOverride() aclRule { r.override = true; return r }
func (r aclRule) fromBody() aclRule     { r.bodyNamespace = true; return r }
func (r aclRule) filtered() aclRule     { r.filters = true; return r }
func (r aclRule) orNodeSecret(src nodeSecretSource) aclRule {
	r.nodeSecret = src
	return r
}
func (r aclRule) alwaysEnforced() aclRule { r.always = true; return r }

// aclRuleTable is the one table of what every /v1 endpoint needs, keyed by
// method and pattern (parameter names do not matter: see ruleKey). The
// namespace rows follow spec/jobs-api.md §4; the others follow what Nomad
// asks of the same endpoints. Where the spec is silent:
//
//   - the job submission endpoint needs read-job (it shows the job's source);
//   - validate needs read-job (it writes nothing), as in Nomad;
//   - node pools are read with node:read and written with a management
//     token (there are no node_pool rules);
//   - node register, heartbeat, status, allocation reads and updates also
//     accept the node's own SecretID, which is how client agents call them;
//     a register accepts it only for a node that already exists, so a new
//     node is introduced by a node:write token (docs/security.md);
//   - snapshot save and restore and forced GC need a management token;
//   - status, agent health and the internal read-index endpoint are open:
//     followers call the latter on the leader without a token.
func aclRuleTable() map[route]aclRule {
	t := map[route]aclRule{}
	get := func(path string, r aclRule) { t[ruleKey(http.MethodGet, path)] = r }
	del := func(path string, r aclRule) { t[ruleKey(http.MethodDelete, path)] = r }
	write := func(path string, r aclRule) {
		t[ruleKey(http.MethodPost, path)] = r
		t[ruleKey(http.MethodPut, path)] = r
	}

	// Jobs (spec §4).
	get("/v1/jobs", nsAny(state.NamespaceCapabilityListJobs).filtered())
	write("/v1/jobs", aclSubmitJob.withOverride().fromBody())
	write("/v1/jobs/parse", nsAll(state.NamespaceCapabilityParseJob, state.NamespaceCapabilitySubmitJob))
	write("/v1/validate/job", aclReadJob.fromBody())
	get("/v1/job/:job_id", aclReadJob)
	write("/v1/job/:job_id", aclSubmitJob.withOverride().fromBody())
	del("/v1/job/:job_id", aclSubmitJob)
	for _, sub := range []string{"submission", "versions", "allocations", "evaluations", "deployments", "deployment", "summary", "services", "actions"} {
		get("/v1/job/:job_id/"+sub, aclReadJob)
	}
	write("/v1/job/:job_id/dispatch", nsAny(state.NamespaceCapabilityDispatchJob))
	write("/v1/job/:job_id/revert", aclSubmitJob)
	write("/v1/job/:job_id/stable", aclSubmitJob)
	write("/v1/job/:job_id/evaluate", aclSubmitJob)
	write("/v1/job/:job_id/plan", aclSubmitJob.withOverride().fromBody())
	write("/v1/job/:job_id/periodic/force", nsAny(state.NamespaceCapabilityDispatchJob, state.NamespaceCapabilitySubmitJob))
	get("/v1/job/:job_id/scale", nsAny(state.NamespaceCapabilityReadJobScaling, state.NamespaceCapabilityReadJob))
	write("/v1/job/:job_id/scale", nsAny(state.NamespaceCapabilityScaleJob, state.NamespaceCapabilitySubmitJob).withOverride())
	action := nsAny(state.NamespaceCapabilityAllocExec)
	action.execDriver, action.wsHandshake = true, true
	get("/v1/job/:job_id/action", action)

	// Quotas (quotas issue): read with quota:read, written by management
	// tokens, as in Nomad Enterprise.
	quotaRead := aclRule{kind: ruleQuotaRead}
	get("/v1/quotas", quotaRead)
	get("/v1/quota/:name", quotaRead)
	get("/v1/quota/usage/:name", quotaRead)
	get("/v1/quota-usages", quotaRead)
	write("/v1/quota", aclManagement)
	write("/v1/quota/:name", aclManagement)
	del("/v1/quota/:name", aclManagement)

	// Namespaces.
	get("/v1/namespaces", aclRule{kind: ruleNamespaceAny, filters: true})
	get("/v1/namespace/:name", aclRule{kind: ruleNamespaceAny})
	write("/v1/namespace", aclManagement)
	write("/v1/namespace/:name", aclManagement)
	del("/v1/namespace/:name", aclManagement)

	// Evaluations, allocations, deployments (scheduler issue). Reads of
	// one object answer 404 for an object outside the request's
	// namespace, so the query namespace is the one to check. The lists do
	// not filter namespace=* (yet), so `*` needs read-job everywhere.
	get("/v1/evaluations", aclReadJob.filtered())
	get("/v1/evaluation/:eval_id", aclReadJob)
	get("/v1/evaluation/:eval_id/allocations", aclReadJob)
	get("/v1/allocations", aclReadJob.filtered())
	get("/v1/allocation/:alloc_id", aclReadJob)
	get("/v1/deployments", aclReadJob.filtered())
	get("/v1/deployment/:deployment_id", aclReadJob)
	get("/v1/deployment/allocations/:deployment_id", aclReadJob)
	for _, verb := range []string{"promote", "fail", "pause", "allocation-health"} {
		write("/v1/deployment/"+verb+"/:deployment_id", aclSubmitJob)
	}
	write("/v1/system/gc", aclManagement)

	// Nodes and node pools.
	get("/v1/nodes", aclNodeRead)
	write("/v1/node/register", aclNodeWrite.orNodeSecret(nodeSecretFromBody))
	get("/v1/node/:node_id", aclNodeRead.orNodeSecret(nodeSecretFromPath))
	write("/v1/node/:node_id/heartbeat", aclNodeWrite.orNodeSecret(nodeSecretFromPath))
	write("/v1/node/:node_id/status", aclNodeWrite.orNodeSecret(nodeSecretFromPath))
	write("/v1/node/:node_id/eligibility", aclNodeWrite)
	write("/v1/node/:node_id/drain", aclNodeWrite)
	get("/v1/node/:node_id/allocations", aclNodeRead.orNodeSecret(nodeSecretFromPath))
	get("/v1/node/:node_id/allocations/changes", aclNodeRead.orNodeSecret(nodeSecretFromPath))
	write("/v1/node/:node_id/allocations", aclNodeWrite.orNodeSecret(nodeSecretFromPath))
	get("/v1/node/pools", aclNodeRead)
	write("/v1/node/pools", aclManagement)
	get("/v1/node/pool/:name", aclNodeRead)
	get("/v1/node/pool/:name/nodes", aclNodeRead)
	write("/v1/node/pool/:name", aclManagement)
	del("/v1/node/pool/:name", aclManagement)

	// Service catalog and client endpoints (client issue,
	// services.go, node_local.go; the job services row is in the job loop above).
	// Client agents write their node's service entries with the node's
	// own secret; an operator removes a stale entry with submit-job. Logs
	// need read-logs and stats read-job in the query namespace, where the
	// handlers look the allocation up (404 in another namespace).
	get("/v1/services", aclReadJob.filtered())
	get("/v1/service/:service_name", aclReadJob)
	del("/v1/service/:service_name/:service_id", aclSubmitJob)
	write("/v1/node/:node_id/services", aclNodeWrite.orNodeSecret(nodeSecretFromPath))
	del("/v1/node/:node_id/services", aclNodeWrite.orNodeSecret(nodeSecretFromPath))
	get("/v1/client/fs/logs/:alloc_id", nsAny(state.NamespaceCapabilityReadLogs))
	get("/v1/client/allocation/:alloc_id/stats", aclReadJob)

	// Exec, lifecycle and file system (issue 15, alloc_exec.go). Exec
	// needs alloc-node-exec too for a task whose driver does not isolate
	// it, as the action socket does.
	exec := nsAny(state.NamespaceCapabilityAllocExec)
	exec.execDriver, exec.wsHandshake = true, true
	get("/v1/client/allocation/:alloc_id/exec", exec)
	write("/v1/allocation/:alloc_id/stop", nsAny(state.NamespaceCapabilityAllocLifecycle))
	write("/v1/client/allocation/:alloc_id/restart", nsAny(state.NamespaceCapabilityAllocLifecycle))
	write("/v1/client/allocation/:alloc_id/signal", nsAny(state.NamespaceCapabilityAllocLifecycle))
	for _, op := range []string{"ls", "stat", "cat", "readat"} {
		get("/v1/client/fs/"+op+"/:alloc_id", nsAny(state.NamespaceCapabilityReadFS))
	}

	// Cluster status, agent and operator (cluster issue).
	get("/v1/status/leader", aclOpen)
	get("/v1/status/peers", aclOpen)
	get("/v1/agent/health", aclOpen)
	get("/v1/agent/self", aclAgentRead)
	get("/v1/agent/members", aclNodeRead)
	write("/v1/agent/join", aclAgentWrite)
	// The keyring's list shows the keys themselves: agent:write for all.
	get("/v1/agent/keyring/list", aclAgentWrite)
	write("/v1/agent/keyring/:op", aclAgentWrite)
	get("/v1/agent/pprof/:profile", aclAgentWrite)
	get("/v1/operator/raft/configuration", aclOperatorRead)
	del("/v1/operator/raft/peer", aclOperatorWrite)
	get("/v1/operator/snapshot", aclManagement)
	write("/v1/operator/snapshot", aclManagement)
	get("/v1/operator/scheduler/configuration", aclOperatorRead)
	write("/v1/operator/scheduler/configuration", aclOperatorWrite)
	get("/v1/internal/read-index", aclOpen)

	// Operations (issue 17): the event stream filters each event by the
	// caller's ACL (read-job in its namespace, node:read for Node events);
	// metrics are open, as Nomad's are, so a Prometheus server scrapes
	// them without a token; the agent's log stream needs agent:read.
	get("/v1/event/stream", aclRule{kind: ruleFiltering})
	get("/v1/metrics", aclOpen)
	get("/v1/agent/monitor", aclAgentRead)
	write("/v1/search", aclRule{kind: ruleFiltering})

	// ACL (this issue). Always enforced.
	write("/v1/acl/bootstrap", aclOpen.alwaysEnforced())
	get("/v1/acl/tokens", aclManagement.alwaysEnforced())
	write("/v1/acl/token", aclManagement.alwaysEnforced())
	get("/v1/acl/token/self", aclAnyToken.alwaysEnforced())
	get("/v1/acl/token/:accessor_id", aclRule{kind: ruleTokenRead}.alwaysEnforced())
	write("/v1/acl/token/:accessor_id", aclManagement.alwaysEnforced())
	del("/v1/acl/token/:accessor_id", aclManagement.alwaysEnforced())
	get("/v1/acl/policies", aclAnyToken.alwaysEnforced())
	get("/v1/acl/policy/:name", aclRule{kind: rulePolicyRead}.alwaysEnforced())
	write("/v1/acl/policy/:name", aclManagement.alwaysEnforced())
	del("/v1/acl/policy/:name", aclManagement.alwaysEnforced())
	return t
}

// ruleKey is the table key of a route: its method and its pattern with
// every parameter name dropped, so "/v1/node/:node_id" and "/v1/node/:id"
// are one route (a router cannot hold both anyway).
func ruleKey(method, path string) route {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, ":") {
			segs[i] = ":"
		}
	}
	return route{Method: method, Path: strings.Join(segs, "/")}
}

// ruleFor returns the rule of a registered route, and whether the table
// has one. Routes outside /v1 are not this table's business (the
// management API authenticates its own requests).
func ruleFor(table map[route]aclRule, rt route) (aclRule, bool) {
	r, ok := table[ruleKey(rt.Method, rt.Path)]
	if !ok && strings.HasPrefix(rt.Path, "/v1/acl/") {
		// A future ACL endpoint the table forgot still checks tokens.
		return aclManagement.alwaysEnforced(), false
	}
	if !ok {
		return aclManagement, false
	}
	return r, true
}
