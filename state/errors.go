package state

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Wrap them with %w; the HTTP layer maps them to status
// codes with errors.Is, so a meaning survives forwarding and wrapping.
var (
	// ErrNotFound: the named object does not exist (404).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a check-and-set failed or the write conflicts with the
	// current state (409).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the input is malformed or breaks a rule (400).
	ErrInvalid = errors.New("invalid")
)

// FieldError is one problem with one field of the input.
type FieldError struct {
	// Field is a dotted path into the input, e.g. "Job.TaskGroups[0].Count".
	Field   string
	Message string
}

func (e FieldError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// ValidationError lists every problem found with an input. It matches
// ErrInvalid under errors.Is.
type ValidationError struct {
	Errors []FieldError
}

// Add records a problem with field.
func (v *ValidationError) Add(field, format string, args ...any) {
	v.Errors = append(v.Errors, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Err returns v when it holds problems, nil otherwise.
func (v *ValidationError) Err() error {
	if v == nil || len(v.Errors) == 0 {
		return nil
	}
	return v
}

func (v *ValidationError) Error() string {
	msgs := make([]string, len(v.Errors))
	for i, e := range v.Errors {
		msgs[i] = e.Error()
	}
	if len(msgs) == 1 {
		return msgs[0]
	}
	return fmt.Sprintf("%d errors: %s", len(msgs), strings.Join(msgs, "; "))
}

// Is makes errors.Is(v, ErrInvalid) true.
func (v *ValidationError) Is(target error) bool { return target == ErrInvalid }

// InvalidFields lists the field paths a validation error in err's chain
// names, in order; nil when err holds no *ValidationError.
func InvalidFields(err error) []string {
	var v *ValidationError
	if !errors.As(err, &v) {
		return nil
	}
	out := make([]string, 0, len(v.Errors))
	for _, f := range v.Errors {
		out = append(out, f.Field)
	}
	return out
}

// Invalidf returns an ErrInvalid error naming field.
func Invalidf(field, format string, args ...any) error {
	v := &ValidationError{}
	v.Add(field, format, args...)
	return v
}

// NotFoundf returns an error wrapping ErrNotFound.
func NotFoundf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrNotFound)
}

// Conflictf returns an error wrapping ErrConflict.
func Conflictf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrConflict)
}

// ErrACLTokenNotFound is returned by ResolveToken for a secret that names
// no token, or a token that has expired. /v1 answers it with 403 (as Nomad
// does); the management API answers 401.
var ErrACLTokenNotFound = errors.New("ACL token not found")

// IsRefusal reports whether err is the state machine refusing a command
// (invalid, not found, a conflict): retrying the same command would get
// the same answer, unlike a lost leadership or a timeout.
func IsRefusal(err error) bool {
	return errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict)
}
