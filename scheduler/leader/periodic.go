package leader

import (
	"context"
	"errors"
	"log/slog"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// maxCatchUp bounds the scheduled times one pass walks to find a job's
// latest missed launch; a spec firing every minute covers a week.
const maxCatchUp = 7 * 24 * 60

// PeriodicLauncher launches the children of periodic jobs on their cron
// schedules, a leader service like the others.
//
// What it holds is rebuilt from state on every start: the latest launch of
// each job is in the periodic_launch table, written by the same command
// that registers the child. A launch that fell due while no leader ran
// (a failover, a restart) is made once when the next leader starts: only
// the latest missed time, never each one. The command refuses a launch
// time not after the recorded one, so two leaders, or a retry, never
// launch the same time twice.
//
// prohibit_overlap skips a launch while a child of the job is not dead;
// the skipped time is remembered in memory only, so a new leader may make
// it late, once, if the child has ended by then.
type PeriodicLauncher struct {
	store *store.Store
	raft  Raft
	log   *slog.Logger
	now   func() time.Time
	newID func() string
	run   runner
	// skipped holds, per job, the launch time prohibit_overlap skipped.
	skipped map[jobKey]time.Time
}

// NewPeriodicLauncher returns a stopped launcher.
func NewPeriodicLauncher(st *store.Store, raft Raft, log *slog.Logger, now func() time.Time, newID func() string) *PeriodicLauncher {
	return &PeriodicLauncher{store: st, raft: raft, log: log, now: now, newID: newID}
}

// Name identifies the service in logs.
func (p *PeriodicLauncher) Name() string { return "periodic-launcher" }

// Start follows the periodic jobs until ctx ends or Stop.
func (p *PeriodicLauncher) Start(ctx context.Context) error {
	p.skipped = map[jobKey]time.Time{}
	return p.run.start(ctx, p.loop)
}

// Stop ends the launcher and waits for it.
func (p *PeriodicLauncher) Stop() { p.run.stop() }

func (p *PeriodicLauncher) loop(ctx context.Context) {
	followTables(ctx, p.store, nodeFollowPace, []string{store.TableJobs}, p.pass)
}

// pass launches every periodic job that is due and returns the earliest
// next launch time (zero for none).
func (p *PeriodicLauncher) pass(ctx context.Context, ws memdb.WatchSet) time.Time {
	jobs, err := p.store.Jobs(ws, "*", "")
	if err != nil {
		p.log.Error("periodic launcher: list jobs", "error", err)
		return p.now().Add(time.Second)
	}
	var earliest time.Time
	for _, job := range jobs {
		if !job.IsPeriodic() || job.Stop {
			continue
		}
		next, err := p.launchDue(ctx, job)
		if err != nil {
			p.log.Warn("periodic launch failed", "namespace", job.Namespace, "job", job.ID, "error", err)
			next = p.now().Add(time.Second)
		}
		if !next.IsZero() && (earliest.IsZero() || next.Before(earliest)) {
			earliest = next
		}
	}
	return earliest
}

// launchDue launches job's latest missed launch, if any, and returns its
// next launch time.
func (p *PeriodicLauncher) launchDue(ctx context.Context, job *state.Job) (time.Time, error) {
	key := jobKey{job.Namespace, job.ID}
	base := time.Unix(0, job.SubmitTime)
	last, err := p.store.PeriodicLaunchByID(nil, job.Namespace, job.ID)
	if err != nil {
		return time.Time{}, err
	}
	if last != nil && last.Launch > job.SubmitTime {
		base = time.Unix(0, last.Launch)
	}
	if s, ok := p.skipped[key]; ok && s.After(base) {
		base = s
	}
	now := p.now()
	due, next, err := DueLaunch(job.Periodic, base, now)
	if err != nil || due.IsZero() {
		return next, err
	}
	if job.Periodic.ProhibitOverlap {
		running, err := p.childRunning(job)
		if err != nil {
			return time.Time{}, err
		}
		if running {
			p.skipped[key] = due
			p.log.Info("periodic launch skipped: a child still runs (prohibit_overlap)", "job", job.ID, "launch", due)
			return next, nil
		}
	}
	child := job.NewChild(state.PeriodicChildID(job.ID, due))
	nowNanos := now.UnixNano()
	eval := &state.Evaluation{
		ID: p.newID(), Namespace: child.Namespace, Priority: child.Priority, Type: child.Type,
		TriggeredBy: state.EvalTriggerPeriodicJob, JobID: child.ID, Status: state.EvalStatusPending,
		CreateTime: nowNanos, ModifyTime: nowNanos,
	}
	req := &store.PeriodicLaunchRequest{Child: child, Eval: eval, Launch: due.UnixNano(), Now: nowNanos}
	if _, err := retryWrite(ctx, p.raft, p.log, "periodic launch", store.PeriodicLaunchRequestType, req); err != nil && !errors.Is(err, state.ErrConflict) {
		return time.Time{}, err
	}
	return next, nil
}

// childRunning reports whether a child of job is not dead yet.
func (p *PeriodicLauncher) childRunning(job *state.Job) (bool, error) {
	children, err := p.store.Children(nil, job.Namespace, job.ID)
	if err != nil {
		return false, err
	}
	for _, c := range children {
		if c.Status != state.JobStatusDead {
			return true, nil
		}
	}
	return false, nil
}

// DueLaunch is the scheduling rule of periodic jobs: due is the latest
// scheduled time after base and not after now (zero when none fell due),
// and next the first scheduled time after now. Times missed before due
// are not launched: a job catches up once.
func DueLaunch(cfg *state.PeriodicConfig, base, now time.Time) (due, next time.Time, err error) {
	t, err := cfg.Next(base)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	for i := 0; !t.IsZero() && !t.After(now); i++ {
		due = t
		if i == maxCatchUp {
			// A schedule this dense and this far behind: jump to now.
			if t, err = cfg.Next(now); err != nil {
				return time.Time{}, time.Time{}, err
			}
			break
		}
		if t, err = cfg.Next(t); err != nil {
			return time.Time{}, time.Time{}, err
		}
	}
	return due, t, nil
}
