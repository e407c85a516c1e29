package client

import (
	"time"

	"github.com/schedhq/sched/state"
)

// Deployment health: an allocation placed by a deployment tells the
// servers whether it became healthy. Its group's update block says how:
//
//   - health_check "task_states": every task that should be running
//     (main tasks and sidecars) runs;
//   - "checks" (the default): that, and every service check passes (the
//     services manager's Health; an allocation without services needs
//     none);
//   - "manual": the client reports nothing.
//
// Healthy once that has held for MinHealthyTime without a restart;
// unhealthy when a task fails or HealthyDeadline passes first. The
// verdict is reported once per deployment, with the allocation's status:
// an allocation updated in place joins the new version's deployment, and
// unless the servers already counted it healthy (it was running), it is
// judged again from then on.

// watchHealth starts the health watcher for the allocation's deployment
// when it has none for it yet, ending the watcher of a previous
// deployment and forgetting that deployment's verdict. It is called when
// the allocation starts and on every update from the servers.
func (ar *allocRunner) watchHealth() {
	ar.mu.Lock()
	dep := ar.a.DeploymentID
	if dep == ar.healthFor {
		ar.mu.Unlock()
		return
	}
	if ar.healthStop != nil {
		close(ar.healthStop)
		ar.healthStop = nil
	}
	if ar.healthFor != "" {
		// The verdict was the old deployment's: reported again with the
		// next status it would count in the new one.
		ar.health = nil
	}
	ar.healthFor = dep
	if dep == "" {
		ar.mu.Unlock()
		return
	}
	stop := make(chan struct{})
	ar.healthStop = stop
	ar.mu.Unlock()
	ar.goTracked(func() { ar.healthLoop(dep, stop) })
}

// healthLoop decides the allocation's health in deployment dep, until it
// has a verdict or stop is closed. It runs in its own goroutine.
func (ar *allocRunner) healthLoop(dep string, stop <-chan struct{}) {
	a, tg := ar.alloc(), ar.group()
	if a.DeploymentID != dep || tg == nil || tg.Update == nil || tg.Update.HealthCheck == state.UpdateHealthCheckManual {
		return
	}
	if a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
		return // decided before a restart of the client
	}
	u := tg.Update
	c := ar.c
	deadline := time.NewTimer(max(u.HealthyDeadline, time.Millisecond))
	defer deadline.Stop()
	var since time.Time
	var restarts uint64
	for {
		ok, failed, r := ar.healthNow(u.HealthCheck)
		now := c.now()
		switch {
		case failed:
			ar.setHealth(dep, false, now)
			return
		case ar.terminal():
			return // finished without failing: nothing to say
		case !ok || r != restarts:
			since, restarts = time.Time{}, r
		case since.IsZero():
			since = now
		}
		var wake <-chan time.Time
		var minTimer *time.Timer
		if !since.IsZero() {
			left := u.MinHealthyTime - now.Sub(since)
			if left <= 0 {
				ar.setHealth(dep, true, now)
				return
			}
			minTimer = time.NewTimer(left)
			wake = minTimer.C
		}
		var svc <-chan struct{}
		if w, isW := c.services.(interface{ Watch(string) <-chan struct{} }); isW && u.HealthCheck != state.UpdateHealthCheckTaskStates {
			svc = w.Watch(ar.id)
		}
		done := false
		select {
		case <-ar.healthKick:
		case <-svc:
		case <-wake:
		case <-deadline.C:
			ar.setHealth(dep, false, c.now())
			done = true
		case <-stop:
			done = true
		case <-ar.stopCh:
			done = true
		case <-ar.ctx.Done():
			done = true
		}
		if minTimer != nil {
			minTimer.Stop()
		}
		if done {
			return
		}
	}
}

// healthNow says whether the allocation is healthy right now, whether it
// can no longer become healthy (a task failed), and the total restarts.
func (ar *allocRunner) healthNow(check string) (ok, failed bool, restarts uint64) {
	ok = true
	for _, t := range ar.tasks {
		ts := t.snapshot().State
		restarts += ts.Restarts
		if ts.Failed {
			return false, true, restarts
		}
		if t.lc == lcPoststop || (t.lc != lcMain && !t.sidecar) {
			continue
		}
		if ts.State != state.TaskStateRunning {
			ok = false
		}
	}
	if ok && check != state.UpdateHealthCheckTaskStates && ar.hasServices() {
		ok, _ = ar.c.services.Health(ar.id)
	}
	return ok, false, restarts
}

// hasServices reports whether the group or a task declares services.
func (ar *allocRunner) hasServices() bool {
	if ar.c.services == nil {
		return false
	}
	tg := ar.group()
	if len(tg.Services) > 0 {
		return true
	}
	for _, t := range tg.Tasks {
		if len(t.Services) > 0 {
			return true
		}
	}
	return false
}

// setHealth records the verdict in deployment dep and reports it, unless
// the allocation has moved to another deployment meanwhile.
func (ar *allocRunner) setHealth(dep string, healthy bool, now time.Time) {
	ar.mu.Lock()
	if ar.healthFor != dep {
		ar.mu.Unlock()
		return
	}
	ar.health = &state.AllocDeploymentStatus{Healthy: &healthy, Timestamp: now}
	ar.mu.Unlock()
	ar.report()
}
