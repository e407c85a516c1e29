package mgmt

import (
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/schedhq/sched/state"
)

// Runs executed as jobs (docs/terraform.md). A run of a workspace whose
// execution mode is remote (or agent, with an agent pool) is carried out by
// the leader's run executor: its plan, and then its apply, is each a batch
// job in the RunNamespace namespace, whose task runs `sched tfe-worker`.
// The worker fetches the configuration and the current state with the
// run's WorkerSecret, runs terraform, streams its log and reports the
// result; the executor turns the jobs' allocations into the run's status.
// What to do next is decided here, by NextRunStep, a pure function of the
// run and what the executor observed, so the lifecycle is tested as a
// table without a cluster.

// RunNamespace is the jobs namespace of every run's plan and apply jobs,
// created on demand by the first run that executes.
const RunNamespace = "tfe-runs"

// Prefixes of plan and apply IDs: a run's plan and apply take the run's ID
// with their own prefix, so either names its run without a table.
const (
	PrefixPlan  = "plan-"
	PrefixApply = "apply-"
)

// Phases of a run, the two jobs a run may have.
const (
	PhasePlan  = "plan"
	PhaseApply = "apply"
)

// Statuses of a plan or an apply (go-tfe's PlanStatus and ApplyStatus).
const (
	PhasePending     = "pending"
	PhaseQueued      = "queued"
	PhaseRunning     = "running"
	PhaseFinished    = "finished"
	PhaseErrored     = "errored"
	PhaseCanceled    = "canceled"
	PhaseUnreachable = "unreachable"
)

// MaxRunLogBytes bounds the log kept of one phase; past it the worker's
// further output is dropped from the kept log (the task's own stdout on
// the client keeps all of it) and a line says so.
const MaxRunLogBytes = 512 << 10

// MaxRunLogChunk bounds one log append of the worker.
const MaxRunLogChunk = 64 << 10

// RunExecution is what a run executed as jobs carries beside its record.
type RunExecution struct {
	// ConfigurationVersionID is the configuration the run plans: the one
	// named at create, else the workspace's newest.
	ConfigurationVersionID string
	// AutoApply applies a plan with changes without confirmation.
	AutoApply bool
	// PlanOnly ends the run after its plan (planned_and_finished), as
	// speculative plans do.
	PlanOnly bool
	// Refresh is false when the run plans without refreshing.
	NoRefresh bool
	// TerraformVersion is the version the plan job runs (the workspace's
	// when the plan started).
	TerraformVersion string
	// WorkerSecret authorizes the run's worker on the worker endpoints
	// (GET the configuration and state, POST logs and results, PUT the
	// new state) while the run executes. It is never rendered.
	WorkerSecret string
	// Plan and Apply are the two phases.
	Plan  RunPhase
	Apply RunPhase
	// ErrorMessage says why an errored run failed.
	ErrorMessage string
	// Variables are the run's variables (`terraform apply -var` in remote
	// execution): each value an HCL expression, which the worker writes to
	// a .auto.tfvars file of the configuration.
	Variables []RunVariable
}

// RunVariable is a variable of a run: Value is an HCL expression (go-tfe's
// RunVariable: `"two"` for a string).
type RunVariable struct {
	Key   string
	Value string
}

// Bounds of a run's variables.
const (
	MaxRunVariables     = 100
	MaxRunVariableKey   = 128
	MaxRunVariableValue = 16 << 10
)

