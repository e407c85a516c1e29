package command

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// allocCLI holds the commands of `sched alloc`: an allocation's status,
// logs, files, and the operator's ways into its tasks.
type allocCLI struct{ *cli }

func (c *allocCLI) table() []entry {
	return []entry{
		{"status", "Show an allocation and its tasks", c.allocStatus, nil},
		{"logs", "Print or follow the log of an allocation's task", c.allocLogs, nil}, // alloc_logs.go
		{"exec", "Run a command inside a running task", c.allocExec, nil},             // alloc_exec.go
		{"stop", "Stop an allocation and place a replacement", c.allocStop, nil},      // alloc_exec.go
		{"restart", "Restart an allocation's tasks", c.allocRestart, nil},             // alloc_exec.go
		{"signal", "Send a signal to an allocation's tasks", c.allocSignal, nil},      // alloc_exec.go
		{"fs", "List or print files of an allocation directory", c.allocFS, nil},      // alloc_exec.go
	}
}

const allocStatusHelp = `
Show the allocation ID (or a unique prefix of one, searched in every
namespace unless -namespace names one): where it runs, what the servers
want of it and what its node reports, and each task's state and recent
events.`

func (c *allocCLI) allocStatus(args []string) int {
	fs, m := c.flagSet("alloc status", "[options] ID", allocStatusHelp)
	verbose := fs.Bool("verbose", false, "print full IDs and every task event")
	stats := fs.Bool("stats", false, "also show the running tasks' measured CPU and memory use")
	asJSON := c.outputFlags(fs, "print the allocation (with -stats, and its resource usage) as JSON")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	id := strings.TrimSpace(fs.Arg(0))
	stubs, _, err := client.Allocations().List(c.ctx, &api.QueryOptions{Namespace: m.lookupNamespace(), Prefix: id,
		Params: map[string]string{"task_states": "false"}})
	if err != nil {
		return c.fail("querying allocation", err)
	}
	var stub *state.AllocListStub
	for _, s := range stubs {
		if s.ID == id {
			stub = s
		}
	}
	switch {
	case stub != nil:
	case len(stubs) == 1:
		stub = stubs[0]
	case len(stubs) == 0:
		fmt.Fprintf(c.stderr, "No allocation(s) with prefix or ID %q found\n", id)
		return 1
	default:
		fmt.Fprintf(c.stderr, "Prefix matched multiple allocations\n\n")
		rows := make([][]string, 0, len(stubs))
		for _, s := range stubs {
			rows = append(rows, []string{shortID(s.ID, *verbose), s.Namespace, s.JobID, s.TaskGroup, s.ClientStatus})
		}
		writeTable(c.stderr, []string{"ID", "Namespace", "Job ID", "Task Group", "Status"}, rows)
		return 1
	}
	a, _, err := client.Allocations().Info(c.ctx, stub.ID, &api.QueryOptions{Namespace: stub.Namespace})
	if err != nil {
		return c.fail("querying allocation", err)
	}
	var usage *state.AllocResourceUsage
	if *stats {
		usage, err = client.Allocations().Stats(c.ctx, a.ID, &api.QueryOptions{Namespace: a.Namespace})
		if err != nil {
			return c.fail("querying allocation stats", err)
		}
	}
	if *asJSON {
		if *stats {
			return c.printJSON(struct {
				Allocation *state.Allocation
				Stats      *state.AllocResourceUsage
			}{a, usage})
		}
		return c.printJSON(a)
	}
	c.writeAlloc(a, *verbose)
	c.writeAddresses(a, c.nodeHost(client, a.NodeID))
	if usage != nil {
		c.writeUsage(usage)
	}
	return 0
}

