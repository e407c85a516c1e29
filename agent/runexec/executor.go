// Package runexec executes the management API's Terraform runs as jobs
// (docs/terraform.md). Its Executor is a leader service: started after the
// leadership barrier and stopped on loss, it keeps nothing but what it
// reads from the state store, so a new leader picks every run up where the
// last one left it.
//
// Each pass reads the runs that are not over, and for each what it needs
// to decide (its workspace's earlier runs, its configuration version, the
// allocations of its plan and apply jobs), asks mgmt.NextRunStep what to
// do, and proposes that through raft:
//
//   - start a phase: a batch job in namespace mgmt.RunNamespace (created
//     on demand), one task run by the raw_exec driver whose command is the
//     sched binary in worker mode (`sched tfe-worker`); its environment
//     names the API, the run, the phase, the Terraform version's URL and
//     SHA-256, and carries the run's worker secret;
//   - move a queued run to planning/applying once its job's allocation
//     runs, or error it when the job ended without the worker's report;
//   - stop the job of a run that was canceled or discarded.
//
// The worker's own reports (log chunks, the plan's summary, the new
// state) reach the management API's worker endpoints, not this package.
// Passes are driven by go-memdb watches on the runs and the jobs'
// allocations, at most one every MinPass; a pass costs a read of the runs
// table and a look at each run that is not over (a final run whose jobs
// ended is remembered and skipped for the rest of the term).
//
// It lives under agent/, not scheduler/leader beside the jobs side's leader
// services: it reads the management domain (state/mgmt), which the
// scheduler's packages may not import, and it is wired by the agent like
// them. It imports only state, state/mgmt and state/store
// (boundaries_test.go); ARCHITECTURE.md's package table has no row for it
// yet.
package runexec

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// MinPass is the least time between two passes.
const MinPass = 50 * time.Millisecond

// idlePass bounds how long a pass waits for a watch to fire.
const idlePass = 30 * time.Second

// Proposer commits a command through consensus (the agent's raft writer).
type Proposer interface {
	Apply(ctx context.Context, t store.MessageType, req any) (any, uint64, error)
}

// Config is what the executor needs; Validate fills defaults.
type Config struct {
	Store  *store.Store
	Raft   Proposer
	Logger *slog.Logger
	// Now is the leader's clock; nil means time.Now.
	Now func() time.Time
	// NewID makes evaluation IDs (the core's ID source).
	NewID func() string
	// Command is the sched binary the clients run in worker mode; it must
	// exist at this path on every client that may take a run.
	Command string
	// APIAddress is the base URL (scheme, host, port) workers reach the
	// management API at.
	APIAddress string
	// CACertPEM, when the API serves HTTPS with a private CA, is the CA
	// workers trust (not a secret).
	CACertPEM string
	// Resources of the worker's task; zero means 500 MHz and 512 MB.
	CPU, MemoryMB int
}

// Validate checks the config and fills its defaults.
func (c *Config) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("runexec: Store is required"))
	}
	if c.Raft == nil {
		errs = append(errs, errors.New("runexec: Raft is required"))
	}
	if c.NewID == nil {
		errs = append(errs, errors.New("runexec: NewID is required"))
	}
	if c.Command == "" {
		errs = append(errs, errors.New("runexec: Command (the sched binary) is required"))
	}
	if c.APIAddress == "" {
		errs = append(errs, errors.New("runexec: APIAddress is required"))
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.CPU == 0 {
		c.CPU = 500
	}
	if c.MemoryMB == 0 {
		c.MemoryMB = 512
	}
	return errors.Join(errs...)
}

// Executor is the leader service that executes runs. Its zero value is
// not usable: build it with New.
type Executor struct {
	cfg Config

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}

	// settled holds the final runs whose jobs no longer run: a pass
	// skips them. Only the loop's goroutine touches it; Start empties it,
	// so a new term of leadership looks at every run once again.
	settled map[string]bool
}

// New returns an executor; it does nothing until Start.
func New(cfg Config) (*Executor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Executor{cfg: cfg}, nil
}

// Name identifies the service in logs.
func (e *Executor) Name() string { return "run-executor" }