// runVariableKey is a Terraform variable's name.
var runVariableKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// CheckRunVariables checks a run's variables: at most MaxRunVariables,
// each a variable name, once, and a value within bounds.
func CheckRunVariables(v *state.ValidationError, vars []RunVariable) {
	if len(vars) > MaxRunVariables {
		v.Add(AttrPointer("variables"), "holds %d variables; at most %d", len(vars), MaxRunVariables)
		return
	}
	seen := map[string]bool{}
	for i, rv := range vars {
		p := fmt.Sprintf("%s/%d", AttrPointer("variables"), i)
		switch {
		case len(rv.Key) > MaxRunVariableKey || !runVariableKey.MatchString(rv.Key):
			v.Add(p+"/key", "%q is not a variable name (letters, digits, _ and -, starting with a letter or _, at most %d)", rv.Key, MaxRunVariableKey)
		case seen[rv.Key]:
			v.Add(p+"/key", "%q is given twice", rv.Key)
		}
		seen[rv.Key] = true
		if rv.Value == "" || len(rv.Value) > MaxRunVariableValue {
			v.Add(p+"/value", "must be an expression of 1 to %d bytes", MaxRunVariableValue)
		}
	}
}

// RunPhase is a plan or an apply.
type RunPhase struct {
	// Status is one of the Phase* statuses ("" reads as pending).
	Status string
	// JobID is the phase's job in RunNamespace, once started.
	JobID string
	// Log is what the worker reported of terraform's output, at most
	// MaxRunLogBytes.
	Log []byte
	// LogTruncated is set once the log reached its bound.
	LogTruncated bool
	// Resource counts of the plan (and, for an apply, of what it applied).
	Additions, Changes, Destructions, Imports int
	// HasChanges: the plan changes resources or outputs.
	HasChanges       bool
	StatusTimestamps map[string]time.Time
}

func (p RunPhase) copy() RunPhase {
	p.Log = append([]byte(nil), p.Log...)
	p.StatusTimestamps = maps.Clone(p.StatusTimestamps)
	return p
}

// PhaseStatus is the phase's status, pending when unset.
func (p *RunPhase) PhaseStatus() string {
	if p.Status == "" {
		return PhasePending
	}
	return p.Status
}

// SetStatus moves the phase to status at now.
func (p *RunPhase) SetStatus(status string, now time.Time) {
	p.Status = status
	if p.StatusTimestamps == nil {
		p.StatusTimestamps = map[string]time.Time{}
	}
	p.StatusTimestamps[status] = Time(now)
}

// PhaseIsFinal reports whether a phase status ends the phase.
func PhaseIsFinal(status string) bool {
	switch status {
	case PhaseFinished, PhaseErrored, PhaseCanceled, PhaseUnreachable:
		return true
	}
	return false
}

// AppendLog adds a chunk of the worker's output, up to MaxRunLogBytes.
func (p *RunPhase) AppendLog(chunk []byte) {
	if p.LogTruncated {
		return
	}
	// The note that says the log was cut has its room kept free.
	const note = "\n[sched: the log is over its limit; the rest is in the task's log on the client]\n"
	room := MaxRunLogBytes - len(note) - len(p.Log)
	if len(chunk) <= room {
		p.Log = append(p.Log, chunk...)
		return
	}
	p.Log = append(p.Log, chunk[:max(0, room)]...)
	p.Log = append(p.Log, note...)
	p.LogTruncated = true
}

// Phase returns the run's phase named name, or nil.
func (r *Run) Phase(name string) *RunPhase {
	switch name {
	case PhasePlan:
		return &r.Plan
	case PhaseApply:
		return &r.Apply
	}
	return nil
}

// PlanID and ApplyID name a run's plan and apply.
func PlanID(runID string) string  { return PrefixPlan + strings.TrimPrefix(runID, PrefixRun) }
func ApplyID(runID string) string { return PrefixApply + strings.TrimPrefix(runID, PrefixRun) }

// RunOfPhase returns the run ID a plan or apply ID names, and false for
// any other ID.
func RunOfPhase(id, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || rest == "" {
		return "", false
	}
	return PrefixRun + rest, true
}

// PhaseJobID is the job of a run's phase.
func PhaseJobID(runID, phase string) string { return runID + "-" + phase }