func (c *allocCLI) writeAlloc(a *state.Allocation, verbose bool) {
	version := "<none>"
	if a.Job != nil {
		version = strconv.FormatUint(a.Job.Version, 10)
	}
	pairs := []kv{
		{"ID", shortID(a.ID, verbose)},
		{"Eval ID", shortID(a.EvalID, verbose)},
		{"Name", a.Name},
		{"Namespace", a.Namespace},
		{"Node ID", shortID(a.NodeID, verbose)},
		{"Node Name", orNone(a.NodeName)},
		{"Job ID", a.JobID},
		{"Job Version", version},
		{"Client Status", a.ClientStatus},
		{"Client Description", orNone(a.ClientDescription)},
		{"Desired Status", a.DesiredStatus},
		{"Desired Description", orNone(a.DesiredDescription)},
		{"Created", c.ago(a.CreateTime)},
		{"Modified", c.ago(a.ModifyTime)},
	}
	if a.DeploymentID != "" {
		pairs = append(pairs, kv{"Deployment ID", shortID(a.DeploymentID, verbose)})
	}
	if t := a.RescheduleTracker; t != nil && len(t.Events) > 0 {
		pairs = append(pairs, kv{"Reschedule Attempts", strconv.Itoa(len(t.Events))})
	}
	if a.PreviousAllocation != "" {
		pairs = append(pairs, kv{"Replacement Of", shortID(a.PreviousAllocation, verbose)})
	}
	if a.NextAllocation != "" {
		pairs = append(pairs, kv{"Replaced By", shortID(a.NextAllocation, verbose)})
	}
	if a.PreemptedByAllocation != "" { // docs/scheduler.md#preemption
		pairs = append(pairs, kv{"Preempted By", shortID(a.PreemptedByAllocation, verbose)})
	}
	if len(a.PreemptedAllocations) > 0 {
		ids := make([]string, len(a.PreemptedAllocations))
		for i, id := range a.PreemptedAllocations {
			ids[i] = shortID(id, verbose)
		}
		pairs = append(pairs, kv{"Preempted Allocations", strings.Join(ids, ", ")})
	}
	if a.FollowupEvalID != "" {
		pairs = append(pairs, kv{"Follow-up Eval", shortID(a.FollowupEvalID, verbose)})
	}
	writeKV(c.stdout, pairs)

	var tasks []string
	if a.Job != nil {
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
			for _, t := range tg.Tasks {
				tasks = append(tasks, t.Name)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(a.TaskStates)) {
		if !slices.Contains(tasks, name) {
			tasks = append(tasks, name)
		}
	}
	for _, name := range tasks {
		c.writeTask(a, name, verbose)
	}
}

// maxTaskEvents is how many of a task's latest events are shown without
// -verbose.
const maxTaskEvents = 10

func (c *allocCLI) writeTask(a *state.Allocation, name string, verbose bool) {
	ts := a.TaskStates[name]
	st := "pending"
	if ts != nil && ts.State != "" {
		st = ts.State
	}
	fmt.Fprintf(c.stdout, "\nTask %q is %q\n", name, st)
	if r := a.AllocatedResources; r != nil && r.Tasks[name] != nil {
		tr := r.Tasks[name]
		writeTable(c.stdout, []string{"CPU", "Memory"}, [][]string{{fmt.Sprintf("%d MHz", tr.CPU), mib(tr.MemoryMB)}})
	}
	if ts == nil {
		return
	}
	fmt.Fprintln(c.stdout, "\nTask Events:")
	writeKV(c.stdout, []kv{
		{"Started At", c.clock(ts.StartedAt)},
		{"Finished At", c.clock(ts.FinishedAt)},
		{"Total Restarts", strconv.FormatUint(ts.Restarts, 10)},
		{"Last Restart", c.clock(ts.LastRestart)},
	})
	events := ts.Events
	if !verbose && len(events) > maxTaskEvents {
		events = events[len(events)-maxTaskEvents:]
	}
	fmt.Fprintln(c.stdout, "\nRecent Events:")
	rows := make([][]string, 0, len(events))
	// Newest first, as Nomad prints them.
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		if ev == nil {
			continue
		}
		rows = append(rows, []string{c.formatTime(ev.Time), ev.Type, eventDescription(ev)})
	}
	writeTable(c.stdout, []string{"Time", "Type", "Description"}, rows)
}

// clock prints a time, or N/A when it was never set.
func (c *allocCLI) clock(t time.Time) string {
	if t.IsZero() {
		return "N/A"
	}
	return t.In(c.loc).Format(time.RFC3339)
}

