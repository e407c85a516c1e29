package agent

import (
	"fmt"

	"github.com/hashicorp/go-hclog"
)

// hashicorp/raft warns of things a normal start does: a server that
// starts (or restarts) knows no leader, so its first heartbeat timeout
// "starts an election". That is no cause for alarm, and an operator who
// sees a WARN on every start learns to ignore warnings. quietLevel logs
// such messages at info; the same message after a leader was known (a
// lost leader) stays a warning.

// startElection is hashicorp/raft's message when a follower's heartbeat
// timeout fires.
const startElection = "heartbeat timeout reached, starting election"

// quietLevel is the level a library's message is logged at: level,
// except for the warnings a normal start produces (above).
func quietLevel(level hclog.Level, msg string, args []any) hclog.Level {
	if level == hclog.Warn && msg == startElection && argValue(args, "last-leader-addr") == "" &&
		argValue(args, "last-leader-id") == "" {
		return hclog.Info
	}
	return level
}

// argValue is the value of key in hclog's alternating key/value args as
// printed (raft's addresses and IDs are named string types), "" when
// absent.
func argValue(args []any, key string) string {
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && k == key {
			return fmt.Sprint(args[i+1])
		}
	}
	return ""
}