// SettlePhases ends the phases of a run that reached a final status: a
// phase that had started and not finished is canceled (or errored with
// the run), and a phase that never started is unreachable.
func (r *Run) SettlePhases(now time.Time) {
	if !RunIsFinal(r.Status) {
		return
	}
	for _, p := range []*RunPhase{&r.Plan, &r.Apply} {
		st := p.PhaseStatus()
		switch {
		case PhaseIsFinal(st):
		case st == PhasePending:
			p.SetStatus(PhaseUnreachable, now)
		case r.Status == RunErrored:
			p.SetStatus(PhaseErrored, now)
		default:
			p.SetStatus(PhaseCanceled, now)
		}
	}
}

// JobState is what the executor observed of a phase's job.
type JobState int

// Job states, from the job's allocations.
const (
	// JobAbsent: no such job (never started, or gone).
	JobAbsent JobState = iota
	// JobWaiting: the job exists but no allocation runs yet.
	JobWaiting
	// JobRunning: an allocation of the job runs.
	JobRunning
	// JobDone: the job's allocations are all terminal, or the job is dead.
	JobDone
)

// Live reports whether the job may still run work.
func (s JobState) Live() bool { return s == JobWaiting || s == JobRunning }

// RunObservation is what the executor saw of a run's surroundings.
type RunObservation struct {
	// Blocked: an earlier run of the workspace has not finished.
	Blocked bool
	// Configuration is the status of the run's configuration version,
	// "" when it has none or it is gone.
	Configuration string
	// PlanJob and ApplyJob are the phases' jobs.
	PlanJob, ApplyJob JobState
}

// StepKind is what the executor does for a run.
type StepKind int

// Step kinds.
const (
	// StepNone: wait for something to change.
	StepNone StepKind = iota
	// StepStart starts Phase's job (the run goes plan_queued or
	// apply_queued).
	StepStart
	// StepAdvance moves the run to Status (planning, applying).
	StepAdvance
	// StepFail errors the run, with Message.
	StepFail
	// StepStop stops Phase's job, which outlived its run.
	StepStop
)

// RunStep is the executor's next step for a run.
type RunStep struct {
	Kind    StepKind
	Phase   string
	Status  string
	Message string
}

// NextRunStep decides the executor's next step for run r given what it
// observed. It is pure: the executor proposes the step through raft, and
// the state machine checks the transition again.
func NextRunStep(r *Run, o RunObservation) RunStep {
	switch r.Status {
	case RunPending:
		switch {
		case o.Blocked:
			return RunStep{}
		case o.Configuration == "":
			return RunStep{Kind: StepFail, Message: "the run has no uploaded configuration version"}
		case o.Configuration != ConfigurationUploaded:
			return RunStep{} // wait for the upload
		}
		return RunStep{Kind: StepStart, Phase: PhasePlan}
	case RunPlanQueued, RunPlanning:
		return phaseWatch(r, PhasePlan, o.PlanJob, RunPlanning)
	case RunPlanned, RunCostEstimated, RunPolicyChecked:
		if r.AutoApply && !r.PlanOnly && r.Plan.HasChanges {
			return RunStep{Kind: StepStart, Phase: PhaseApply}
		}
		return RunStep{}
	case RunConfirmed:
		return RunStep{Kind: StepStart, Phase: PhaseApply}
	case RunApplyQueued, RunApplying:
		return phaseWatch(r, PhaseApply, o.ApplyJob, RunApplying)
	}
	if RunIsFinal(r.Status) {
		switch {
		case o.PlanJob.Live():
			return RunStep{Kind: StepStop, Phase: PhasePlan}
		case o.ApplyJob.Live():
			return RunStep{Kind: StepStop, Phase: PhaseApply}
		}
	}
	return RunStep{}
}

// phaseWatch follows a started phase: its job running moves a queued run
// to working; its job ending before the worker reported errors the run.
func phaseWatch(r *Run, phase string, job JobState, working string) RunStep {
	switch job {
	case JobRunning:
		if r.Status != working {
			return RunStep{Kind: StepAdvance, Status: working}
		}
	case JobDone, JobAbsent:
		return RunStep{Kind: StepFail, Message: "the " + phase + " job ended without reporting a result (see its allocation's logs in namespace " + RunNamespace + ")"}
	}
	return RunStep{}
}