// Start begins executing runs until ctx ends or Stop.
func (e *Executor) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cancel != nil {
		return errors.New("run executor already started")
	}
	ctx, e.cancel = context.WithCancel(ctx)
	e.done = make(chan struct{})
	e.settled = map[string]bool{}
	go e.loop(ctx, e.done)
	return nil
}

// Stop ends the duty and waits for its goroutine.
func (e *Executor) Stop() {
	e.mu.Lock()
	cancel, done := e.cancel, e.done
	e.cancel, e.done = nil, nil
	e.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (e *Executor) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	for ctx.Err() == nil {
		ws := memdb.NewWatchSet()
		if err := e.pass(ctx, ws); err != nil && ctx.Err() == nil {
			e.cfg.Logger.Warn("run executor pass failed", "error", err)
		}
		wait, cancel := context.WithTimeout(ctx, idlePass)
		_ = ws.WatchCtx(wait)
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(MinPass):
		}
	}
}

// pass looks at every run once and proposes at most one step for each.
func (e *Executor) pass(ctx context.Context, ws memdb.WatchSet) error {
	runs, err := e.cfg.Store.Runs(ws)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range runs {
		if e.settled[r.ID] {
			continue
		}
		obs, err := e.observe(ws, r, runs)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if mgmt.RunIsFinal(r.Status) && !obs.PlanJob.Live() && !obs.ApplyJob.Live() {
			e.settled[r.ID] = true // a final run's status and jobs never come back
			continue
		}
		step := mgmt.NextRunStep(r, obs)
		if step.Kind == mgmt.StepNone {
			continue
		}
		if err := e.take(ctx, r, step); err != nil && !errors.Is(err, state.ErrConflict) {
			errs = append(errs, fmt.Errorf("run %s: %w", r.ID, err))
		}
	}
	return errors.Join(errs...)
}

// observe gathers what NextRunStep needs about r.
func (e *Executor) observe(ws memdb.WatchSet, r *mgmt.Run, runs []*mgmt.Run) (mgmt.RunObservation, error) {
	var o mgmt.RunObservation
	var err error
	if o.PlanJob, err = e.jobState(ws, r.Plan.JobID); err != nil {
		return o, err
	}
	if o.ApplyJob, err = e.jobState(ws, r.Apply.JobID); err != nil {
		return o, err
	}
	if r.Status != mgmt.RunPending {
		return o, nil
	}
	for _, other := range runs {
		if other.WorkspaceID == r.WorkspaceID && other.CreateIndex < r.CreateIndex &&
			!other.PlanOnly && !mgmt.RunIsFinal(other.Status) {
			o.Blocked = true
		}
	}
	if r.ConfigurationVersionID != "" {
		cv, err := e.cfg.Store.ConfigurationVersionByID(ws, r.ConfigurationVersionID)
		if err != nil {
			return o, err
		}
		if cv != nil {
			o.Configuration = cv.Status
		}
	}
	return o, nil
}

// jobState reads what a phase's job is doing from its allocations.
func (e *Executor) jobState(ws memdb.WatchSet, jobID string) (mgmt.JobState, error) {
	if jobID == "" {
		return mgmt.JobAbsent, nil
	}
	job, err := e.cfg.Store.JobByID(ws, mgmt.RunNamespace, jobID)
	if err != nil || job == nil {
		return mgmt.JobAbsent, err
	}
	allocs, err := e.cfg.Store.AllocsByJob(ws, mgmt.RunNamespace, jobID, false)
	if err != nil {
		return mgmt.JobAbsent, err
	}
	return JobStateOf(job, allocs), nil
}

// JobStateOf judges a phase's job by its allocations: running when one
// runs, waiting while one may still run (or none was placed yet and the
// job is not dead), done otherwise.
func JobStateOf(job *state.Job, allocs []*state.Allocation) mgmt.JobState {
	live := false
	for _, a := range allocs {
		if a.Terminal() {
			continue
		}
		if a.ClientStatus == state.AllocClientStatusRunning {
			return mgmt.JobRunning
		}
		live = true
	}
	switch {
	case live:
		return mgmt.JobWaiting
	case len(allocs) == 0 && job.Status != state.JobStatusDead && !job.Stop:
		return mgmt.JobWaiting
	}
	return mgmt.JobDone
}

