package main

import (
	"context"
	"io"

	"github.com/schedhq/sched/agent"
)

// runAgent runs `sched agent`. The agent owns its flags, configuration and
// signal handling; the CLI only hands it the words after "agent".
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return agent.RunCommand(ctx, args, stdout, stderr)
}
