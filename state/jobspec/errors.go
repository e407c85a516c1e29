package jobspec

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/schedhq/sched/state"
)

// diagsError turns the error diagnostics of a parse into one
// *state.ValidationError, each entry's field being the file:line:col of the
// problem. Errors are sorted by position so that a file with several
// problems reports them in reading order, whatever order maps were walked in.
func diagsError(diags hcl.Diagnostics) error {
	if !diags.HasErrors() {
		return nil
	}
	errs := slices.Clone(diags)
	slices.SortStableFunc(errs, func(a, b *hcl.Diagnostic) int {
		ra, rb := subject(a), subject(b)
		return cmp.Or(
			cmp.Compare(ra.Filename, rb.Filename),
			cmp.Compare(ra.Start.Byte, rb.Start.Byte),
		)
	})
	v := &state.ValidationError{}
	seen := map[string]bool{}
	for _, d := range errs {
		if d.Severity != hcl.DiagError {
			continue
		}
		field := ""
		if d.Subject != nil {
			field = pos(*d.Subject)
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		if d.Summary == "Unknown variable" && !strings.Contains(d.Detail, `"var"`) && !strings.Contains(d.Detail, `"local"`) {
			// Most likely a runtime value written as a bare expression.
			msg += ` Only var.* and local.* are known when a job is parsed; a runtime value ` +
				`such as ${node.class} must be written inside a string: "${node.class}".`
		}
		// The same expression can be evaluated twice (a local read by
		// two others); say each problem once.
		if key := field + "\x00" + msg; !seen[key] {
			seen[key] = true
			v.Add(field, "%s", msg)
		}
	}
	return v
}

// subject is d's position, or the zero range for problems that have none
// (a -var flag), which therefore sort first.
func subject(d *hcl.Diagnostic) hcl.Range {
	if d.Subject == nil {
		return hcl.Range{}
	}
	return *d.Subject
}

// pos formats the start of r as file:line:col, the form every message of
// this package uses.
func pos(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// problem builds an error diagnostic at rng.
func problem(rng hcl.Range, summary, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  rng.Ptr(),
	}
}
