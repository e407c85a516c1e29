package state

import "reflect"

// SpecChanged reports whether other differs from j in what the user
// declared. Fields the servers stamp or derive (Version, Status,
// StatusDescription, Stable, SubmitTime and the indexes) are ignored, so
// re-registering an unchanged job neither creates a version nor disturbs
// its allocations.
func (j *Job) SpecChanged(other *Job) bool {
	if j == nil || other == nil {
		return j != other
	}
	a, b := *j, *other
	for _, c := range []*Job{&a, &b} {
		c.Version = 0
		c.Status = ""
		c.StatusDescription = ""
		c.Stable = false
		c.SubmitTime = 0
		c.CreateIndex = 0
		c.ModifyIndex = 0
		c.JobModifyIndex = 0
	}
	return !reflect.DeepEqual(a, b)
}
