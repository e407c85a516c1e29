package agent

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	hraft "github.com/hashicorp/raft"
)

// raft's first election at start is info; an election after a known
// leader was lost stays a warning, as does every other warning.
func TestQuietLevel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		msg   string
		args  []any
		level hclog.Level
	}{
		{"first election", startElection, []any{"last-leader-addr", hraft.ServerAddress(""), "last-leader-id", hraft.ServerID("")}, hclog.Info},
		{"leader lost", startElection, []any{"last-leader-addr", hraft.ServerAddress("10.0.0.1:4647"), "last-leader-id", hraft.ServerID("s1")}, hclog.Warn},
		{"other warning", "failed to contact", []any{"last-leader-addr", ""}, hclog.Warn},
		{"odd args", startElection, []any{"last-leader-addr"}, hclog.Info},
	} {
		if got := quietLevel(hclog.Warn, tc.msg, tc.args); got != tc.level {
			t.Errorf("%s: level %v, want %v", tc.name, got, tc.level)
		}
	}
	if got := quietLevel(hclog.Error, startElection, nil); got != hclog.Error {
		t.Errorf("an error is never demoted: got %v", got)
	}
}
