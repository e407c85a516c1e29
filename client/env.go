package client

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/schedhq/sched/state"
)

// envInput is what a task's environment is built from.
type envInput struct {
	Alloc *state.Allocation
	Group *state.TaskGroup
	Task  *state.Task
	Node  *state.Node
	// Region of the client.
	Region string
	// IP is the node's default address for ports; HostNetworkIPs maps a
	// host network name to its address.
	IP             string
	HostNetworkIPs map[string]string
	// Dirs as the task sees them.
	AllocDir, TaskDir, LocalDir, SecretsDir string
}

// allocIndex returns N of an allocation named "<job>.<group>[N]", or 0.
func allocIndex(name string) int {
	rest, ok := strings.CutSuffix(name, "]")
	if !ok {
		return 0
	}
	i := strings.LastIndexByte(rest, '[')
	if i < 0 || i == len(rest)-1 {
		return 0
	}
	digits := rest[i+1:]
	for j := 0; j < len(digits); j++ {
		if digits[j] < '0' || digits[j] > '9' {
			return 0
		}
	}
	n, _ := strconv.Atoi(digits)
	return n
}

// envName turns a label or meta key into a variable-name suffix: every
// character that is not a letter, digit or underscore becomes '_'.
func envName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, s)
}

// buildEnv returns the task's environment: the SCHED_* variables (each
// under its NOMAD_* name too, env_nomad.go), then the task's Env with
// ${...} interpolated against them and the node.
//
// It runs at every task start (a dev agent starting a thousand
// allocations spent a tenth of its CPU here), so it sets both names of a
// variable at once into a map sized up front, and interpolates the
// task's Env against the map before writing into it instead of against a
// copy.
//
// It also runs on the task runner's goroutine, whose stack grows to what
// the deepest call needs and stays so: ports, meta and the task's env are
// set by functions of their own, called only when there are any, and
// setBoth is not inlined (at each of two dozen calls its temporaries took
// stack slots of their own). The frame went from 1,552 to 616 bytes, and
// allocPorts' 904 are taken only with ports; in profiles of three fresh
// agents' first count=1000 runs the stack growth went from 140 to 80 ms.
func buildEnv(in *envInput) map[string]string {
	a, t := in.Alloc, in.Task
	cpu, mem := 0, 0
	if t.Resources != nil {
		cpu, mem = t.Resources.CPU, t.Resources.MemoryMB
	}
	var taskNets []*state.NetworkResource
	if ar := a.AllocatedResources; ar != nil {
		if tr := ar.Tasks[t.Name]; tr != nil {
			cpu, mem, taskNets = tr.CPU, tr.MemoryMB, tr.Networks
		}
	}
	var ports []port
	if hasPorts(a, taskNets) {
		ports = allocPorts(a, taskNets)
	}
	// Meta: the task's over the group's over the job's, each key as given
	// and upper-cased.
	var jobMeta, groupMeta map[string]string
	if a.Job != nil {
		jobMeta = a.Job.Meta
	}
	if in.Group != nil {
		groupMeta = in.Group.Meta
	}
	var meta map[string]string
	if len(jobMeta)+len(groupMeta)+len(t.Meta) > 0 {
		meta = make(map[string]string, len(jobMeta)+len(groupMeta)+len(t.Meta))
		maps.Copy(meta, jobMeta)
		maps.Copy(meta, groupMeta)
		maps.Copy(meta, t.Meta)
	}

	env := make(map[string]string, 2*(20+4*len(ports)+2*len(meta))+len(t.Env))
	set := func(sched, nomad, v string) { setBoth(env, sched, nomad, v) }
	set("SCHED_ALLOC_ID", "NOMAD_ALLOC_ID", a.ID)
	set("SCHED_ALLOC_NAME", "NOMAD_ALLOC_NAME", a.Name)
	set("SCHED_ALLOC_INDEX", "NOMAD_ALLOC_INDEX", strconv.Itoa(allocIndex(a.Name)))
	set("SCHED_JOB_ID", "NOMAD_JOB_ID", a.JobID)
	set("SCHED_TASK_NAME", "NOMAD_TASK_NAME", t.Name)
	set("SCHED_GROUP_NAME", "NOMAD_GROUP_NAME", a.TaskGroup)
	set("SCHED_NAMESPACE", "NOMAD_NAMESPACE", a.Namespace)
	set("SCHED_REGION", "NOMAD_REGION", in.Region)
	set("SCHED_ALLOC_DIR", "NOMAD_ALLOC_DIR", in.AllocDir)
	set("SCHED_TASK_DIR", "NOMAD_TASK_DIR", in.LocalDir)
	set("SCHED_SECRETS_DIR", "NOMAD_SECRETS_DIR", in.SecretsDir)
	if in.Node != nil {
		set("SCHED_DC", "NOMAD_DC", in.Node.Datacenter)
		set("SCHED_NODE_ID", "NOMAD_NODE_ID", in.Node.ID)
		set("SCHED_NODE_NAME", "NOMAD_NODE_NAME", in.Node.Name)
	}
	if j := a.Job; j != nil {
		set("SCHED_JOB_NAME", "NOMAD_JOB_NAME", j.Name)
		if j.ParentID != "" {
			set("SCHED_JOB_PARENT_ID", "NOMAD_JOB_PARENT_ID", j.ParentID)
		}
	}
	set("SCHED_CPU_LIMIT", "NOMAD_CPU_LIMIT", strconv.Itoa(cpu))
	set("SCHED_MEMORY_LIMIT", "NOMAD_MEMORY_LIMIT", strconv.Itoa(mem))
	if mx := memoryMaxOf(a, t); mx > 0 {
		set("SCHED_MEMORY_MAX_LIMIT", "NOMAD_MEMORY_MAX_LIMIT", strconv.Itoa(mx)) // memory oversubscription
	}

	if len(ports) > 0 {
		setPortVars(env, ports, in)
	}
	if len(meta) > 0 {
		setMetaVars(env, meta)
	}
	if len(t.Env) > 0 {
		setTaskEnv(env, t.Env, in.Node)
	}
	return env
}

