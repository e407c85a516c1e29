package command

import (
	"fmt"
	"strconv"

	"github.com/schedhq/sched/state"
)

// schedulerTable is `sched operator scheduler`: the cluster's scheduler
// configuration, with Nomad's commands and flags.
func (c *operatorCLI) schedulerTable() []entry {
	return []entry{
		{"get-config", "Show the scheduler configuration", c.schedulerGetConfig, nil},
		{"set-config", "Change the scheduler configuration", c.schedulerSetConfig, nil},
	}
}

func (c *operatorCLI) schedulerGetConfig(args []string) int {
	fs, m := c.flagSet("operator scheduler get-config", "[options]",
		"Show the scheduler configuration: algorithm, preemption per scheduler, memory oversubscription, and whether the eval broker is paused or job registrations are rejected.")
	asJSON := c.outputFlags(fs, "print the configuration as JSON")
	client, code := c.parseClient(fs, m, args, 0, 0)
	if client == nil {
		return code
	}
	resp, _, err := client.Operator().SchedulerGetConfiguration(c.ctx, nil)
	if err != nil {
		return c.fail("reading the scheduler configuration", err)
	}
	if *asJSON {
		return c.printJSON(resp.SchedulerConfig)
	}
	sc := resp.SchedulerConfig
	b := strconv.FormatBool
	writeKV(c.stdout, []kv{
		{"Scheduler Algorithm", sc.SchedulerAlgorithm},
		{"Memory Oversubscription", b(sc.MemoryOversubscriptionEnabled)},
		{"Reject Job Registration", b(sc.RejectJobRegistration)},
		{"Pause Eval Broker", b(sc.PauseEvalBroker)},
	})
	fmt.Fprintln(c.stdout, "\nPreemption Config")
	p := sc.PreemptionConfig
	writeKV(c.stdout, []kv{
		{"System Scheduler Enabled", b(p.SystemSchedulerEnabled)},
		{"SysBatch Scheduler Enabled", b(p.SysBatchSchedulerEnabled)},
		{"Service Scheduler Enabled", b(p.ServiceSchedulerEnabled)},
		{"Batch Scheduler Enabled", b(p.BatchSchedulerEnabled)},
	})
	return 0
}

// optionalBool is a flag of value true or false that remembers whether
// it was given (Nomad's set-config flags: an absent one keeps the current
// value).
type optionalBool struct {
	set   bool
	value bool
}

func (o *optionalBool) String() string {
	if !o.set {
		return ""
	}
	return strconv.FormatBool(o.value)
}

func (o *optionalBool) Set(v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("%q is not true or false", v)
	}
	o.set, o.value = true, b
	return nil
}

// apply sets *dst when the flag was given.
func (o *optionalBool) apply(dst *bool) {
	if o.set {
		*dst = o.value
	}
}

func (c *operatorCLI) schedulerSetConfig(args []string) int {
	fs, m := c.flagSet("operator scheduler set-config", "[options]",
		"Change the scheduler configuration: the flags given are changed, the others kept. With -check-index the write is a check-and-set on the configuration's ModifyIndex.")
	alg := fs.String("scheduler-algorithm", "", "the node scoring algorithm: binpack or spread")
	var memOver, prBatch, prService, prSysBatch, prSystem, pause, reject optionalBool
	boolFlag := func(o *optionalBool, name, usage string) { fs.Var(o, name, usage+" (`true|false`)") }
	boolFlag(&memOver, "memory-oversubscription", "let tasks use up to memory_max while the scheduler counts memory")
	boolFlag(&prBatch, "preempt-batch-scheduler", "let batch jobs preempt lower-priority allocations")
	boolFlag(&prService, "preempt-service-scheduler", "let service jobs preempt lower-priority allocations")
	boolFlag(&prSysBatch, "preempt-sysbatch-scheduler", "let sysbatch jobs preempt lower-priority allocations")
	boolFlag(&prSystem, "preempt-system-scheduler", "let system jobs preempt lower-priority allocations")
	boolFlag(&pause, "pause-eval-broker", "stop the leader's eval broker from handing out evaluations")
	boolFlag(&reject, "reject-job-registration", "refuse job registrations, dispatches, scales and reverts of non-management tokens")
	var checkIndex optionalUint
	fs.Var(&checkIndex, "check-index", "write only if the configuration's ModifyIndex is this `index`")
	client, code := c.parseClient(fs, m, args, 0, 0)
	if client == nil {
		return code
	}
	if *alg != "" && *alg != state.SchedulerAlgorithmBinpack && *alg != state.SchedulerAlgorithmSpread {
		fmt.Fprintf(c.stderr, "Error: -scheduler-algorithm must be %q or %q, got %q\n", state.SchedulerAlgorithmBinpack, state.SchedulerAlgorithmSpread, *alg)
		return 1
	}
	cur, _, err := client.Operator().SchedulerGetConfiguration(c.ctx, nil)
	if err != nil {
		return c.fail("reading the scheduler configuration", err)
	}
	sc := cur.SchedulerConfig
	if *alg != "" {
		sc.SchedulerAlgorithm = *alg
	}
	memOver.apply(&sc.MemoryOversubscriptionEnabled)
	prBatch.apply(&sc.PreemptionConfig.BatchSchedulerEnabled)
	prService.apply(&sc.PreemptionConfig.ServiceSchedulerEnabled)
	prSysBatch.apply(&sc.PreemptionConfig.SysBatchSchedulerEnabled)
	prSystem.apply(&sc.PreemptionConfig.SystemSchedulerEnabled)
	pause.apply(&sc.PauseEvalBroker)
	reject.apply(&sc.RejectJobRegistration)
	if checkIndex.set {
		sc.ModifyIndex = checkIndex.value
		resp, err := client.Operator().SchedulerCASConfiguration(c.ctx, sc, nil)
		if err != nil {
			return c.fail("writing the scheduler configuration", err)
		}
		if !resp.Updated {
			fmt.Fprintln(c.stderr, "Scheduler configuration could not be atomically updated, please try again (ModifyIndex changed)")
			return 1
		}
	} else if _, err := client.Operator().SchedulerSetConfiguration(c.ctx, sc, nil); err != nil {
		return c.fail("writing the scheduler configuration", err)
	}
	fmt.Fprintln(c.stdout, "Scheduler configuration updated!")
	return 0
}
