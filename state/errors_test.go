package state

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestInvalidFieldsThroughWrapping(t *testing.T) {
	var v ValidationError
	v.Add("Job.ID", "missing")
	v.Add("Job.TaskGroups[0].Count", "negative")
	err := fmt.Errorf("register: %w", v.Err())
	if got := InvalidFields(err); !slices.Equal(got, []string{"Job.ID", "Job.TaskGroups[0].Count"}) {
		t.Errorf("InvalidFields = %q", got)
	}
	if got := InvalidFields(errors.New("plain")); got != nil {
		t.Errorf("InvalidFields of a plain error = %q, want nil", got)
	}
}
