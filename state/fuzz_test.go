package state

import (
	"encoding/json"
	"runtime/debug"
	"testing"
)

// FuzzJobDecodeValidate: any JSON a client sends as a job decodes,
// canonicalizes, validates and is checked against the limits without a
// panic, and a job that passes has no free-form value nested deeper than
// the limit.
func FuzzJobDecodeValidate(f *testing.F) {
	f.Add([]byte(`{"ID":"web","TaskGroups":[{"Name":"g","Count":2,"Tasks":[{"Name":"t","Driver":"raw_exec","Config":{"command":"true","args":["a",{"b":[1]}]}}]}]}`))
	f.Add([]byte(`{"ID":"a/b","Meta":{"":"x"},"TaskGroups":[null,{"Name":"..","Tasks":[null,{"Name":"."}]}]}`))
	f.Add([]byte(`{"ID":"p","Periodic":{"Spec":"*/5 * * * *"},"ParameterizedJob":{},"TaskGroups":[{"Count":-1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var job Job
		if json.Unmarshal(data, &job) != nil {
			return
		}
		job.Canonicalize()
		if job.Validate() != nil {
			return
		}
		_ = JobLimits{}.CheckCounts(&job)
		for _, tg := range job.TaskGroups {
			for _, task := range tg.Tasks {
				if d := NestingDepth(task.Config, MaxNestingDepth); d > MaxNestingDepth {
					t.Fatalf("a valid job's task config nests %d deep", d)
				}
			}
		}
	})
}

// FuzzParsePolicyRules: no policy text crashes the parser.
func FuzzParsePolicyRules(f *testing.F) {
	f.Add(`namespace "default" { policy = "read" }` + "\n" + `namespace "prod-*" { capabilities = ["submit-job"] }` + "\nnode { policy = \"write\" }\n")
	f.Add(`{"namespace": {"default": {"policy": "write"}}, "agent": {"policy": "read"}}`)
	f.Add(`operator { policy = "deny" } namespace "*" { policy = "scale" }`)
	f.Fuzz(func(t *testing.T, rules string) {
		// Well over what an accepted policy needs (the parser takes up to
		// 4 KB a level), and under what one slipping past the depth check
		// with a level a byte would: that overflow is a crash the fuzzer
		// reports.
		defer debug.SetMaxStack(debug.SetMaxStack(16 << 20))
		_, _ = ParsePolicyRules(rules)
	})
}
