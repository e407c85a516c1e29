//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/api/contexts"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
)

// nomadClient is Nomad's own Go client pointed at the agent through
// nomadProxy, with token as its secret ("" for none).
func nomadClient(t *testing.T, a *agent, token string) *nomad.Client {
	t.Helper()
	cfg := nomad.DefaultConfig()
	cfg.Address = nomadProxy(t, a.addr())
	cfg.SecretID = token
	c, err := nomad.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// conformanceJob is a mock service job of count allocations with a
// group network and one task of fixed resources.
func conformanceJob(id string, count int) *nomad.Job {
	job := nomad.NewServiceJob(id, id, "", 50)
	job.Datacenters = []string{"*"}
	job.Meta = map[string]string{"owner": "conformance"}
	tg := nomad.NewTaskGroup("g", count)
	tg.Networks = []*nomad.NetworkResource{{DynamicPorts: []nomad.Port{{Label: "http"}}}}
	tg.Update = &nomad.UpdateStrategy{
		MaxParallel: ptr(1), HealthCheck: ptr("task_states"),
		MinHealthyTime: ptr(50 * time.Millisecond), HealthyDeadline: ptr(10 * time.Second),
		ProgressDeadline: ptr(30 * time.Second),
	}
	task := nomad.NewTask("t", "mock")
	task.Config = map[string]any{"run_for": "1h", "stdout_string": "hello from mock\n"}
	task.Resources = &nomad.Resources{CPU: ptr(20), MemoryMB: ptr(32)}
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	return job
}

// TestNomadConformanceJobs drives the job, allocation, evaluation,
// deployment and node endpoints through Nomad's Go client and checks the
// decoded values: list stubs, nested resources, indexes.
func TestNomadConformanceJobs(t *testing.T) {
	a := newDevAgent(t)
	a.startDev()
	c := nomadClient(t, a, "")
	jobs := c.Jobs()

	// Parse without canonicalize leaves unset fields unset.
	parsed, err := jobs.ParseHCLOpts(&nomad.JobsParseRequest{JobHCL: `job "p" {
  group "g" {
    task "t" {
      driver = "mock"
    }
  }
}`})
	if err != nil {
		t.Fatalf("ParseHCLOpts: %v", err)
	}
	if *parsed.ID != "p" || parsed.Priority != nil || parsed.Namespace != nil || parsed.Region != nil || parsed.Type != nil {
		t.Fatalf("ParseHCLOpts without Canonicalize set fields: ID %v Priority %v Namespace %v Region %v Type %v",
			*parsed.ID, parsed.Priority, parsed.Namespace, parsed.Region, parsed.Type)
	}
	if *parsed.TaskGroups[0].Name != "g" || parsed.TaskGroups[0].RestartPolicy != nil || parsed.TaskGroups[0].Tasks[0].Driver != "mock" {
		t.Fatalf("ParseHCLOpts group: %+v", parsed.TaskGroups[0])
	}
	canon, err := jobs.ParseHCLOpts(&nomad.JobsParseRequest{JobHCL: `job "p" {
  group "g" {
    task "t" {
      driver = "mock"
    }
  }
}`, Canonicalize: true})
	if err != nil || *canon.Priority != 50 || *canon.Namespace != "default" || *canon.Type != "service" || *canon.TaskGroups[0].Count != 1 {
		t.Fatalf("ParseHCLOpts with Canonicalize: %+v, %v", canon, err)
	}

	job := conformanceJob("conf", 2)
	if v, _, err := jobs.Validate(job, nil); err != nil || v.Error != "" || len(v.ValidationErrors) != 0 {
		t.Fatalf("Validate: %+v, %v", v, err)
	}
	plan, _, err := jobs.Plan(job, true, nil)
	if err != nil || plan.Diff == nil || plan.Diff.Type != "Added" || plan.Annotations == nil ||
		plan.Annotations.DesiredTGUpdates["g"].Place != 2 {
		t.Fatalf("Plan: %+v, %v", plan, err)
	}
	reg, _, err := jobs.Register(job, nil)
	if err != nil || reg.EvalID == "" || reg.JobModifyIndex == 0 {
		t.Fatalf("Register: %+v, %v", reg, err)
	}

	var stubs []*nomad.AllocationListStub
	testutil.WaitFor(t, 30*time.Second, "two running allocations through Jobs().Allocations", func() bool {
		stubs, _, err = jobs.Allocations("conf", false, nil)
		if err != nil {
			t.Fatalf("Jobs().Allocations: %v", err)
		}
		running := 0
		for _, s := range stubs {
			if s.ClientStatus == "running" {
				running++
			}
		}
		return running == 2
	})
	s0 := stubs[0]
	if s0.JobID != "conf" || s0.TaskGroup != "g" || s0.Namespace != "default" || s0.NodeID == "" ||
		s0.NodeName == "" || s0.JobType != "service" || s0.JobVersion != 0 || s0.DesiredStatus != "run" ||
		s0.EvalID != reg.EvalID || s0.CreateIndex == 0 || s0.ModifyIndex < s0.CreateIndex ||
		s0.CreateTime == 0 || s0.ModifyTime < s0.CreateTime || s0.TaskStates["t"] == nil ||
		s0.TaskStates["t"].State != "running" || !strings.HasPrefix(s0.Name, "conf.g[") {
		t.Fatalf("allocation stub: %+v", s0)
	}

	// The full allocation: nested resources and the job.
	alloc, _, err := c.Allocations().Info(s0.ID, nil)
	if err != nil {
		t.Fatalf("Allocations().Info: %v", err)
	}
	tr := alloc.AllocatedResources.Tasks["t"]
	if tr == nil || tr.Cpu.CpuShares != 20 || tr.Memory.MemoryMB != 32 {
		t.Fatalf("AllocatedResources.Tasks[t]: %+v", tr)
	}
	sh := alloc.AllocatedResources.Shared
	if len(sh.Ports) != 1 || sh.Ports[0].Label != "http" || sh.Ports[0].Value == 0 ||
		len(sh.Networks) != 1 || len(sh.Networks[0].DynamicPorts) != 1 || sh.Networks[0].DynamicPorts[0].Value != sh.Ports[0].Value {
		t.Fatalf("AllocatedResources.Shared: %+v", sh)
	}
	if alloc.Job == nil || *alloc.Job.ID != "conf" || alloc.Job.Meta["owner"] != "conformance" {
		t.Fatalf("allocation's job: %+v", alloc.Job)
	}
	if alloc.DeploymentID == "" || alloc.ClientStatus != "running" || alloc.TaskStates["t"].StartedAt.IsZero() {
		t.Fatalf("allocation: deployment %q status %q task %+v", alloc.DeploymentID, alloc.ClientStatus, alloc.TaskStates["t"])
	}

	// Client endpoints: stats and logs.
	usage, err := c.Allocations().Stats(alloc, nil)
	if err != nil || usage.ResourceUsage == nil || usage.Tasks["t"] == nil || usage.Timestamp == 0 {
		t.Fatalf("Allocations().Stats: %s, %v", dump(usage), err)
	}
	cancel := make(chan struct{})
	defer close(cancel)
	frames, errs := c.AllocFS().Logs(alloc, false, "t", "stdout", "start", 0, cancel, nil)
	var logged strings.Builder
	for frames != nil {
		select {
		case f, ok := <-frames:
			if !ok {
				frames = nil
				break
			}
			logged.Write(f.Data)
		case err := <-errs:
			if err != nil {
				t.Fatalf("AllocFS().Logs: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("AllocFS().Logs did not end")
		}
	}
	if logged.String() != "hello from mock\n" {
		t.Fatalf("logs: %q", logged.String())
	}

	// Stubs with resources=true carry the nested resources too.
	all, _, err := c.Allocations().List(&nomad.QueryOptions{Params: map[string]string{"resources": "true"}})
	if err != nil || len(all) != 2 || all[0].AllocatedResources == nil || all[0].AllocatedResources.Tasks["t"].Cpu.CpuShares != 20 {
		t.Fatalf("Allocations().List(resources): %d, %v", len(all), err)
	}
	if byPrefix, _, err := c.Allocations().PrefixList(s0.ID[:6]); err != nil || len(byPrefix) != 1 || byPrefix[0].ID != s0.ID {
		t.Fatalf("Allocations().PrefixList: %+v, %v", byPrefix, err)
	}

	// Evaluations.
	ev, _, err := c.Evaluations().Info(reg.EvalID, nil)
	if err != nil || ev.JobID != "conf" || ev.Status != "complete" || ev.TriggeredBy != "job-register" || ev.Type != "service" || ev.Priority != 50 {
		t.Fatalf("Evaluations().Info: %+v, %v", ev, err)
	}
	evs, _, err := jobs.Evaluations("conf", nil)
	if err != nil || len(evs) == 0 || !slices.ContainsFunc(evs, func(e *nomad.Evaluation) bool { return e.ID == reg.EvalID }) {
		t.Fatalf("Jobs().Evaluations: %d, %v", len(evs), err)
	}
	evList, _, err := c.Evaluations().List(nil)
	if err != nil || !slices.ContainsFunc(evList, func(e *nomad.Evaluation) bool { return e.ID == reg.EvalID && e.JobID == "conf" }) {
		t.Fatalf("Evaluations().List: %d, %v", len(evList), err)
	}
	evAllocs, _, err := c.Evaluations().Allocations(reg.EvalID, nil)
	if err != nil || len(evAllocs) != 2 || evAllocs[0].EvalID != reg.EvalID {
		t.Fatalf("Evaluations().Allocations: %d, %v", len(evAllocs), err)
	}

	// Deployments.
	var dep *nomad.Deployment
	testutil.WaitFor(t, 30*time.Second, "the deployment to succeed", func() bool {
		dep, _, err = jobs.LatestDeployment("conf", nil)
		if err != nil {
			t.Fatalf("LatestDeployment: %v", err)
		}
		return dep != nil && dep.Status == "successful"
	})
	if dep.JobID != "conf" || dep.Namespace != "default" || dep.TaskGroups["g"].DesiredTotal != 2 || dep.TaskGroups["g"].HealthyAllocs != 2 {
		t.Fatalf("deployment: %+v", dep)
	}
	if l, _, err := c.Deployments().List(nil); err != nil || len(l) != 1 || l[0].ID != dep.ID {
		t.Fatalf("Deployments().List: %+v, %v", l, err)
	}
	if l, _, err := jobs.Deployments("conf", false, nil); err != nil || len(l) != 1 || l[0].ID != dep.ID {
		t.Fatalf("Jobs().Deployments: %+v, %v", l, err)
	}
	if l, _, err := c.Deployments().Allocations(dep.ID, nil); err != nil || len(l) != 2 || l[0].DeploymentStatus == nil || l[0].DeploymentStatus.Healthy == nil || !*l[0].DeploymentStatus.Healthy {
		t.Fatalf("Deployments().Allocations: %+v, %v", l, err)
	}

	// Job reads.
	info, _, err := jobs.Info("conf", nil)
	if err != nil || *info.ID != "conf" || *info.Priority != 50 || *info.Status != "running" || *info.TaskGroups[0].Count != 2 ||
		*info.TaskGroups[0].Tasks[0].Resources.CPU != 20 || *info.Version != 0 || info.Meta["owner"] != "conformance" {
		t.Fatalf("Jobs().Info: %+v, %v", info, err)
	}
	list, _, err := jobs.List(nil)
	if err != nil || len(list) != 1 || list[0].ID != "conf" || list[0].Status != "running" || list[0].Type != "service" ||
		list[0].JobSummary == nil || list[0].JobSummary.Summary["g"].Running != 2 {
		t.Fatalf("Jobs().List: %+v, %v", list, err)
	}
	sum, _, err := jobs.Summary("conf", nil)
	if err != nil || sum.Summary["g"].Running != 2 {
		t.Fatalf("Jobs().Summary: %+v, %v", sum, err)
	}
	if sub, _, err := jobs.Submission("conf", 0, nil); err == nil {
		t.Fatalf("Jobs().Submission of a job registered as JSON: %+v", sub)
	}
	versions, _, _, err := jobs.Versions("conf", false, nil)
	if err != nil || len(versions) != 1 || *versions[0].Version != 0 {
		t.Fatalf("Jobs().Versions: %d, %v", len(versions), err)
	}
	scale, _, err := jobs.ScaleStatus("conf", nil)
	if err != nil || scale.TaskGroups["g"].Desired != 2 || scale.TaskGroups["g"].Running != 2 {
		t.Fatalf("Jobs().ScaleStatus: %+v, %v", scale, err)
	}

	// Nodes.
	nodes, _, err := c.Nodes().List(nil)
	if err != nil || len(nodes) != 1 || nodes[0].Status != "ready" || nodes[0].SchedulingEligibility != "eligible" || nodes[0].NodePool != "default" || nodes[0].Datacenter != "dc1" {
		t.Fatalf("Nodes().List: %+v, %v", nodes, err)
	}
	node, _, err := c.Nodes().Info(nodes[0].ID, nil)
	if err != nil || node.ID != nodes[0].ID || node.Name != nodes[0].Name || node.NodeResources == nil || node.NodeResources.Cpu.CpuShares == 0 ||
		node.NodeResources.Memory.MemoryMB == 0 || node.Drivers["mock"] == nil || !node.Drivers["mock"].Healthy {
		t.Fatalf("Nodes().Info: %+v, %v", node, err)
	}
	nodeAllocs, _, err := c.Nodes().Allocations(node.ID, nil)
	if err != nil || len(nodeAllocs) != 2 || nodeAllocs[0].Job == nil || nodeAllocs[0].AllocatedResources.Tasks["t"].Memory.MemoryMB != 32 {
		t.Fatalf("Nodes().Allocations: %d, %v", len(nodeAllocs), err)
	}
	if pools, _, err := c.NodePools().List(nil); err != nil || !slices.ContainsFunc(pools, func(p *nomad.NodePool) bool { return p.Name == "default" }) {
		t.Fatalf("NodePools().List: %+v, %v", pools, err)
	}
	if pn, _, err := c.NodePools().ListNodes("default", nil); err != nil || len(pn) != 1 || pn[0].ID != node.ID {
		t.Fatalf("NodePools().ListNodes: %+v, %v", pn, err)
	}
	if el, err := c.Nodes().ToggleEligibility(node.ID, false, nil); err != nil || el.NodeModifyIndex == 0 {
		t.Fatalf("ToggleEligibility: %+v, %v", el, err)
	}
	if n, _, _ := c.Nodes().Info(node.ID, nil); n.SchedulingEligibility != "ineligible" {
		t.Fatalf("eligibility after toggle: %q", n.SchedulingEligibility)
	}
	if _, err := c.Nodes().ToggleEligibility(node.ID, true, nil); err != nil {
		t.Fatal(err)
	}

	// Writes that list allocations on the way: force evaluation, scale,
	// stop and purge.
	evalID, _, err := jobs.ForceEvaluate("conf", nil)
	if err != nil || evalID == "" {
		t.Fatalf("ForceEvaluate: %q, %v", evalID, err)
	}
	if ev, _, err := c.Evaluations().Info(evalID, nil); err != nil || ev.JobID != "conf" {
		t.Fatalf("forced evaluation: %+v, %v", ev, err)
	}
	evalID, _, err = jobs.EvaluateWithOpts("conf", nomad.EvalOptions{ForceReschedule: true}, nil)
	if err != nil || evalID == "" {
		t.Fatalf("EvaluateWithOpts(ForceReschedule): %q, %v", evalID, err)
	}
	if ev, _, err := c.Evaluations().Info(evalID, nil); err != nil || ev.JobID != "conf" || ev.TriggeredBy != "job-evaluate" {
		t.Fatalf("force-reschedule evaluation: %s, %v", dump(ev), err)
	}
	if _, _, err := jobs.Scale("conf", "g", ptr(3), "three", false, nil, nil); err != nil {
		t.Fatalf("Scale: %v", err)
	}
	testutil.WaitFor(t, 30*time.Second, "three allocations", func() bool {
		l, _, err := jobs.Allocations("conf", false, nil)
		return err == nil && len(l) == 3
	})
	if id, _, err := jobs.Deregister("conf", false, nil); err != nil || id == "" {
		t.Fatalf("Deregister: %q, %v", id, err)
	}
	testutil.WaitFor(t, 30*time.Second, "the job's allocations to stop", func() bool {
		l, _, err := jobs.Allocations("conf", false, nil)
		if err != nil {
			return false
		}
		for _, s := range l {
			if s.DesiredStatus != "stop" {
				return false
			}
		}
		return true
	})
	if info, _, err := jobs.Info("conf", nil); err != nil || !*info.Stop {
		t.Fatalf("stopped job: %+v, %v", info, err)
	}
	if _, _, err := jobs.Deregister("conf", true, nil); err != nil {
		t.Fatalf("purge: %v", err)
	}
	if _, _, err := jobs.Info("conf", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("purged job: %v", err)
	}
}

// TestNomadConformanceCluster drives namespaces, status, agent, operator,
// services and system endpoints through Nomad's Go client.
func TestNomadConformanceCluster(t *testing.T) {
	a := newDevAgent(t)
	a.startDev()
	c := nomadClient(t, a, "")

	// Namespaces.
	if _, err := c.Namespaces().Register(&nomad.Namespace{Name: "team-a", Description: "team A", Meta: map[string]string{"k": "v"}}, nil); err != nil {
		t.Fatalf("Namespaces().Register: %v", err)
	}
	ns, _, err := c.Namespaces().Info("team-a", nil)
	if err != nil || ns.Name != "team-a" || ns.Description != "team A" || ns.Meta["k"] != "v" || ns.CreateIndex == 0 {
		t.Fatalf("Namespaces().Info: %+v, %v", ns, err)
	}
	nsl, _, err := c.Namespaces().List(nil)
	if err != nil || len(nsl) != 2 || nsl[0].Name != "team-a" || nsl[1].Name != "default" { // the client sorts newest first
		t.Fatalf("Namespaces().List: %s, %v", dump(nsl), err)
	}
	if _, err := c.Namespaces().Delete("team-a", nil); err != nil {
		t.Fatalf("Namespaces().Delete: %v", err)
	}
	if _, _, err := c.Namespaces().Info("team-a", nil); err == nil {
		t.Fatal("deleted namespace still read")
	}

	// Status and agent.
	leader, err := c.Status().Leader()
	if err != nil || leader == "" {
		t.Fatalf("Status().Leader: %q, %v", leader, err)
	}
	peers, err := c.Status().Peers()
	if err != nil || len(peers) != 1 || peers[0] != leader {
		t.Fatalf("Status().Peers: %v, %v", peers, err)
	}
	self, err := c.Agent().Self()
	if err != nil || self.Member.Name == "" {
		t.Fatalf("Agent().Self: %+v, %v", self, err)
	}
	members, err := c.Agent().Members()
	if err != nil || len(members.Members) != 1 || members.Members[0].Status != "alive" {
		t.Fatalf("Agent().Members: %+v, %v", members, err)
	}
	health, err := c.Agent().Health()
	if err != nil || health.Server == nil || !health.Server.Ok {
		t.Fatalf("Agent().Health: %+v, %v", health, err)
	}

	// Operator.
	rc, err := c.Operator().RaftGetConfiguration(nil)
	if err != nil || len(rc.Servers) != 1 || !rc.Servers[0].Leader || !rc.Servers[0].Voter || rc.Servers[0].Address != leader {
		t.Fatalf("RaftGetConfiguration: %+v, %v", rc, err)
	}
	snap, err := c.Operator().Snapshot(nil)
	if err != nil {
		t.Fatalf("Operator().Snapshot: %v", err)
	}
	data, err := io.ReadAll(snap)
	snap.Close()
	if err != nil || len(data) == 0 {
		t.Fatalf("snapshot: %d bytes, %v", len(data), err)
	}
	if _, err := c.Operator().SnapshotRestore(bytes.NewReader(data), nil); err != nil {
		t.Fatalf("Operator().SnapshotRestore: %v", err)
	}

	// Services, registered by a job's task.
	job := conformanceJob("svc", 1)
	job.TaskGroups[0].Services = []*nomad.Service{{Name: "conf-web", PortLabel: "http", Provider: "nomad", Tags: []string{"a"}}}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatalf("Register: %v", err)
	}
	var regs []*nomad.ServiceRegistration
	testutil.WaitFor(t, 30*time.Second, "the service to be registered", func() bool {
		regs, _, err = c.Services().Get("conf-web", nil)
		return err == nil && len(regs) == 1
	})
	if regs[0].ServiceName != "conf-web" || regs[0].JobID != "svc" || regs[0].Port == 0 || regs[0].Address == "" || !slices.Equal(regs[0].Tags, []string{"a"}) {
		t.Fatalf("Services().Get: %+v", regs[0])
	}
	sl, _, err := c.Services().List(nil)
	if err != nil || len(sl) != 1 || sl[0].Namespace != "default" || len(sl[0].Services) != 1 || sl[0].Services[0].ServiceName != "conf-web" {
		t.Fatalf("Services().List: %+v, %v", sl, err)
	}
	if info, _, err := c.Jobs().Info("svc", nil); err != nil || info.TaskGroups[0].Services[0].Provider != "sched" {
		t.Fatalf("provider nomad stored as: %s, %v", dump(info.TaskGroups[0].Services), err)
	}
	if js, _, err := c.Jobs().Services("svc", nil); err != nil || len(js) != 1 || js[0].ID != regs[0].ID {
		t.Fatalf("Jobs().Services: %+v, %v", js, err)
	}
	if _, err := c.Services().Delete("conf-web", regs[0].ID, nil); err != nil {
		t.Fatalf("Services().Delete: %v", err)
	}

	if err := c.System().GarbageCollect(); err != nil {
		t.Fatalf("System().GarbageCollect: %v", err)
	}
}

// dump renders v as JSON for a failure message.
func dump(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// TestNomadConformanceACL drives the ACL endpoints through Nomad's Go
// client on a server with enforcement on: bootstrap, policies, tokens,
// self, and the 403 of a denied and of an anonymous request.
func TestNomadConformanceACL(t *testing.T) {
	a := newServer(t)
	f, err := os.OpenFile(a.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("acl {\n  enabled = true\n}\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	a.run("a leader", func(c *api.Client) error {
		_, err := c.Status().Leader(context.Background())
		return err
	}, "agent", "-config", a.config)

	anon := nomadClient(t, a, "")
	boot, _, err := anon.ACLTokens().Bootstrap(nil)
	if err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}
	if boot.AccessorID == "" || boot.SecretID == "" || boot.Type != "management" || boot.Name != "Bootstrap Token" || !boot.Global || boot.CreateTime.IsZero() {
		t.Fatalf("bootstrap token: %s", dump(boot))
	}
	if _, _, err := anon.ACLTokens().Bootstrap(nil); err == nil {
		t.Fatal("a second bootstrap succeeded")
	}
	mgmt := nomadClient(t, a, boot.SecretID)

	// Policies.
	rules := `namespace "default" { policy = "read" }`
	if _, err := mgmt.ACLPolicies().Upsert(&nomad.ACLPolicy{Name: "readonly", Description: "reads default", Rules: rules}, nil); err != nil {
		t.Fatalf("ACLPolicies().Upsert: %v", err)
	}
	pol, _, err := mgmt.ACLPolicies().Info("readonly", nil)
	if err != nil || pol.Name != "readonly" || pol.Description != "reads default" || pol.Rules != rules || pol.CreateIndex == 0 {
		t.Fatalf("ACLPolicies().Info: %s, %v", dump(pol), err)
	}
	pols, _, err := mgmt.ACLPolicies().List(nil)
	if err != nil || len(pols) != 1 || pols[0].Name != "readonly" || pols[0].Description != "reads default" {
		t.Fatalf("ACLPolicies().List: %s, %v", dump(pols), err)
	}

	// Tokens.
	tok, _, err := mgmt.ACLTokens().Create(&nomad.ACLToken{Name: "reader", Type: "client", Policies: []string{"readonly"}}, nil)
	if err != nil || tok.AccessorID == "" || tok.SecretID == "" || tok.Name != "reader" || tok.Type != "client" || !slices.Equal(tok.Policies, []string{"readonly"}) {
		t.Fatalf("ACLTokens().Create: %s, %v", dump(tok), err)
	}
	info, _, err := mgmt.ACLTokens().Info(tok.AccessorID, nil)
	if err != nil || info.Name != "reader" || info.SecretID != "" || info.CreateIndex == 0 {
		t.Fatalf("ACLTokens().Info (the secret is shown only on create): %s, %v", dump(info), err)
	}
	toks, _, err := mgmt.ACLTokens().List(nil)
	if err != nil || len(toks) != 2 || !slices.ContainsFunc(toks, func(s *nomad.ACLTokenListStub) bool {
		return s.AccessorID == tok.AccessorID && s.Name == "reader" && s.Type == "client"
	}) {
		t.Fatalf("ACLTokens().List: %s, %v", dump(toks), err)
	}
	reader := nomadClient(t, a, tok.SecretID)
	self, _, err := reader.ACLTokens().Self(nil)
	if err != nil || self.AccessorID != tok.AccessorID || !slices.Equal(self.Policies, []string{"readonly"}) {
		t.Fatalf("ACLTokens().Self: %s, %v", dump(self), err)
	}
	tok.Name = "reader-2"
	if up, _, err := mgmt.ACLTokens().Update(tok, nil); err != nil || up.Name != "reader-2" || up.AccessorID != tok.AccessorID {
		t.Fatalf("ACLTokens().Update: %s, %v", dump(up), err)
	}

	// Nothing of sched's ACL answers is lost in Nomad's types but sched's
	// additions: a token's management-API Subject, the rules in the
	// policy list.
	for _, tc := range []struct {
		path string
		into any
		want []string
	}{
		{"/v1/acl/token/self", &nomad.ACLToken{}, nil},
		{"/v1/acl/token/" + boot.AccessorID, &nomad.ACLToken{}, []string{".Subject"}},
		{"/v1/acl/tokens", &[]*nomad.ACLTokenListStub{}, []string{"[].Subject"}},
		{"/v1/acl/policies", &[]*nomad.ACLPolicyListStub{}, []string{"[].Rules"}},
		{"/v1/acl/policy/readonly", &nomad.ACLPolicy{}, nil},
	} {
		req, _ := http.NewRequest(http.MethodGet, a.addr()+tc.path, nil)
		req.Header.Set("X-Sched-Token", boot.SecretID)
		if tc.path == "/v1/acl/token/self" {
			req.Header.Set("X-Sched-Token", tok.SecretID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", tc.path, resp.StatusCode, body)
		}
		if got := lostFields(t, body, tc.into); !slices.Equal(got, tc.want) {
			t.Errorf("GET %s: fields Nomad's client drops: %v, want %v", tc.path, got, tc.want)
		}
	}

	// Enforcement: the reader lists jobs and may not register one; an
	// anonymous caller may do neither.
	if l, _, err := reader.Jobs().List(nil); err != nil || len(l) != 0 {
		t.Fatalf("reader Jobs().List: %v, %v", l, err)
	}
	if _, _, err := reader.Jobs().Register(conformanceJob("denied", 1), nil); err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("reader Register: %v, want 403 Permission denied", err)
	}
	if _, _, err := anon.Jobs().List(nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("anonymous Jobs().List: %v, want 403", err)
	}
	if _, _, err := reader.ACLTokens().List(nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("reader ACLTokens().List: %v, want 403", err)
	}

	if _, err := mgmt.ACLTokens().Delete(tok.AccessorID, nil); err != nil {
		t.Fatalf("ACLTokens().Delete: %v", err)
	}
	if _, _, err := reader.ACLTokens().Self(nil); err == nil || !strings.Contains(err.Error(), "ACL token not found") {
		t.Fatalf("deleted token's Self: %v", err)
	}
	if _, err := mgmt.ACLPolicies().Delete("readonly", nil); err != nil {
		t.Fatalf("ACLPolicies().Delete: %v", err)
	}
	if pols, _, err := mgmt.ACLPolicies().List(nil); err != nil || len(pols) != 0 {
		t.Fatalf("policies after delete: %s, %v", dump(pols), err)
	}
}

// TestNomadConformanceWrites drives the job, deployment and node writes
// through Nomad's Go client: versions and diffs, stable, revert, periodic
// force, dispatch, deployment pause/resume/health/fail, drain and node
// pools, checking what each wrote.
func TestNomadConformanceWrites(t *testing.T) {
	a := newDevAgent(t)
	a.startDev()
	c := nomadClient(t, a, "")
	jobs, deps := c.Jobs(), c.Deployments()

	// A deployment that waits for manual health: it stays running until
	// told otherwise.
	job := conformanceJob("w", 1)
	job.TaskGroups[0].Update.HealthCheck = ptr("manual")
	if _, _, err := jobs.Register(job, nil); err != nil {
		t.Fatalf("Register: %v", err)
	}
	var dep *nomad.Deployment
	testutil.WaitFor(t, 30*time.Second, "a running deployment with its allocation placed", func() bool {
		d, _, err := jobs.LatestDeployment("w", nil)
		dep = d
		return err == nil && d != nil && d.Status == "running" && d.TaskGroups["g"].PlacedAllocs == 1
	})
	if r, _, err := deps.Pause(dep.ID, true, nil); err != nil || r.DeploymentModifyIndex == 0 {
		t.Fatalf("Pause: %+v, %v", r, err)
	}
	if d, _, _ := deps.Info(dep.ID, nil); d.Status != "paused" {
		t.Fatalf("after Pause: %s", d.Status)
	}
	if _, _, err := deps.Pause(dep.ID, false, nil); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if d, _, _ := deps.Info(dep.ID, nil); d.Status != "running" {
		t.Fatalf("after resume: %s", d.Status)
	}
	allocs, _, err := deps.Allocations(dep.ID, nil)
	if err != nil || len(allocs) != 1 {
		t.Fatalf("Deployments().Allocations: %d, %v", len(allocs), err)
	}
	if _, _, err := deps.SetAllocHealth(dep.ID, []string{allocs[0].ID}, nil, nil); err != nil {
		t.Fatalf("SetAllocHealth: %v", err)
	}
	testutil.WaitFor(t, 30*time.Second, "the deployment to succeed on manual health", func() bool {
		d, _, err := deps.Info(dep.ID, nil)
		return err == nil && d.Status == "successful" && d.TaskGroups["g"].HealthyAllocs == 1
	})

	// Version 1 changes the task's config; its deployment is failed.
	job.TaskGroups[0].Tasks[0].Config["run_for"] = "2h"
	if _, _, err := jobs.Register(job, nil); err != nil {
		t.Fatalf("Register v1: %v", err)
	}
	testutil.WaitFor(t, 30*time.Second, "the version 1 deployment", func() bool {
		d, _, err := jobs.LatestDeployment("w", nil)
		dep = d
		return err == nil && d != nil && d.JobVersion == 1 && d.Status == "running"
	})
	if r, _, err := deps.Fail(dep.ID, nil); err != nil || r.DeploymentModifyIndex == 0 {
		t.Fatalf("Fail: %+v, %v", r, err)
	}
	if d, _, _ := deps.Info(dep.ID, nil); d.Status != "failed" {
		t.Fatalf("after Fail: %s", d.Status)
	}
	versions, diffs, _, err := jobs.Versions("w", true, nil)
	if err != nil || len(versions) != 2 || *versions[0].Version != 1 || len(diffs) != 1 || diffs[0].Type != "Edited" {
		t.Fatalf("Versions(diffs): %d versions, %s, %v", len(versions), dump(diffs), err)
	}
	if !*versions[1].Stable || *versions[0].Stable {
		t.Fatalf("stable flags: v1 %v v0 %v", *versions[0].Stable, *versions[1].Stable)
	}
	if _, _, err := jobs.Stable("w", 1, true, nil); err != nil {
		t.Fatalf("Stable: %v", err)
	}
	if v, _, _, _ := jobs.Versions("w", false, nil); !*v[0].Stable {
		t.Fatal("version 1 not stable after Stable")
	}
	prior := uint64(1)
	if r, _, err := jobs.Revert("w", 0, &prior, nil, "", ""); err != nil || r.EvalID == "" {
		t.Fatalf("Revert: %+v, %v", r, err)
	}
	if info, _, _ := jobs.Info("w", nil); *info.Version != 2 || info.TaskGroups[0].Tasks[0].Config["run_for"] != "1h" {
		t.Fatalf("after Revert: version %d config %v", *info.Version, info.TaskGroups[0].Tasks[0].Config)
	}

	// A job registered with its source keeps it; EnforceIndex with a
	// stale index is a 409 (sched's status for a failed check-and-set).
	src := "job \"src\" {\n  datacenters = [\"*\"]\n  group \"g\" {\n    task \"t\" {\n      driver = \"mock\"\n      config {\n        run_for = \"1h\"\n      }\n    }\n  }\n}\n"
	srcJob, err := jobs.ParseHCLOpts(&nomad.JobsParseRequest{JobHCL: src, Canonicalize: true})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	reg, _, err := jobs.RegisterOpts(srcJob, &nomad.RegisterOptions{Submission: &nomad.JobSubmission{Source: src, Format: "hcl2",
		VariableFlags: map[string]string{"x": "1"}}}, nil)
	if err != nil {
		t.Fatalf("RegisterOpts with a submission: %v", err)
	}
	sub, _, err := jobs.Submission("src", 0, nil)
	if err != nil || sub.Source != src || sub.Format != "hcl2" || sub.VariableFlags["x"] != "1" {
		t.Fatalf("Submission: %s, %v", dump(sub), err)
	}
	if _, _, err := jobs.EnforceRegister(srcJob, reg.JobModifyIndex-1, nil); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("EnforceRegister with a stale index: %v, want 409", err)
	}

	// A blocking query: Nomad's client reads the index from the renamed
	// header, waits on it, and wakes on a change.
	_, meta, err := jobs.Info("src", nil)
	if err != nil || meta.LastIndex == 0 || !meta.KnownLeader {
		t.Fatalf("Info meta: %+v, %v", meta, err)
	}
	woke := make(chan *nomad.QueryMeta, 1)
	go func() {
		_, m, err := jobs.Info("src", &nomad.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: 30 * time.Second})
		if err != nil {
			t.Errorf("blocking Info: %v", err)
		}
		woke <- m
	}()
	srcJob.Meta = map[string]string{"wake": "up"}
	if _, _, err := jobs.Register(srcJob, nil); err != nil {
		t.Fatalf("Register to wake the query: %v", err)
	}
	select {
	case m := <-woke:
		if m == nil || m.LastIndex <= meta.LastIndex {
			t.Fatalf("blocking query woke with %+v, want an index above %d", m, meta.LastIndex)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("the blocking query did not wake on a change")
	}

	// Periodic force and dispatch.
	periodic := nomad.NewBatchJob("cron", "cron", "", 50)
	periodic.Datacenters = []string{"*"}
	periodic.Periodic = &nomad.PeriodicConfig{Spec: ptr("0 0 1 1 *"), ProhibitOverlap: ptr(true)}
	ptg := nomad.NewTaskGroup("g", 1)
	ptask := nomad.NewTask("t", "mock")
	ptask.Config = map[string]any{"run_for": "10ms"}
	ptask.Resources = &nomad.Resources{CPU: ptr(10), MemoryMB: ptr(10)}
	ptg.AddTask(ptask)
	periodic.AddTaskGroup(ptg)
	if _, _, err := jobs.Register(periodic, nil); err != nil {
		t.Fatalf("Register periodic: %v", err)
	}
	evalID, _, err := jobs.PeriodicForce("cron", nil)
	if err != nil || evalID == "" {
		t.Fatalf("PeriodicForce: %q, %v", evalID, err)
	}
	if ev, _, err := c.Evaluations().Info(evalID, nil); err != nil || !strings.HasPrefix(ev.JobID, "cron/periodic-") {
		t.Fatalf("forced evaluation: %s, %v", dump(ev), err)
	}
	param := nomad.NewBatchJob("param", "param", "", 50)
	param.Datacenters = []string{"*"}
	param.ParameterizedJob = &nomad.ParameterizedJobConfig{Payload: "optional", MetaRequired: []string{"who"}}
	param.TaskGroups = []*nomad.TaskGroup{ptg}
	if _, _, err := jobs.Register(param, nil); err != nil {
		t.Fatalf("Register parameterized: %v", err)
	}
	disp, _, err := jobs.Dispatch("param", map[string]string{"who": "me"}, []byte("payload"), "", nil)
	if err != nil || !strings.HasPrefix(disp.DispatchedJobID, "param/dispatch-") || disp.EvalID == "" || disp.JobCreateIndex == 0 {
		t.Fatalf("Dispatch: %s, %v", dump(disp), err)
	}
	child, _, err := jobs.Info(disp.DispatchedJobID, nil)
	if err != nil || *child.ParentID != "param" || child.Meta["who"] != "me" || !child.Dispatched {
		t.Fatalf("dispatched job: %s, %v", dump(child), err)
	}
	if _, _, err := jobs.Dispatch("param", nil, nil, "", nil); err == nil || !strings.Contains(err.Error(), "who") {
		t.Fatalf("Dispatch without required meta: %v", err)
	}
	all, _, err := jobs.List(&nomad.QueryOptions{Namespace: "*"})
	if err != nil || len(all) < 4 {
		t.Fatalf("Jobs().List(namespace=*): %s, %v", dump(all), err)
	}

	// Drain and eligibility.
	nodes, _, err := c.Nodes().List(nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("Nodes().List: %v", err)
	}
	nodeID := nodes[0].ID
	dr, err := c.Nodes().UpdateDrain(nodeID, &nomad.DrainSpec{Deadline: time.Hour, IgnoreSystemJobs: true}, false, nil)
	if err != nil || dr.NodeModifyIndex == 0 {
		t.Fatalf("UpdateDrain: %+v, %v", dr, err)
	}
	node, _, err := c.Nodes().Info(nodeID, nil)
	if err != nil || node.DrainStrategy == nil || node.DrainStrategy.Deadline != time.Hour || !node.DrainStrategy.IgnoreSystemJobs ||
		node.DrainStrategy.StartedAt.IsZero() || node.DrainStrategy.ForceDeadline.Sub(node.DrainStrategy.StartedAt).Round(time.Minute) != time.Hour ||
		node.SchedulingEligibility != "ineligible" {
		t.Fatalf("draining node: %s, %v", dump(node.DrainStrategy), err)
	}
	if _, err := c.Nodes().UpdateDrain(nodeID, nil, true, nil); err != nil {
		t.Fatalf("cancel drain: %v", err)
	}
	if node, _, _ := c.Nodes().Info(nodeID, nil); node.DrainStrategy != nil || node.SchedulingEligibility != "eligible" {
		t.Fatalf("after cancel: %s %s", dump(node.DrainStrategy), node.SchedulingEligibility)
	}

	// Node pools.
	if _, err := c.NodePools().Register(&nomad.NodePool{Name: "gpu", Description: "GPUs", Meta: map[string]string{"k": "v"}}, nil); err != nil {
		t.Fatalf("NodePools().Register: %v", err)
	}
	pool, _, err := c.NodePools().Info("gpu", nil)
	if err != nil || pool.Description != "GPUs" || pool.Meta["k"] != "v" || pool.CreateIndex == 0 {
		t.Fatalf("NodePools().Info: %s, %v", dump(pool), err)
	}
	if _, err := c.NodePools().Delete("gpu", nil); err != nil {
		t.Fatalf("NodePools().Delete: %v", err)
	}
	if _, _, err := c.NodePools().Info("gpu", nil); err == nil {
		t.Fatal("deleted pool still read")
	}
}

// TestNomadConformanceJobspecShapes: every block of the jobspec test
// files travels through Nomad's client without a decode error in either
// direction: the parse answer decodes into api.Job, that api.Job
// registers (encoded by Nomad's client), and the stored job, its versions
// with diffs and a plan decode again with the same groups, tasks,
// services, checks and templates.
func TestNomadConformanceJobspecShapes(t *testing.T) {
	a := newDevAgent(t)
	a.startDev()
	c := nomadClient(t, a, "")
	jobs := c.Jobs()
	files, err := filepath.Glob("../state/jobspec/testdata/*.sched.hcl")
	if err != nil || len(files) < 4 {
		t.Fatalf("jobspec test files: %v, %v", files, err)
	}
	type counts struct{ groups, tasks, services, checks, templates, constraints int }
	count := func(j *nomad.Job) counts {
		var n counts
		n.constraints = len(j.Constraints)
		for _, g := range j.TaskGroups {
			n.groups++
			n.constraints += len(g.Constraints)
			for _, s := range g.Services {
				n.services++
				n.checks += len(s.Checks)
			}
			for _, task := range g.Tasks {
				n.tasks++
				n.templates += len(task.Templates)
				n.constraints += len(task.Constraints)
				for _, s := range task.Services {
					n.services++
					n.checks += len(s.Checks)
				}
			}
		}
		return n
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			req := &nomad.JobsParseRequest{JobHCL: string(src), Canonicalize: true}
			if strings.Contains(req.JobHCL, `variable "version"`) {
				req.Variables = `version = "1.0"`
			}
			job, err := jobs.ParseHCLOpts(req)
			if err != nil {
				t.Fatalf("ParseHCLOpts: %v", err)
			}
			want := count(job)
			if want.groups == 0 || want.tasks == 0 {
				t.Fatalf("parsed nothing: %+v", want)
			}
			// Register into what this agent has. Some files combine blocks
			// to show the parser everything (periodic and parameterized);
			// their validation errors still prove the job decoded.
			job.Namespace, job.Region, job.NodePool, job.Datacenters = ptr("default"), ptr("global"), ptr("default"), []string{"*"}
			v, _, err := jobs.Validate(job, nil)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if len(v.ValidationErrors) > 0 {
				if !strings.Contains(v.Error, "Job.") {
					t.Fatalf("validation errors without a field path: %s", dump(v))
				}
				t.Logf("not registered: %s", v.Error)
				return
			}
			if _, _, err := jobs.Register(job, nil); err != nil {
				t.Fatalf("Register: %v", err)
			}
			got, _, err := jobs.Info(*job.ID, nil)
			if err != nil {
				t.Fatalf("Info: %v", err)
			}
			if count(got) != want || *got.Priority != *job.Priority || *got.Type != *job.Type {
				t.Fatalf("stored job: %+v, want %+v (priority %d type %s)", count(got), want, *got.Priority, *got.Type)
			}
			got.Meta = map[string]string{"changed": "yes"}
			if _, _, err := jobs.Register(got, nil); err != nil {
				t.Fatalf("Register the read-back job: %v", err)
			}
			versions, diffs, _, err := jobs.Versions(*job.ID, true, nil)
			if err != nil || len(versions) != 2 || len(diffs) != 1 || diffs[0].Type != "Edited" {
				t.Fatalf("Versions: %d, %s, %v", len(versions), dump(diffs), err)
			}
			plan, _, err := jobs.Plan(got, true, nil)
			if err != nil || plan.Diff == nil {
				t.Fatalf("Plan: %+v, %v", plan, err)
			}
		})
	}
}

