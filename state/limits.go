package state

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Limits that hold for every job, whatever the servers' configuration.
// They keep one request from costing a server more than a bounded amount
// of memory or stack, and every value in the log decodable by every server
// (the log's decoder refuses values nested deeper than 1024).
const (
	// MaxNestingDepth bounds how deeply a free-form value (a task's driver
	// Config, a scaling Policy, Multiregion, …) may nest maps and lists.
	MaxNestingDepth = 64
	// MaxMapBytes bounds the keys and values of one string map (Meta,
	// Env, …) together.
	MaxMapBytes = 64 << 10
	// MaxMapKeys bounds the entries of one string map.
	MaxMapKeys = 1024
)

// Defaults of JobLimits, used where a field is zero.
const (
	DefaultMaxGroupCount = 10_000
	DefaultMaxJobCount   = 100_000
	DefaultMaxJobBytes   = 4 << 20
)

// JobLimits are the servers' configurable bounds on a job (the server
// block's max_group_count, max_job_count and max_job_size). Zero fields
// mean the defaults above.
type JobLimits struct {
	// MaxGroupCount bounds each group's Count.
	MaxGroupCount int
	// MaxJobCount bounds the sum of the groups' counts: the allocations
	// one evaluation of the job may have to place.
	MaxJobCount int
	// MaxJobBytes bounds the job's JSON encoding.
	MaxJobBytes int
}

// WithDefaults returns l with its zero fields set to the defaults.
func (l JobLimits) WithDefaults() JobLimits {
	if l.MaxGroupCount <= 0 {
		l.MaxGroupCount = DefaultMaxGroupCount
	}
	if l.MaxJobCount <= 0 {
		l.MaxJobCount = DefaultMaxJobCount
	}
	if l.MaxJobBytes <= 0 {
		l.MaxJobBytes = DefaultMaxJobBytes
	}
	return l
}

// CheckCounts returns a *ValidationError naming every group whose Count is
// above MaxGroupCount, and the job when the counts add up to more than
// MaxJobCount, or nil.
func (l JobLimits) CheckCounts(j *Job) error {
	l = l.WithDefaults()
	v := &ValidationError{}
	total := 0
	for i, tg := range j.TaskGroups {
		if tg == nil {
			continue
		}
		if tg.Count > l.MaxGroupCount {
			v.Add(fmt.Sprintf("TaskGroups[%d].Count", i), "count %d is above the limit of %d per group (server max_group_count)", tg.Count, l.MaxGroupCount)
		}
		if tg.Count > 0 {
			total += min(tg.Count, l.MaxJobCount+1) // no overflow
		}
	}
	if total > l.MaxJobCount {
		v.Add("TaskGroups", "the groups' counts add up to more than the limit of %d allocations per job (server max_job_count)", l.MaxJobCount)
	}
	return v.Err()
}

// TotalCount is the sum of the job's group counts: how many allocations
// one evaluation of it may place.
func (j *Job) TotalCount() int {
	total := 0
	for _, tg := range j.TaskGroups {
		if tg != nil && tg.Count > 0 {
			total += tg.Count
		}
	}
	return total
}

// NestingDepth returns how deeply v nests maps and lists (a scalar is 0,
// a flat map 1), counting no further than limit+1, so that a hostile value
// costs no more than limit levels of recursion.
func NestingDepth(v any, limit int) int {
	if limit < 0 {
		return 1
	}
	deepest := 0
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			deepest = max(deepest, NestingDepth(e, limit-1))
		}
	case []any:
		for _, e := range x {
			deepest = max(deepest, NestingDepth(e, limit-1))
		}
	case []map[string]any: // as HCL decodes blocks
		for _, e := range x {
			deepest = max(deepest, NestingDepth(e, limit-1))
		}
	default:
		return 0
	}
	return deepest + 1
}

// freeForm checks a free-form value's nesting depth.
func (v *validator) freeForm(path string, value map[string]any) {
	if value == nil {
		return
	}
	if d := NestingDepth(value, MaxNestingDepth); d > MaxNestingDepth {
		v.add(path, "nested more than %d levels deep (limit %d)", MaxNestingDepth, MaxNestingDepth)
	}
}

// stringMap checks a string map's size and keys: at most MaxMapKeys
// entries and MaxMapBytes of keys and values, no key empty or holding a
// NUL, and, for an environment, no '=' in a key (it could not round-trip
// through a process's environment).
func (v *validator) stringMap(path string, m map[string]string, env bool) {
	if len(m) == 0 {
		return
	}
	if len(m) > MaxMapKeys {
		v.add(path, "%d entries is above the limit of %d", len(m), MaxMapKeys)
		return
	}
	size := 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		size += len(k) + len(m[k])
		switch {
		case k == "":
			v.add(path, "a key is empty")
		case strings.ContainsRune(k, 0):
			v.add(fmt.Sprintf("%s[%q]", path, k), "key contains a null character")
		case env && strings.Contains(k, "="):
			v.add(fmt.Sprintf("%s[%q]", path, k), "environment variable names must not contain '='")
		}
	}
	if size > MaxMapBytes {
		v.add(path, "%d bytes of keys and values is above the limit of %d", size, MaxMapBytes)
	}
}

// nameProblem explains why name cannot name a task or group, whose names
// become directory names on clients and parts of allocation names; "" when
// it can.
func nameProblem(kind, name string) string {
	switch {
	case name == "." || name == "..":
		return fmt.Sprintf("%s name %q would escape the allocation directory", kind, name)
	case strings.ContainsAny(name, `/\`):
		return fmt.Sprintf("%s name %q contains a path separator", kind, name)
	case strings.ContainsFunc(name, isControl):
		return fmt.Sprintf("%s name %q contains a control character", kind, name)
	}
	return ""
}

// isControl reports whether r is an ASCII control character.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// JSONDepthOffset scans data, without recursion, and returns the 1-based
// byte offset at which its objects and arrays nest deeper than max, or 0
// when they do not. It does not check that data is JSON (the decoder that
// follows does), and brackets inside strings do not count. Request bodies
// and JSON:API documents are measured with it before a decoder recurses.
func JSONDepthOffset(data []byte, max int) int {
	depth, inString, escaped := 0, false, false
	for i, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return i + 1
			}
		case (c == '}' || c == ']') && depth > 0:
			depth--
		}
	}
	return 0
}
