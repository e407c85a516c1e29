// Package e2e holds black-box tests of real sched processes: the binary is
// built once, agents are started the way a user starts them (a config file
// and a data dir), and tests talk to them only over HTTP through http/api
// or by running the CLI.
package e2e