// PlanResult is what a worker reports at the end of a phase.
type PlanResult struct {
	// OK is false when terraform failed; Error says why.
	OK    bool
	Error string
	// Resource counts (plan: planned; apply: applied).
	Additions, Changes, Destructions, Imports int
	// HasChanges: the plan changes resources or outputs.
	HasChanges bool
}

// RunAfterPhase is the run status a phase's result leads to.
func RunAfterPhase(r *Run, phase string, res PlanResult) string {
	switch {
	case !res.OK:
		return RunErrored
	case phase == PhaseApply:
		return RunApplied
	case r.PlanOnly || !res.HasChanges:
		return RunPlannedAndFinished
	}
	return RunPlanned
}

// The worker's environment, set by the executor on its job's task and
// read by `sched tfe-worker`.
const (
	// WorkerEnvAddress is the base URL of the API.
	WorkerEnvAddress = "SCHED_TFE_ADDRESS"
	// WorkerEnvCACert is the PEM of the CA the API's certificate is
	// signed by, when it serves HTTPS with a private CA.
	WorkerEnvCACert = "SCHED_TFE_CACERT_PEM"
	WorkerEnvRun    = "SCHED_TFE_RUN"
	WorkerEnvPhase  = "SCHED_TFE_PHASE"
	// WorkerEnvSecret is the run's worker secret, sent back as
	// WorkerSecretHeader.
	WorkerEnvSecret = "SCHED_TFE_RUN_SECRET"
	// The terraform binary: the tool version's URL (a binary or a zip
	// holding one) and its SHA-256, and its version.
	WorkerEnvTerraformURL     = "SCHED_TFE_TERRAFORM_URL"
	WorkerEnvTerraformSHA     = "SCHED_TFE_TERRAFORM_SHA256"
	WorkerEnvTerraformVersion = "SCHED_TFE_TERRAFORM_VERSION"
	// WorkerEnvDestroy and WorkerEnvNoRefresh are "1" for destroy runs
	// and runs that plan without refreshing.
	WorkerEnvDestroy   = "SCHED_TFE_DESTROY"
	WorkerEnvNoRefresh = "SCHED_TFE_NO_REFRESH"
)

// WorkerSecretHeader carries a worker's run secret on the worker
// endpoints.
const WorkerSecretHeader = "X-Sched-Run-Secret"

// WorkerPath is the path of a worker endpoint of run runID ("configuration",
// "state", "log", "result").
func WorkerPath(runID, endpoint string) string {
	return "/api/v2/runs/" + runID + "/worker/" + endpoint
}

// DefaultToolVersion is the version a run of a workspace without a
// tool version executes: the highest enabled version of versions (by its
// numbers; a version with a bundle suffix ranks below the same numbers
// without), or nil.
func DefaultToolVersion(versions []*ToolVersion) *ToolVersion {
	var best *ToolVersion
	for _, v := range versions {
		if v.Enabled && (best == nil || versionLess(best.Version, v.Version)) {
			best = v
		}
	}
	return best
}

// versionLess orders versions of the form N.N.N[-suffix].
func versionLess(a, b string) bool {
	an, as, _ := strings.Cut(a, "-")
	bn, bs, _ := strings.Cut(b, "-")
	ap, bp := strings.Split(an, "."), strings.Split(bn, ".")
	for i := 0; i < len(ap) && i < len(bp); i++ {
		x, _ := strconv.Atoi(ap[i])
		y, _ := strconv.Atoi(bp[i])
		if x != y {
			return x < y
		}
	}
	if len(ap) != len(bp) {
		return len(ap) < len(bp)
	}
	switch {
	case as == bs:
		return false
	case as == "":
		return false
	case bs == "":
		return true
	}
	return as < bs
}
