package scheduler

import (
	"hash/fnv"
	"reflect"
	"slices"
	"time"

	"github.com/schedhq/sched/state"
)

// withDefaults fills the Config's nil fields.
func (c Config) withDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.NewID == nil {
		c.NewID = state.NewID
	}
	return c
}

// seedOf derives the seed of an eval's random source from its ID, so the
// node order and dynamic ports of a run are random across evals but
// reproducible for one eval.
func seedOf(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// tasksUpdated reports whether moving the allocations of group from
// oldJob to newJob needs a destructive update (stop the old allocation,
// place a new one) rather than an in-place one (the running allocation
// just takes the new job).
//
// Destructive: the group appears or disappears; its networks, ephemeral
// disk, volumes, constraints, affinities, spreads, meta or shutdown delay
// change; the job's constraints, affinities, spreads or meta change; a
// task appears or disappears, or a task's driver, user, config, env,
// resources, artifacts, templates, constraints, affinities, lifecycle,
// meta, kill timeout or signal, shutdown delay, volume mounts, secrets,
// log config, leader flag, kind or dispatch payload change.
//
// In place: anything else, notably the count, the update, restart,
// reschedule and migrate policies, services and checks, and actions. The
// client applies those to the running allocation.
func tasksUpdated(oldJob, newJob *state.Job, group string) bool {
	if oldJob == nil || newJob == nil {
		return true
	}
	a, b := oldJob.LookupTaskGroup(group), newJob.LookupTaskGroup(group)
	if a == nil || b == nil {
		return true
	}
	if !same(oldJob.Constraints, newJob.Constraints) || !same(oldJob.Affinities, newJob.Affinities) ||
		!same(oldJob.Spreads, newJob.Spreads) || !sameMap(oldJob.Meta, newJob.Meta) {
		return true
	}
	if !same(a.Networks, b.Networks) || !same(a.EphemeralDisk, b.EphemeralDisk) ||
		!sameMap(a.Volumes, b.Volumes) || !same(a.Constraints, b.Constraints) ||
		!same(a.Affinities, b.Affinities) || !same(a.Spreads, b.Spreads) ||
		!sameMap(a.Meta, b.Meta) || !same(a.ShutdownDelay, b.ShutdownDelay) {
		return true
	}
	if len(a.Tasks) != len(b.Tasks) {
		return true
	}
	for _, at := range a.Tasks {
		bt := b.LookupTask(at.Name)
		if bt == nil || taskUpdated(at, bt) {
			return true
		}
	}
	return false
}

// taskUpdated reports whether a task changed in a way its driver cannot
// take without restarting it elsewhere; see tasksUpdated.
func taskUpdated(a, b *state.Task) bool {
	return a.Driver != b.Driver || a.User != b.User ||
		!sameMap(a.Config, b.Config) || !sameMap(a.Env, b.Env) ||
		!same(a.Resources, b.Resources) || !same(a.Artifacts, b.Artifacts) ||
		!same(a.Templates, b.Templates) || !same(a.Constraints, b.Constraints) ||
		!same(a.Affinities, b.Affinities) || !same(a.Lifecycle, b.Lifecycle) ||
		!sameMap(a.Meta, b.Meta) || a.KillTimeout != b.KillTimeout ||
		a.KillSignal != b.KillSignal || a.ShutdownDelay != b.ShutdownDelay ||
		!same(a.VolumeMounts, b.VolumeMounts) || !same(a.Secrets, b.Secrets) ||
		!same(a.LogConfig, b.LogConfig) || a.Leader != b.Leader || a.Kind != b.Kind ||
		!same(a.DispatchPayload, b.DispatchPayload)
}

// same compares two values deeply, taking a nil and an empty slice as
// equal: a job read back from the log may carry either.
func same[T any](a, b T) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Kind() == reflect.Slice && va.Len() == 0 && vb.Len() == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// sameMap compares two maps deeply, taking nil and empty as equal.
func sameMap[K comparable, V any](a, b map[K]V) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// sortedKeys returns the keys of m in order, so that anything built from a
// map is deterministic.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
