package jobspec

import (
	"testing"
)

// TestRuntimeInterpolation checks that interpolations only a client or the
// scheduler can resolve reach the job as the text the user wrote, while
// var.*, local.* and functions around them are evaluated.
func TestRuntimeInterpolation(t *testing.T) {
	const decls = `variable "prefix" { default = "web" }
variable "on" { default = true }
locals { dir = "/srv" }`
	tests := []struct {
		name string
		expr string // an HCL expression, set as env "V" of the task
		want string
	}{
		{name: "attribute", expr: `"${attr.kernel.name}"`, want: "${attr.kernel.name}"},
		{name: "node", expr: `"${node.datacenter}"`, want: "${node.datacenter}"},
		{name: "meta", expr: `"${meta.rack}"`, want: "${meta.rack}"},
		{name: "sched env", expr: `"${SCHED_ALLOC_ID}"`, want: "${SCHED_ALLOC_ID}"},
		{name: "nomad env", expr: `"${NOMAD_PORT_http}"`, want: "${NOMAD_PORT_http}"},
		{name: "env index", expr: `"${env["HOME"]}"`, want: `${env["HOME"]}`},
		{name: "in text", expr: `"http://${NOMAD_ADDR_http}/health"`, want: "http://${NOMAD_ADDR_http}/health"},
		{name: "mixed with variable", expr: `"${var.prefix}-${node.unique.id}"`, want: "web-${node.unique.id}"},
		{name: "mixed with local", expr: `"${local.dir}/${NOMAD_TASK_NAME}"`, want: "/srv/${NOMAD_TASK_NAME}"},
		{name: "function of runtime value kept whole", expr: `"${upper(node.class)}"`, want: "${upper(node.class)}"},
		{name: "escaped variable is literal", expr: `"$${var.prefix}"`, want: "${var.prefix}"},
		{name: "for expression bound names evaluate",
			expr: `join(",", [for s in ["a", "b"] : "${s}-${NOMAD_ALLOC_INDEX}"])`,
			want: "a-${NOMAD_ALLOC_INDEX},b-${NOMAD_ALLOC_INDEX}"},
		{name: "inside directive body", expr: `"%{ if var.on }${node.class}%{ endif }"`, want: "${node.class}"},
		{name: "heredoc", expr: "<<EOT\n${var.prefix} ${attr.os.name}\nEOT\n", want: "web ${attr.os.name}\n"},
		{name: "list element", expr: `element(["${meta.a}", var.prefix], 0)`, want: "${meta.a}"},
		{name: "through a local", expr: `local.dir`, want: "/srv"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := decls + "\n" + jobWith("", "      env = { V = "+tt.expr+" }")
			job, err := Parse(ParseConfig{Body: []byte(src)})
			if err != nil {
				t.Fatal(err)
			}
			if got := job.TaskGroups[0].Tasks[0].Env["V"]; got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRuntimeInLocal checks that a local holding a runtime interpolation
// carries the text to its uses.
func TestRuntimeInLocal(t *testing.T) {
	src := "locals { rack = \"${meta.rack}\" }\n" + jobWith(`  constraint {
    distinct_property = local.rack
  }`, "")
	job, err := Parse(ParseConfig{Body: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	if got := job.Constraints[0].LTarget; got != "${meta.rack}" {
		t.Errorf("LTarget = %q", got)
	}
}

// TestRuntimeErrors checks the limits: a runtime name outside a string, or
// in a directive's condition, cannot be kept as text and is reported.
func TestRuntimeErrors(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want []string
	}{
		{name: "bare reference", expr: `node.class`, want: []string{"job.hcl:6:19", `"node"`}},
		{name: "directive condition", expr: `"%{ if node.x }a%{ endif }"`, want: []string{"job.hcl:6:26", `"node"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(ParseConfig{Body: []byte(jobWith("", "      env = { V = "+tt.expr+" }"))})
			assertInvalid(t, err, tt.want...)
		})
	}
}

// TestHCL1RuntimeInterpolation checks that HCL1 keeps every "${...}" as
// text, including ones with quotes inside.
func TestHCL1RuntimeInterpolation(t *testing.T) {
	src := jobWith("", `      env {
        HOME_DIR = "${env["HOME"]}"
        KERNEL   = "${attr.kernel.name}"
        ADDR     = "http://${NOMAD_ADDR_http}/x"
      }`)
	job, err := ParseHCL1("old.hcl", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"HOME_DIR": `${env["HOME"]}`,
		"KERNEL":   "${attr.kernel.name}",
		"ADDR":     "http://${NOMAD_ADDR_http}/x",
	}
	assertEqual(t, want, job.TaskGroups[0].Tasks[0].Env)
}