// eventDescription says in one line what a task event means: the client's
// own words when it gave some, otherwise what the event's fields say.
func eventDescription(ev *state.TaskEvent) string {
	if ev.DisplayMessage != "" {
		return ev.DisplayMessage
	}
	var d string
	switch ev.Type {
	case state.TaskReceived:
		d = "Task received by client"
	case state.TaskSetup:
		d = ev.Message
	case state.TaskStarted:
		d = "Task started by client"
	case state.TaskTerminated:
		d = fmt.Sprintf("Exit Code: %d", ev.ExitCode)
		if ev.Signal != 0 {
			d += fmt.Sprintf(", Signal: %d", ev.Signal)
		}
		if ev.Message != "" {
			d += ", Exit Message: " + strconv.Quote(ev.Message)
		}
	case state.TaskRestarting:
		d = ev.RestartReason
		if ev.StartDelay > 0 {
			d = strings.TrimSpace(d + " - Task restarting in " + time.Duration(ev.StartDelay).String())
		}
	case state.TaskNotRestarting:
		d = ev.RestartReason
	case state.TaskKilling:
		d = ev.KillReason
		if d == "" {
			d = "Sent interrupt. Waiting " + ev.KillTimeout.String() + " before force killing"
		}
	case state.TaskKilled:
		d = ev.KillError
		if d == "" {
			d = "Task successfully killed"
		}
	case state.TaskDriverFailure:
		d = ev.DriverError
	case state.TaskSetupFailure:
		d = ev.SetupError
	case state.TaskFailedValidation:
		d = ev.ValidationError
	case state.TaskDownloadingArtifacts:
		d = ev.DownloadError
		if d == "" {
			d = "Client is downloading artifacts"
		}
	case state.TaskSiblingFailed:
		d = fmt.Sprintf("Task's sibling %q failed", ev.FailedSibling)
	case state.TaskSignaling:
		d = strings.TrimSpace(ev.TaskSignal + " " + ev.TaskSignalReason)
	case state.TaskDriverMessage:
		d = ev.DriverMessage
	case state.TaskLeaderDead:
		d = "Leader Task in Group dead"
	}
	if d == "" {
		d = ev.Message
	}
	return d
}

// writeAddresses prints the allocation's ports: label, host:port, and the
// port inside the task when mapped.
func (c *allocCLI) writeAddresses(a *state.Allocation, nodeHost string) {
	if a.AllocatedResources == nil || len(a.AllocatedResources.Shared.Ports) == 0 {
		return
	}
	fmt.Fprintln(c.stdout, "\nAllocation Addresses:")
	rows := [][]string{}
	for _, p := range a.AllocatedResources.Shared.Ports {
		to := "-"
		if p.To > 0 {
			to = strconv.Itoa(p.To)
		}
		host := p.HostIP
		if host == "" {
			host = nodeHost
		}
		rows = append(rows, []string{p.Label, net.JoinHostPort(host, strconv.Itoa(p.Value)), to})
	}
	writeTable(c.stdout, []string{"Label", "Address", "To"}, rows)
}

// writeUsage prints -stats: each task's CPU and memory use.
func (c *allocCLI) writeUsage(u *state.AllocResourceUsage) {
	fmt.Fprintln(c.stdout, "\nResource Usage:")
	rows := [][]string{}
	for _, name := range slices.Sorted(maps.Keys(u.Tasks)) {
		cpu, mem := "-", "-"
		if t := u.Tasks[name]; t != nil && t.ResourceUsage != nil {
			if cs := t.ResourceUsage.CpuStats; cs != nil {
				cpu = fmt.Sprintf("%.1f%%", cs.Percent)
			}
			if ms := t.ResourceUsage.MemoryStats; ms != nil {
				mem = fmt.Sprintf("%d MiB", ms.RSS>>20)
			}
		}
		rows = append(rows, []string{name, cpu, mem})
	}
	writeTable(c.stdout, []string{"Task", "CPU", "Memory (RSS)"}, rows)
}

// nodeHost is the host of a node's HTTP address: where its ports are
// reached when a port names no address of its own. "" when unknown.
func (c *allocCLI) nodeHost(client *api.Client, nodeID string) string {
	if nodeID == "" {
		return ""
	}
	n, _, err := client.Nodes().Info(c.ctx, nodeID, nil)
	if err != nil || n == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(n.HTTPAddr)
	if err != nil {
		return ""
	}
	return host
}
