package state

import "encoding/json"

// MaxParallelUnset is the MaxParallel of an update block decoded from JSON
// without one (or with null): the int field cannot otherwise tell absent
// from 0. Canonicalize replaces it as Nomad's API canonicalization does: a
// job's block gets 1, a group's gets the job block's (1 when the job has
// none). An explicit 0 stays 0, which is how a job turns deployments off.
// It survives a JSON round trip (the CLI decodes a JSON job file and sends
// it on), and a stored job never holds it.
const MaxParallelUnset = -1

// UnmarshalJSON decodes an update block, marking an absent or null
// MaxParallel as MaxParallelUnset.
func (u *UpdateStrategy) UnmarshalJSON(b []byte) error {
	type plain UpdateStrategy
	var p struct {
		plain
		MaxParallel *int
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*u = UpdateStrategy(p.plain)
	u.MaxParallel = MaxParallelUnset
	if p.MaxParallel != nil {
		u.MaxParallel = *p.MaxParallel
	}
	return nil
}

// UnmarshalJSON decodes a periodic block; an absent or null Enabled is
// true, as Nomad's API canonicalization makes it (Nomad's client sends a
// block without it), and only an explicit false turns the schedule off.
func (p *PeriodicConfig) UnmarshalJSON(b []byte) error {
	type plain PeriodicConfig
	var w struct {
		plain
		Enabled *bool
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = PeriodicConfig(w.plain)
	p.Enabled = w.Enabled == nil || *w.Enabled
	return nil
}

// UnmarshalJSON decodes a scaling block; an absent or null Enabled is
// true, as for PeriodicConfig.
func (s *ScalingPolicy) UnmarshalJSON(b []byte) error {
	type plain ScalingPolicy
	var w struct {
		plain
		Enabled *bool
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*s = ScalingPolicy(w.plain)
	s.Enabled = w.Enabled == nil || *w.Enabled
	return nil
}
