package agent

import "github.com/schedhq/sched/client/driver/nsinit"

// RunTaskInit makes this process an exec task's init when the exec
// driver started it as one (argv[0] is nsinit.Arg0), and then never
// returns; otherwise it returns at once. The sched binary calls it first
// in main, before parsing any flag: the driver re-executes the binary it
// runs from, so the binary that runs the client is the one that builds
// its tasks' roots (client/driver/nsinit).
func RunTaskInit() {
	if nsinit.Requested() {
		nsinit.Main()
	}
}
