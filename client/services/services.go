// Package services registers a client's running tasks in the servers'
// built-in service catalog and runs their health checks.
//
// When a task starts, the task runner calls RegisterTask: the task's
// services are turned into registered service entries (spec §2: ID,
// ServiceName, Namespace, NodeID, Datacenter, JobID, AllocID, Tags,
// Address, Port), sent to the servers through PUT
// /v1/node/:node_id/services with the node's own secret, and the
// services' checks (http, tcp, script) start running on their Interval.
// When the task stops, DeregisterTask stops its checks and deletes its
// entries. Group services are registered with RegisterGroup and leave with
// DeregisterAlloc.
//
// Writes that fail (no server, a failover in progress) are not lost: the
// Manager keeps what it wants registered and retries in the background
// until the servers agree, so RegisterTask fails only when the entries
// cannot be computed (a port label the allocation does not have).
//
// Health: an allocation is healthy when every check of every service it
// registered passes (an allocation without checks is healthy once its
// services are registered). Health and Watch let the alloc runner decide
// the allocation's deployment health; Config.OnCheck reports each check
// result change, for task events.
package services

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// Config wires a Manager. API, NodeID and NodeSecret are required.
type Config struct {
	// API reaches the servers. Its requests carry NodeSecret as their
	// token: the service endpoints accept a node's own secret.
	API *api.Client
	// CurrentAPI, when set, is asked for the client of the server to
	// write to before each write, so that the Manager follows the
	// client's server failover; API is then only the fallback for a nil
	// answer.
	CurrentAPI func() *api.Client
	NodeID     string
	NodeSecret string
	// Datacenter is the node's datacenter, recorded in every entry.
	Datacenter string
	// Address is the node's address, used for a service whose port has no
	// host IP of its own; empty means 127.0.0.1.
	Address string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// OnCheck, when set, is called (from a check's goroutine, never with
	// a Manager lock held) each time a check's status changes, including
	// its first result. The task runner turns it into a task event.
	OnCheck func(CheckResult)
	// RetryInterval is the delay between background attempts to bring
	// the servers in line after a failed write; zero means 2 s.
	RetryInterval time.Duration
	// WriteTimeout bounds one write to the servers, and how long
	// RegisterTask and the deregistrations wait for the servers before
	// leaving the write to the background; zero means 5 s.
	WriteTimeout time.Duration
}

// Check statuses, as Consul and Nomad name them.
const (
	StatusPending  = "pending"
	StatusPassing  = "passing"
	StatusWarning  = "warning"
	StatusCritical = "critical"
)

// CheckResult is the latest outcome of one check.
type CheckResult struct {
	AllocID string
	// Task is the task whose service the check belongs to; empty for a
	// group service.
	Task      string
	Service   string
	Check     string
	CheckType string
	// Status is pending (not run yet, or its InitialStatus), passing,
	// warning or critical.
	Status string
	// Output is what the check said: the HTTP status line, the dial
	// error, the script's (bounded) output.
	Output string
	// Time is when the check last ran; zero while pending.
	Time time.Time
}

// Manager registers services and runs checks for every allocation of one
// client. It is safe for concurrent use. Close stops every check and the
// background sync.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu sync.Mutex
	// allocs holds what each allocation has registered, by alloc ID.
	allocs map[string]*allocServices
	// pendingUpsert and pendingDelete are the writes the servers have not
	// taken yet (sync.go), by registration ID.
	pendingUpsert map[string]*state.ServiceRegistration
	pendingDelete map[string]bool
	closed        bool

	// flushSem (capacity 1) serializes writes to the servers, so they
	// arrive in the order they were queued; a channel rather than a mutex
	// so that waiting for it honours a context.
	flushSem chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// allocServices is what one allocation has registered.
type allocServices struct {
	// owners maps an owner ("" for the group, else the task name) to its
	// registrations and checks.
	owners map[string]*owner
	// changed is closed and replaced at every health change (Watch).
	changed chan struct{}
}

// owner is the services of one task, or of the group.
type owner struct {
	regs   []*state.ServiceRegistration
	checks []*checkRunner
}

