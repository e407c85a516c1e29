package driver

import (
	"errors"
	"testing"
)

// An ID is claimed once: a second start of it fails, a reserved task is
// not found until it is committed, and a failed start frees the ID.
func TestTaskTable(t *testing.T) {
	var tt taskTable[int]
	if _, err := tt.get("a"); !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("get of an empty table: %v", err)
	}
	if err := tt.reserve("a"); err != nil {
		t.Fatal(err)
	}
	if err := tt.reserve("a"); !errors.Is(err, ErrTaskExists) {
		t.Fatalf("second reserve: %v, want ErrTaskExists", err)
	}
	if _, err := tt.get("a"); !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("get of a reserved ID: %v, want ErrTaskNotFound", err)
	}
	v := 7
	tt.commit("a", &v)
	if got, err := tt.get("a"); err != nil || *got != 7 {
		t.Fatalf("get after commit: %v, %v", got, err)
	}
	if err := tt.reserve("b"); err != nil {
		t.Fatal(err)
	}
	tt.commit("b", nil)
	if err := tt.reserve("b"); err != nil {
		t.Fatalf("a failed start did not free its ID: %v", err)
	}
	var seen int
	tt.locked(func(tasks map[string]*int) { seen = len(tasks) })
	if seen != 2 {
		t.Fatalf("locked saw %d entries, want 2 (a, and b reserved)", seen)
	}
}