// lostFields decodes raw (sched's answer) into a value of into's type,
// encodes that again and returns the paths of raw's members with a
// non-zero value that did not survive: the fields Nomad's client drops.
// Member names match case-insensitively, as encoding/json decodes them.
func lostFields(t *testing.T, raw []byte, into any) []string {
	t.Helper()
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatalf("decode into %T: %v", into, err)
	}
	back, err := json.Marshal(into)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(back, &b); err != nil {
		t.Fatal(err)
	}
	var lost []string
	var walk func(path string, a, b any)
	walk = func(path string, a, b any) {
		switch av := a.(type) {
		case map[string]any:
			bv, _ := b.(map[string]any)
			for k, v := range av {
				if isZeroJSON(v) {
					continue
				}
				var match any
				found := false
				for bk, bvv := range bv {
					if strings.EqualFold(bk, k) {
						match, found = bvv, true
						break
					}
				}
				if !found {
					lost = append(lost, path+"."+k)
					continue
				}
				walk(path+"."+k, v, match)
			}
		case []any:
			bv, _ := b.([]any)
			for i, v := range av {
				if i < len(bv) {
					walk(path+"[]", v, bv[i])
				}
			}
		}
	}
	walk("", a, b)
	slices.Sort(lost)
	return slices.Compact(lost)
}