// setBoth sets a variable under both its names.
//
//go:noinline
func setBoth(env map[string]string, sched, nomad, v string) {
	env[sched], env[nomad] = v, v
}

// setAs sets SCHED_<name> and NOMAD_<name>.
func setAs(env map[string]string, name, v string) {
	env[schedEnvPrefix+name], env[nomadEnvPrefix+name] = v, v
}

// setPortVars sets each port's PORT_, HOST_PORT_, IP_ and ADDR_
// variables.
func setPortVars(env map[string]string, ports []port, in *envInput) {
	for _, p := range ports {
		ip := p.HostIP
		if ip == "" {
			ip = in.IP
			if hn := in.HostNetworkIPs[p.hostNetwork]; hn != "" {
				ip = hn
			}
		}
		l := envName(p.Label)
		v := strconv.Itoa(p.Value)
		setAs(env, "PORT_"+l, v)
		setAs(env, "HOST_PORT_"+l, v)
		setAs(env, "IP_"+l, ip)
		setAs(env, "ADDR_"+l, net.JoinHostPort(ip, v))
	}
}

// setMetaVars sets META_<key> for each meta key, as given and upper-cased.
func setMetaVars(env map[string]string, meta map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		n := envName(k)
		setAs(env, "META_"+n, meta[k])
		setAs(env, "META_"+strings.ToUpper(n), meta[k])
	}
}

// setTaskEnv sets the task's env, each value interpolated against the
// variables set before, none against another of the task's: it computes
// them all, then sets them.
func setTaskEnv(env, taskEnv map[string]string, node *state.Node) {
	keys := slices.Sorted(maps.Keys(taskEnv))
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = interpolate(taskEnv[k], env, node)
	}
	for i, k := range keys {
		env[k] = vals[i]
	}
}

