package store

import (
	"errors"
	"github.com/schedhq/sched/state"
)

// prefixField puts prefix in front of the field paths of a validation
// error, so an error about an evaluation names where it sits in the
// request. Other errors are returned as they are.
func prefixField(prefix string, err error) error {
	var v *state.ValidationError
	if !errors.As(err, &v) {
		return err
	}
	out := &state.ValidationError{Errors: make([]state.FieldError, len(v.Errors))}
	for i, e := range v.Errors {
		if e.Field != "" {
			e.Field = prefix + "." + e.Field
		} else {
			e.Field = prefix
		}
		out.Errors[i] = e
	}
	return out
}
