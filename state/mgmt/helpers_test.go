package mgmt

import (
	"github.com/schedhq/sched/state"
)

// mgPtr returns a pointer to v.
func mgPtr[T any](v T) *T { return &v }

// mgFields returns the fields a validation error names.
func mgFields(err error) []string { return state.InvalidFields(err) }