// withTemplateEnv returns env with tmpl, the variables of the task's env
// templates (template { env = true }), merged over it. As in Nomad, they
// override everything buildEnv computed: the task's env block and the
// SCHED_* variables alike, so an env template can supply what the job
// cannot know (a secret, a value read from a file). They are taken as
// rendered, without ${...} interpolation, and the driver config is
// interpolated against the merged environment. env is not modified.
func withTemplateEnv(env, tmpl map[string]string) map[string]string {
	if len(tmpl) == 0 {
		return env
	}
	out := maps.Clone(env)
	maps.Copy(out, tmpl)
	return out
}

// port is a granted port with the host network it asked for.
type port struct {
	state.AllocatedPort
	hostNetwork string
}

// hasPorts reports whether the allocation or the task has a network or
// a port, that is whether allocPorts has anything to list.
func hasPorts(a *state.Allocation, taskNets []*state.NetworkResource) bool {
	if len(taskNets) > 0 {
		return true
	}
	ar := a.AllocatedResources
	return ar != nil && (len(ar.Shared.Networks) > 0 || len(ar.Shared.Ports) > 0)
}

// allocPorts lists the group's ports and the task's own.
func allocPorts(a *state.Allocation, taskNets []*state.NetworkResource) []port {
	var out []port
	seen := map[string]bool{}
	add := func(nets []*state.NetworkResource) {
		for _, n := range nets {
			if n == nil {
				continue
			}
			for _, ps := range [][]state.Port{n.ReservedPorts, n.DynamicPorts} {
				for _, p := range ps {
					if seen[p.Label] {
						continue
					}
					seen[p.Label] = true
					out = append(out, port{state.AllocatedPort{Label: p.Label, Value: p.Value, To: p.To, HostIP: n.IP}, p.HostNetwork})
				}
			}
		}
	}
	if ar := a.AllocatedResources; ar != nil {
		add(ar.Shared.Networks)
		for _, p := range ar.Shared.Ports {
			if !seen[p.Label] {
				seen[p.Label] = true
				out = append(out, port{AllocatedPort: p})
			}
		}
	}
	add(taskNets)
	return out
}

// interpolate replaces ${name} in s: a variable of env, ${node.unique.id},
// ${node.unique.name}, ${node.datacenter}, ${node.class}, ${node.pool},
// ${attr.<key>} and ${meta.<key>} of the node, or ${env.<name>}. A reference
// to anything else is left as written, so a mistake shows in the task.
func interpolate(s string, env map[string]string, node *state.Node) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		name := s[i+2 : i+2+j]
		b.WriteString(s[:i])
		if v, ok := lookupVar(strings.TrimSpace(name), env, node); ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+3+j])
		}
		s = s[i+3+j:]
	}
}

func lookupVar(name string, env map[string]string, node *state.Node) (string, bool) {
	if v, ok := env[name]; ok {
		return v, true
	}
	if strings.HasPrefix(name, "env.") {
		v, ok := env[name[len("env."):]]
		return v, ok
	}
	if node == nil {
		return "", false
	}
	switch name {
	case "node.unique.id":
		return node.ID, true
	case "node.unique.name":
		return node.Name, true
	case "node.datacenter":
		return node.Datacenter, true
	case "node.class":
		return node.NodeClass, true
	case "node.pool":
		return node.NodePool, true
	}
	if k, ok := strings.CutPrefix(name, "attr."); ok {
		v, ok := node.Attributes[k]
		return v, ok
	}
	if k, ok := strings.CutPrefix(name, "meta."); ok {
		v, ok := node.Meta[k]
		return v, ok
	}
	return "", false
}

// interpolateConfig returns a copy of a driver config with every string
// (in nested lists and maps too) interpolated.
func interpolateConfig(cfg map[string]any, env map[string]string, node *state.Node) map[string]any {
	if cfg == nil {
		return nil
	}
	return interpolateValue(cfg, env, node).(map[string]any)
}

func interpolateValue(v any, env map[string]string, node *state.Node) any {
	switch x := v.(type) {
	case string:
		return interpolate(x, env, node)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = interpolateValue(e, env, node)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = interpolate(e, env, node)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = interpolateValue(e, env, node)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(x))
		for i, e := range x {
			out[i] = interpolateValue(e, env, node).(map[string]any)
		}
		return out
	}
	return v
}
