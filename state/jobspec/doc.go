// Package jobspec turns a job file, written in the HCL that Nomad users
// already know, into a *state.Job.
//
// Parse reads HCL2 (hashicorp/hcl/v2) with input variables, locals and the
// usual cty functions; ParseHCL1 reads the legacy HCL1 syntax. Both front
// ends feed one schema-driven decoder, so a block means the same thing in
// either syntax and an unknown attribute or block is an error in both.
//
// The parser decides only what the file says. It fills no defaults (the
// caller runs Job.Canonicalize), so an explicit value stays distinguishable
// from an absent one. The exceptions are Nomad's own parse-time rules: an
// absent group count is 1 (or the scaling minimum), an absent periodic or
// scaling "enabled" is true, and an operator-less constraint or affinity gets
// "=". Interpolations that only a client or the scheduler can resolve, such
// as "${attr.kernel.name}", "${meta.rack}" or "${SCHED_ALLOC_ID}", are kept as
// literal text; only var.*, local.* and functions are evaluated here.
//
// Every error matches errors.Is(err, state.ErrInvalid) and names its
// position as file:line:col.
package jobspec
