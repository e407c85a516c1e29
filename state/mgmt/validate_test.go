package mgmt

import (
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

func TestVersionAndTimeoutRules(t *testing.T) {
	for v, ok := range map[string]bool{
		"1.5.0": true, "0.15.4": true, "10.20.30": true, "1.6.0-beta1": true, "1.6.0-alpha20230405": true, "1.0.0-rc.1": true,
		"1.5": false, "v1.5.0": false, "1.5.0-": false, "01.5.0": false, "1.5.0+meta": false, "": false, "latest": false, "1.5.0 ": false,
	} {
		if got := ValidVersion(v) == ""; got != ok {
			t.Errorf("ValidVersion(%q) ok = %v, want %v", v, got, ok)
		}
	}
	for v, ok := range map[string]bool{
		"24h": true, "2h": true, "90m": true, "1.5h": true, "1h30m": true,
		"24": false, "0s": false, "-1h": false, "soon": false, "": false, "1d": false,
	} {
		if got := ValidTimeout(v) == ""; got != ok {
			t.Errorf("ValidTimeout(%q) ok = %v, want %v", v, got, ok)
		}
	}
	for v, ok := range map[string]bool{"a@b.c": true, "ops+x@acme.example": true, "a@": false, "@b": false, "a b@c.d": false, "": false} {
		if got := ValidEmail(v) == ""; got != ok {
			t.Errorf("validEmail(%q) ok = %v, want %v", v, got, ok)
		}
	}
}

func TestNewMgmtIDAndTime(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID(PrefixProject)
		v := &state.ValidationError{}
		CheckID(v, "id", PrefixProject, id)
		if v.Err() != nil || len(id) != len(PrefixProject)+16 || strings.ContainsAny(id[4:], "0OIl") {
			t.Fatalf("NewMgmtID = %q (%v)", id, v.Err())
		}
		if seen[id] {
			t.Fatalf("NewMgmtID repeated %q", id)
		}
		seen[id] = true
	}
	local := time.Date(2024, 1, 2, 3, 4, 5, 678901234, time.FixedZone("X", 3600))
	if got := Time(local); !got.Equal(local.Truncate(time.Millisecond)) || got.Location() != time.UTC || got.Nanosecond() != 678000000 {
		t.Errorf("MgmtTime = %v", got)
	}
}

// The patch validators give every problem at once, each with its pointer,
// so a 422 lists them all.
func TestPatchValidationListsEveryProblem(t *testing.T) {
	p := ProjectPatch{Name: mgPtr("x"), Description: mgPtr(strings.Repeat("d", 300)), AutoDestroyActivityDuration: mgPtr("0d")}
	want := []string{"/data/attributes/name", "/data/attributes/description", "/data/attributes/auto-destroy-activity-duration"}
	if got := mgFields(p.Validate(true)); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("project problems = %v, want %v", got, want)
	}
	tv := ToolVersionPatch{}
	want = []string{"/data/attributes/version", "/data/attributes/url", "/data/attributes/sha"}
	if got := mgFields(tv.Validate(true)); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("tool version problems = %v, want %v", got, want)
	}
	if err := tv.Validate(false); err != nil {
		t.Errorf("an empty update is valid, got %v", err)
	}
	wp := WorkspacePatch{}
	if got := mgFields(wp.Validate(true)); len(got) != 1 || got[0] != "/data/attributes/name" {
		t.Errorf("workspace without name: %v", got)
	}
	tp := TeamPatch{Name: mgPtr("a b"), Visibility: mgPtr("hidden")}
	if got := mgFields(tp.Validate(false)); len(got) != 2 {
		t.Errorf("team problems = %v", got)
	}
}