// take proposes step for r.
func (e *Executor) take(ctx context.Context, r *mgmt.Run, step mgmt.RunStep) error {
	now := e.cfg.Now()
	switch step.Kind {
	case mgmt.StepStart:
		req, err := e.startRequest(r, step.Phase, now)
		if err != nil {
			return e.fail(ctx, r, err.Error(), now)
		}
		_, _, err = e.cfg.Raft.Apply(ctx, store.RunPhaseStartRequestType, req)
		if err != nil && !errors.Is(err, state.ErrConflict) {
			return e.fail(ctx, r, fmt.Sprintf("start the %s: %v", step.Phase, err), now)
		}
		if errors.Is(err, state.ErrConflict) && step.Phase == mgmt.PhaseApply {
			// The workspace is locked by someone else: the apply
			// cannot save its state, so the run fails, as TFE's does.
			return e.fail(ctx, r, err.Error(), now)
		}
		return err
	case mgmt.StepAdvance:
		_, _, err := e.cfg.Raft.Apply(ctx, store.RunPhaseUpdateRequestType,
			&store.RunPhaseUpdateRequest{RunID: r.ID, Status: step.Status, Now: now})
		return err
	case mgmt.StepFail:
		return e.fail(ctx, r, step.Message, now)
	case mgmt.StepStop:
		jobID := r.Phase(step.Phase).JobID
		_, _, err := e.cfg.Raft.Apply(ctx, store.JobDeregisterRequestType, &store.JobDeregisterRequest{
			Namespace: mgmt.RunNamespace, JobID: jobID, Now: now.UnixNano(),
			Eval: &state.Evaluation{ID: e.cfg.NewID(), Namespace: mgmt.RunNamespace, Priority: state.DefaultJobPriority,
				Type: state.JobTypeBatch, TriggeredBy: state.EvalTriggerJobDeregister, JobID: jobID,
				Status: state.EvalStatusPending, CreateTime: now.UnixNano(), ModifyTime: now.UnixNano()},
		})
		return err
	}
	return nil
}

// fail errors the run with msg.
func (e *Executor) fail(ctx context.Context, r *mgmt.Run, msg string, now time.Time) error {
	e.cfg.Logger.Info("run errored", "run", r.ID, "reason", msg)
	_, _, err := e.cfg.Raft.Apply(ctx, store.RunPhaseUpdateRequestType,
		&store.RunPhaseUpdateRequest{RunID: r.ID, Status: mgmt.RunErrored, Message: msg, Now: now})
	return err
}

// startRequest builds the command that starts r's phase: its job, with
// the worker's environment, on the node pool of the workspace's agent
// pool (agent execution mode) or the default pool.
func (e *Executor) startRequest(r *mgmt.Run, phase string, now time.Time) (*store.RunPhaseStartRequest, error) {
	w, err := e.cfg.Store.WorkspaceByID(nil, r.WorkspaceID)
	if err != nil {
		return nil, err
	}
	if w == nil {
		return nil, fmt.Errorf("workspace %q is gone", r.WorkspaceID)
	}
	req := &store.RunPhaseStartRequest{RunID: r.ID, Phase: phase, Now: now,
		TerraformVersion: r.TerraformVersion, WorkerSecret: r.WorkerSecret}
	if phase == mgmt.PhasePlan {
		req.TerraformVersion = w.ToolVersion
		if req.WorkerSecret, err = newSecret(); err != nil {
			return nil, err
		}
	}
	tv, err := e.toolVersion(req.TerraformVersion)
	if err != nil {
		return nil, err
	}
	req.TerraformVersion = tv.Version
	pool, err := e.nodePool(r, w)
	if err != nil {
		return nil, err
	}
	job := e.job(r, w, phase, pool, tv, req.WorkerSecret)
	ns := &state.Namespace{Name: mgmt.RunNamespace, Description: "plans and applies of Terraform runs (the management API's run executor)"}
	req.Namespace, req.Job = ns, job
	req.Eval = &state.Evaluation{ID: e.cfg.NewID(), Namespace: job.Namespace, Priority: job.Priority, Type: job.Type,
		TriggeredBy: state.EvalTriggerJobRegister, JobID: job.ID, Status: state.EvalStatusPending,
		CreateTime: now.UnixNano(), ModifyTime: now.UnixNano()}
	return req, nil
}

