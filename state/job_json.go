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
