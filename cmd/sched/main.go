// Command sched is the one binary of sched: `sched agent` runs a server or
// client agent (package agent), and every other subcommand is a CLI client
// of a cluster's HTTP API (package cmd/sched/command).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/schedhq/sched/agent"
	"github.com/schedhq/sched/cmd/sched/command"
)

func main() {
	agent.RunTaskInit()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := command.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, runAgent)
	stop()
	os.Exit(code)
}
