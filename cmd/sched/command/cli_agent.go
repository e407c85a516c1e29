package command

// agentCommand hands `sched agent` to the agent runner the binary wired.
func (c *cli) agentCommand(args []string) int {
	return c.agent(c.ctx, args, c.stdout, c.stderr)
}