// isZeroJSON reports whether a decoded JSON value is null, false, 0, ""
// or an empty object or array.
func isZeroJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case float64:
		return x == 0
	case string:
		return x == ""
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// TestNomadConformanceNoFieldLost reads sched's answers as they are and
// checks which of their fields Nomad's client types drop: exactly the
// sched additions docs/compatibility.md lists.
func TestNomadConformanceNoFieldLost(t *testing.T) {
	a := newDevAgent(t)
	a.startDev()
	c := nomadClient(t, a, "")
	job := conformanceJob("keep", 1)
	job.TaskGroups[0].Services = []*nomad.Service{{Name: "keep-web", PortLabel: "http", Provider: "sched"}}
	reg, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	var alloc *nomad.AllocationListStub
	testutil.WaitFor(t, 30*time.Second, "a running allocation with a healthy deployment", func() bool {
		l, _, err := c.Jobs().Allocations("keep", false, nil)
		if err != nil || len(l) != 1 || l[0].ClientStatus != "running" || l[0].DeploymentStatus == nil || l[0].DeploymentStatus.Healthy == nil {
			return false
		}
		alloc = l[0]
		return true
	})
	dep, _, err := c.Jobs().LatestDeployment("keep", nil)
	if err != nil || dep == nil {
		t.Fatalf("deployment: %v", err)
	}
	nodes, _, err := c.Nodes().List(nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes: %v", err)
	}
	get := func(path string) []byte {
		t.Helper()
		resp, err := http.Get(a.addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s %v", path, resp.StatusCode, body, err)
		}
		return body
	}
	cases := []struct {
		path string
		into any
		want []string // sched's additions, which Nomad's type has no field for
	}{
		{"/v1/jobs", &[]*nomad.JobListStub{}, nil},
		{"/v1/job/keep", &nomad.Job{}, nil},
		{"/v1/job/keep/allocations", &[]*nomad.AllocationListStub{}, []string{"[].DeploymentID"}},
		{"/v1/allocations?resources=true", &[]*nomad.AllocationListStub{}, []string{"[].DeploymentID"}},
		{"/v1/allocation/" + alloc.ID, &nomad.Allocation{}, nil},
		{"/v1/node/" + nodes[0].ID + "/allocations", &[]*nomad.Allocation{}, nil},
		{"/v1/evaluations", &[]*nomad.Evaluation{}, nil},
		{"/v1/evaluation/" + reg.EvalID, &nomad.Evaluation{}, nil},
		{"/v1/deployments", &[]*nomad.Deployment{}, nil},
		{"/v1/deployment/" + dep.ID, &nomad.Deployment{}, nil},
		{"/v1/nodes?resources=true", &[]*nomad.NodeListStub{}, []string{"[].HTTPAddr", "[].StatusUpdatedAt"}},
		{"/v1/node/" + nodes[0].ID, &nomad.Node{}, []string{".ComputedClass"}},
		{"/v1/namespaces", &[]*nomad.Namespace{}, nil},
		{"/v1/job/keep/summary", &nomad.JobSummary{}, nil},
		{"/v1/job/keep/scale", &nomad.JobScaleStatusResponse{}, nil},
		{"/v1/job/keep/versions", &nomad.JobVersionsResponse{}, []string{".Index"}},
		{"/v1/services", &[]*nomad.ServiceRegistrationListStub{}, nil},
		{"/v1/service/keep-web", &[]*nomad.ServiceRegistration{}, nil},
	}
	for _, tc := range cases {
		if got := lostFields(t, get(tc.path), tc.into); !slices.Equal(got, tc.want) {
			t.Errorf("GET %s: fields Nomad's client drops: %v, want %v", tc.path, got, tc.want)
		}
	}
}