// New validates cfg, fills its defaults and starts the background sync.
func New(cfg Config) (*Manager, error) {
	if cfg.API == nil || cfg.NodeID == "" {
		return nil, errors.New("services: API and NodeID are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Address == "" {
		cfg.Address = "127.0.0.1"
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = 2 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 5 * time.Second
	}
	m := &Manager{
		cfg:           cfg,
		log:           cfg.Logger.With("component", "services"),
		allocs:        map[string]*allocServices{},
		pendingUpsert: map[string]*state.ServiceRegistration{},
		pendingDelete: map[string]bool{},
		flushSem:      make(chan struct{}, 1),
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.wg.Add(1)
	go m.syncLoop()
	return m, nil
}

// Close stops every check and the background sync, and waits for them.
// Registrations stay on the servers: a client that restarts registers the
// same IDs again, and one that does not come back is cleaned up with its
// allocations.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	var runners []*checkRunner
	for _, as := range m.allocs {
		for _, o := range as.owners {
			runners = append(runners, o.checks...)
		}
	}
	m.mu.Unlock()
	m.cancel()
	for _, r := range runners {
		r.stop()
	}
	m.wg.Wait()
}

// RegisterTask registers the services of task (a task of alloc's group)
// and starts their checks. env is the task's interpolated environment
// (service names and tags may refer to it as ${NAME}; script checks run
// with it) and taskDir its working directory (script checks run there).
// Registering a task again replaces its services and restarts its checks.
//
// It fails only when the entries cannot be computed; a write the servers
// did not take is retried in the background.
func (m *Manager) RegisterTask(ctx context.Context, alloc *state.Allocation, task *state.Task, env map[string]string, taskDir string) error {
	if alloc == nil || task == nil {
		return errors.New("services: register: allocation and task are required")
	}
	return m.register(ctx, alloc, task.Name, task.Services, env, taskDir)
}

// RegisterGroup registers the group services of alloc (TaskGroup.Services)
// and starts their checks. Script checks of group services run in dir
// with env (the task runner passes those of the check's TaskName, or of
// the group's main task).
func (m *Manager) RegisterGroup(ctx context.Context, alloc *state.Allocation, env map[string]string, dir string) error {
	if alloc == nil || alloc.Job == nil {
		return errors.New("services: register: allocation with its job is required")
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil {
		return fmt.Errorf("services: register: allocation %s: group %q not in its job", alloc.ID, alloc.TaskGroup)
	}
	return m.register(ctx, alloc, "", tg.Services, env, dir)
}

// register computes and sends owner's entries and (re)starts its checks.
func (m *Manager) register(ctx context.Context, alloc *state.Allocation, task string, svcs []*state.Service, env map[string]string, dir string) error {
	regs, err := m.Entries(alloc, task, svcs, env)
	if err != nil {
		return err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return errors.New("services: manager is closed")
	}
	as := m.allocs[alloc.ID]
	if as == nil {
		as = &allocServices{owners: map[string]*owner{}, changed: make(chan struct{})}
		m.allocs[alloc.ID] = as
	}
	old := as.owners[task]
	o := &owner{regs: regs}
	for i, s := range svcs {
		for _, c := range s.Checks {
			o.checks = append(o.checks, m.newCheckRunner(alloc, task, s, c, regs[i], env, dir))
		}
	}
	as.owners[task] = o
	var stale []string
	if old != nil {
		keep := map[string]bool{}
		for _, r := range regs {
			keep[r.ID] = true
		}
		for _, r := range old.regs {
			if !keep[r.ID] {
				stale = append(stale, r.ID)
			}
		}
	}
	m.queueLocked(regs, stale)
	m.notifyLocked(as)
	m.mu.Unlock()
	if old != nil {
		for _, r := range old.checks {
			r.stop()
		}
	}
	for _, r := range o.checks {
		r.start(m)
	}
	// A failure stays queued for the sync loop, which logs it.
	fctx, cancel := context.WithTimeout(ctx, m.cfg.WriteTimeout)
	defer cancel()
	_ = m.flush(fctx)
	return nil
}

// DeregisterTask stops the checks of task's services in allocID and
// deletes its entries from the servers. Deregistering what is not
// registered does nothing. A delete the servers did not take is retried in
// the background; the error reports that first failure.
func (m *Manager) DeregisterTask(allocID, task string) error {
	return m.deregister(allocID, func(name string) bool { return name == task })
}

// DeregisterAlloc stops every check of allocID and deletes every entry it
// registered, its tasks' and its group's.
func (m *Manager) DeregisterAlloc(allocID string) error {
	return m.deregister(allocID, func(string) bool { return true })
}

func (m *Manager) deregister(allocID string, match func(owner string) bool) error {
	m.mu.Lock()
	as := m.allocs[allocID]
	if as == nil {
		m.mu.Unlock()
		return nil
	}
	var ids []string
	var runners []*checkRunner
	for name, o := range as.owners {
		if !match(name) {
			continue
		}
		for _, r := range o.regs {
			ids = append(ids, r.ID)
		}
		runners = append(runners, o.checks...)
		delete(as.owners, name)
	}
	if len(as.owners) == 0 {
		delete(m.allocs, allocID)
	}
	m.queueLocked(nil, ids)
	m.notifyLocked(as)
	m.mu.Unlock()
	for _, r := range runners {
		r.stop()
	}
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.WriteTimeout)
	defer cancel()
	return m.flush(ctx)
}

// Registrations returns the entries allocID has registered (or wants
// registered), ordered by ID.
func (m *Manager) Registrations(allocID string) []*state.ServiceRegistration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*state.ServiceRegistration
	if as := m.allocs[allocID]; as != nil {
		for _, o := range as.owners {
			for _, r := range o.regs {
				out = append(out, r.Copy())
			}
		}
	}
	slices.SortFunc(out, func(a, b *state.ServiceRegistration) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Checks returns the latest result of every check of allocID, ordered by
// task, service and check name.
func (m *Manager) Checks(allocID string) []CheckResult {
	m.mu.Lock()
	var runners []*checkRunner
	if as := m.allocs[allocID]; as != nil {
		for _, o := range as.owners {
			runners = append(runners, o.checks...)
		}
	}
	m.mu.Unlock()
	out := make([]CheckResult, 0, len(runners))
	for _, r := range runners {
		out = append(out, r.result())
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Task != b.Task {
			return a.Task < b.Task
		}
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		return a.Check < b.Check
	})
	return out
}

// Health reports whether every check of allocID passes. detail names the
// first check that does not, with its status and output, or says why the
// allocation is healthy. An allocation with nothing registered is not
// healthy: its services are not in the catalog.
func (m *Manager) Health(allocID string) (healthy bool, detail string) {
	m.mu.Lock()
	as := m.allocs[allocID]
	m.mu.Unlock()
	if as == nil || len(as.owners) == 0 {
		return false, "no services registered"
	}
	checks := m.Checks(allocID)
	for _, c := range checks {
		if c.Status != StatusPassing {
			who := c.Service
			if c.Task != "" {
				who = c.Task + "/" + c.Service
			}
			msg := fmt.Sprintf("check %q of service %s is %s", c.Check, who, c.Status)
			if c.Output != "" {
				msg += ": " + c.Output
			}
			return false, msg
		}
	}
	if len(checks) == 0 {
		return true, "services registered, no checks"
	}
	return true, strconv.Itoa(len(checks)) + " checks passing"
}

// Watch returns a channel closed at the next change of allocID's health
// inputs: a check result that changes, or services registered or
// deregistered. Call Health after it fires, then Watch again.
func (m *Manager) Watch(allocID string) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	as := m.allocs[allocID]
	if as == nil {
		// Registered later: the entry is created now so that its first
		// registration fires this channel.
		as = &allocServices{owners: map[string]*owner{}, changed: make(chan struct{})}
		m.allocs[allocID] = as
	}
	return as.changed
}

// notifyLocked fires as's watchers. m.mu must be held.
func (m *Manager) notifyLocked(as *allocServices) {
	close(as.changed)
	as.changed = make(chan struct{})
}

// checkChanged is called by a check runner whose status changed.
func (m *Manager) checkChanged(res CheckResult) {
	m.mu.Lock()
	if as := m.allocs[res.AllocID]; as != nil {
		m.notifyLocked(as)
	}
	m.mu.Unlock()
	if m.cfg.OnCheck != nil {
		m.cfg.OnCheck(res)
	}
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
