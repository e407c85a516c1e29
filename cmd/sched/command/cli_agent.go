package command

// runAgent hands `sched agent` to the agent runner the binary wired.
func (c *cli) runAgent(args []string) int {
	return c.agent(c.ctx, args, c.stdout, c.stderr)
}