// TestNomadConformanceEventsAndSearch: Nomad's client follows the event
// stream (a registered job arrives as a Job event whose payload decodes
// into Nomad's Job) and prefix-searches jobs, nodes and allocations.
func TestNomadConformanceEventsAndSearch(t *testing.T) {
	a := newDevAgent(t)
	a.startDev()
	c := nomadClient(t, a, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stream, err := c.EventStream().Stream(ctx, map[nomad.Topic][]string{nomad.TopicJob: {"*"}, nomad.TopicAllocation: {"*"}}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Register(conformanceJob("evjob", 1), nil); err != nil {
		t.Fatal(err)
	}
	var job *nomad.Job
	var allocID string
	for job == nil || allocID == "" {
		select {
		case <-ctx.Done():
			t.Fatalf("no Job and Allocation events for evjob (job %v, alloc %q)", job != nil, allocID)
		case evs := <-stream:
			if evs.Err != nil {
				t.Fatalf("event stream: %v", evs.Err)
			}
			for _, e := range evs.Events {
				if e.Index == 0 || e.Index > evs.Index {
					t.Errorf("event index %d in a batch of index %d", e.Index, evs.Index)
				}
				switch e.Topic {
				case nomad.TopicJob:
					j, err := e.Job()
					if err != nil {
						t.Fatalf("Job event payload: %v", err)
					}
					if j != nil && *j.ID == "evjob" {
						if j.Meta["owner"] != "conformance" || len(j.TaskGroups) != 1 || *j.TaskGroups[0].Name != "g" {
							t.Errorf("Job event payload %s", dump(j))
						}
						job = j
					}
				case nomad.TopicAllocation:
					al, err := e.Allocation()
					if err != nil {
						t.Fatalf("Allocation event payload: %v", err)
					}
					if al != nil && al.JobID == "evjob" {
						if al.TaskGroup != "g" || al.NodeID == "" {
							t.Errorf("Allocation event payload %s", dump(al))
						}
						allocID = al.ID
					}
				}
			}
		}
	}
	res, _, err := c.Search().PrefixSearch("evj", contexts.Jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Matches[contexts.Jobs]; len(got) != 1 || got[0] != "evjob" {
		t.Errorf("prefix search of jobs: %v", res.Matches)
	}
	res, _, err = c.Search().PrefixSearch(allocID[:8], contexts.All, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Matches[contexts.Allocs]; len(got) != 1 || got[0] != allocID {
		t.Errorf("prefix search of everything for %s: %v", allocID[:8], res.Matches)
	}
}