// toolVersion is the terraform version a run executes: the workspace's,
// or without one the installation's highest enabled version.
func (e *Executor) toolVersion(version string) (*mgmt.ToolVersion, error) {
	if version == "" {
		all, err := e.cfg.Store.ToolVersionsOfFamily(nil, mgmt.VersionFamilyTool)
		if err != nil {
			return nil, err
		}
		if tv := mgmt.DefaultToolVersion(all); tv != nil {
			return tv, nil
		}
		return nil, errors.New("the installation has no enabled terraform version (admin tool-versions), and the workspace names none")
	}
	tv, err := e.cfg.Store.ToolVersionByVersion(nil, mgmt.VersionFamilyTool, version)
	if err != nil {
		return nil, err
	}
	if tv == nil {
		return nil, fmt.Errorf("terraform version %s is not one of the installation's versions (admin tool-versions)", version)
	}
	return tv, nil
}

// nodePool is where r's jobs run: the node pool its workspace's agent
// pool names (agent execution mode), else the default pool.
func (e *Executor) nodePool(r *mgmt.Run, w *mgmt.Workspace) (string, error) {
	if w.AgentPoolID == "" {
		return state.DefaultNodePool, nil
	}
	ap, err := e.cfg.Store.AgentPoolByID(nil, w.AgentPoolID)
	if err != nil {
		return "", err
	}
	if ap == nil {
		return "", fmt.Errorf("agent pool %q of workspace %q is gone", w.AgentPoolID, w.ID)
	}
	return ap.NodePool(), nil
}

// Environment variables of the worker's task, which `sched tfe-worker`
// reads (state/mgmt/run_exec.go names them).
const (
	EnvAddress   = mgmt.WorkerEnvAddress
	EnvCACert    = mgmt.WorkerEnvCACert
	EnvRun       = mgmt.WorkerEnvRun
	EnvPhase     = mgmt.WorkerEnvPhase
	EnvSecret    = mgmt.WorkerEnvSecret
	EnvTFURL     = mgmt.WorkerEnvTerraformURL
	EnvTFSHA     = mgmt.WorkerEnvTerraformSHA
	EnvTFVersion = mgmt.WorkerEnvTerraformVersion
	EnvDestroy   = mgmt.WorkerEnvDestroy
	EnvNoRefresh = mgmt.WorkerEnvNoRefresh
)

// job is the batch job of r's phase: one task, no restart and no
// reschedule (a failed plan is an errored run, as in TFE).
func (e *Executor) job(r *mgmt.Run, w *mgmt.Workspace, phase, pool string, tv *mgmt.ToolVersion, secret string) *state.Job {
	env := map[string]string{
		EnvAddress: e.cfg.APIAddress, EnvRun: r.ID, EnvPhase: phase, EnvSecret: secret,
		EnvTFURL: tv.URL, EnvTFSHA: tv.SHA, EnvTFVersion: tv.Version,
	}
	if e.cfg.CACertPEM != "" {
		env[EnvCACert] = e.cfg.CACertPEM
	}
	if r.IsDestroy {
		env[EnvDestroy] = "1"
	}
	if r.NoRefresh {
		env[EnvNoRefresh] = "1"
	}
	id := mgmt.PhaseJobID(r.ID, phase)
	job := &state.Job{
		ID: id, Name: id, Namespace: mgmt.RunNamespace, Type: state.JobTypeBatch,
		Datacenters: []string{"*"}, NodePool: pool,
		Meta: map[string]string{"tfe-run": r.ID, "tfe-workspace": w.ID, "tfe-organization": w.OrganizationName, "tfe-phase": phase},
		TaskGroups: []*state.TaskGroup{{
			Name: "terraform", Count: 1,
			RestartPolicy:    &state.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: time.Second, Mode: "fail"},
			ReschedulePolicy: &state.ReschedulePolicy{Attempts: 0, Unlimited: false},
			Tasks: []*state.Task{{
				Name: "terraform", Driver: "raw_exec",
				Config:    map[string]any{"command": e.cfg.Command, "args": []any{"tfe-worker"}},
				Env:       env,
				Resources: &state.Resources{CPU: e.cfg.CPU, MemoryMB: e.cfg.MemoryMB},
			}},
		}},
	}
	job.Canonicalize()
	return job
}

// newSecret is a run's worker secret: 32 random bytes, hex.
func newSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
