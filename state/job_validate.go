package state

import (
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/cronexpr"
)

// MaxJobIDLength bounds a job ID: it appears in allocation names, paths on
// clients and every index key.
const MaxJobIDLength = 128

// ServiceCheckGRPC is the gRPC health check type.
const ServiceCheckGRPC = "grpc"

// Constraint operands beyond plain comparisons.
const (
	ConstraintDistinctHosts    = "distinct_hosts"
	ConstraintDistinctProperty = "distinct_property"
	ConstraintRegex            = "regexp"
	ConstraintVersion          = "version"
	ConstraintSemver           = "semver"
	ConstraintSetContains      = "set_contains"
	ConstraintSetContainsAll   = "set_contains_all"
	ConstraintSetContainsAny   = "set_contains_any"
	ConstraintAttributeIsSet   = "is_set"
	ConstraintAttributeNotSet  = "is_not_set"
)

// namespaceNameRe is the shape of a namespace name: it appears in URLs and
// ACL rules, so it is kept to characters that need no escaping there.
var namespaceNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// ValidateNamespaceName reports whether name can name a namespace: 1 to 128
// letters, digits, '-' or '_'. The error names the field "Name".
func ValidateNamespaceName(name string) error {
	if msg := namespaceNameProblem(name); msg != "" {
		return Invalidf("Name", "%s", msg)
	}
	return nil
}

func namespaceNameProblem(name string) string {
	if !namespaceNameRe.MatchString(name) {
		return fmt.Sprintf("%q is not a valid namespace name: use 1 to 128 letters, digits, '-' or '_'", name)
	}
	return ""
}

// Validate checks a canonicalized job and returns a *ValidationError that
// lists every problem, each under a dotted path relative to the job such as
// "TaskGroups[0].Tasks[1].Driver", or nil. Reporting everything at once
// spares users a submit-fix-submit loop. The error matches ErrInvalid.
func (j *Job) Validate() error {
	if j == nil {
		return Invalidf("", "job is required")
	}
	v := &validator{errs: &ValidationError{}, job: j}
	v.validateJob()
	return v.errs.Err()
}

// validator collects the problems of one job.
type validator struct {
	errs *ValidationError
	job  *Job
}

func (v *validator) add(path, format string, args ...any) {
	v.errs.Add(path, format, args...)
}

// at joins a field onto a path; the empty path is the job itself.
func at(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// idx is the path of element i of list field of path.
func idx(path, field string, i int) string {
	return fmt.Sprintf("%s[%d]", at(path, field), i)
}

// nonNegative flags every (field name, integer or duration) pair of p whose
// value is below zero.
func (v *validator) nonNegative(p string, pairs ...any) {
	for i := 0; i+1 < len(pairs); i += 2 {
		if reflect.ValueOf(pairs[i+1]).Int() < 0 {
			v.add(at(p, pairs[i].(string)), "must not be negative")
		}
	}
}

func oneOf(s string, allowed ...string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	return false
}

func (v *validator) validateJob() {
	j := v.job
	switch {
	case j.ID == "":
		v.add("ID", "missing job ID")
	case strings.Contains(j.ID, " "):
		v.add("ID", "job ID contains a space")
	case strings.ContainsRune(j.ID, 0):
		v.add("ID", "job ID contains a null character")
	case strings.Contains(j.ID, "/"):
		// A job's ID is a path segment of every /v1/job/:job_id endpoint.
		v.add("ID", "job ID %q contains a '/'", j.ID)
	case strings.ContainsFunc(j.ID, isControl):
		v.add("ID", "job ID contains a control character")
	case len(j.ID) > MaxJobIDLength:
		v.add("ID", "job ID is longer than %d characters", MaxJobIDLength)
	}
	if j.Name == "" {
		v.add("Name", "missing job name")
	}
	if j.Namespace == "" {
		v.add("Namespace", "missing namespace")
	} else if msg := namespaceNameProblem(j.Namespace); msg != "" {
		v.add("Namespace", "%s", msg)
	}
	if j.Region == "" {
		v.add("Region", "missing region")
	}
	if !oneOf(j.Type, JobTypeService, JobTypeBatch, JobTypeSystem, JobTypeSysBatch) {
		v.add("Type", "invalid job type %q: want service, batch, system or sysbatch", j.Type)
	}
	if j.Priority < MinJobPriority || j.Priority > MaxJobPriority {
		v.add("Priority", "priority %d is outside %d to %d", j.Priority, MinJobPriority, MaxJobPriority)
	}
	if len(j.Datacenters) == 0 {
		v.add("Datacenters", "at least one datacenter is required")
	}
	for i, dc := range j.Datacenters {
		if dc == "" {
			v.add(idx("", "Datacenters", i), "datacenter name is empty")
		}
	}
	v.stringMap("Meta", j.Meta, false)
	v.freeForm("Multiregion", j.Multiregion)
	v.constraints("", j.Constraints)
	v.affinities("", j.Affinities)
	v.spreads("", j.Spreads)
	if j.Update != nil {
		v.update("Update", j.Update, false)
	}
	v.periodic()
	v.parameterized()

	if len(j.TaskGroups) == 0 {
		v.add("TaskGroups", "at least one task group is required")
	}
	seen := make(map[string]int)
	for i, tg := range j.TaskGroups {
		p := idx("", "TaskGroups", i)
		if tg == nil {
			v.add(p, "task group is null")
			continue
		}
		if tg.Name != "" {
			if first, dup := seen[tg.Name]; dup {
				v.add(at(p, "Name"), "task group %q is also defined at TaskGroups[%d]", tg.Name, first)
			} else {
				seen[tg.Name] = i
			}
		}
		v.group(p, tg)
	}
}

func (v *validator) periodic() {
	j := v.job
	p := j.Periodic
	if p == nil {
		return
	}
	if j.IsParameterized() {
		v.add("Periodic", "a job cannot be both periodic and parameterized")
	}
	if !p.Enabled {
		return
	}
	if j.Type != JobTypeBatch && j.Type != JobTypeSysBatch {
		v.add("Periodic", "periodic jobs must be batch or sysbatch, not %s", j.Type)
	}
	if p.SpecType != PeriodicSpecCron {
		v.add("Periodic.SpecType", "unknown spec type %q: want cron", p.SpecType)
	}
	switch {
	case p.Spec == "" && len(p.Specs) == 0:
		v.add("Periodic.Spec", "an enabled periodic block needs a cron spec")
	case p.Spec != "" && len(p.Specs) > 0:
		v.add("Periodic.Specs", "give either Spec or Specs, not both")
	}
	if p.Spec != "" {
		if _, err := cronexpr.Parse(p.Spec); err != nil {
			v.add("Periodic.Spec", "invalid cron spec %q: %v", p.Spec, err)
		}
	}
	for i, s := range p.Specs {
		if _, err := cronexpr.Parse(s); err != nil {
			v.add(idx("Periodic", "Specs", i), "invalid cron spec %q: %v", s, err)
		}
	}
	if p.TimeZone != "" {
		if _, err := time.LoadLocation(p.TimeZone); err != nil {
			v.add("Periodic.TimeZone", "unknown time zone %q", p.TimeZone)
		}
	}
}

func (v *validator) parameterized() {
	j := v.job
	pj := j.ParameterizedJob
	if pj == nil {
		return
	}
	if j.Type != JobTypeBatch && j.Type != JobTypeSysBatch {
		v.add("ParameterizedJob", "parameterized jobs must be batch or sysbatch, not %s", j.Type)
	}
	if !oneOf(pj.Payload, DispatchPayloadOptional, DispatchPayloadRequired, DispatchPayloadForbidden) {
		v.add("ParameterizedJob.Payload", "invalid payload requirement %q: want optional, required or forbidden", pj.Payload)
	}
	required := make(map[string]bool, len(pj.MetaRequired))
	for _, k := range pj.MetaRequired {
		required[k] = true
	}
	for i, k := range pj.MetaOptional {
		if required[k] {
			v.add(idx("ParameterizedJob", "MetaOptional", i), "meta key %q is both required and optional", k)
		}
	}
}

func (v *validator) group(p string, tg *TaskGroup) {
	j := v.job
	if tg.Name == "" {
		v.add(at(p, "Name"), "missing task group name")
	} else if msg := nameProblem("task group", tg.Name); msg != "" {
		v.add(at(p, "Name"), "%s", msg)
	}
	v.stringMap(at(p, "Meta"), tg.Meta, false)
	if tg.Count < 0 {
		v.add(at(p, "Count"), "count %d must not be negative", tg.Count)
	} else if (j.Type == JobTypeSystem || j.Type == JobTypeSysBatch) && tg.Count > 1 {
		v.add(at(p, "Count"), "%s jobs run one allocation per node: count must be 0 or 1, not %d", j.Type, tg.Count)
	}
	v.constraints(p, tg.Constraints)
	v.affinities(p, tg.Affinities)
	v.spreads(p, tg.Spreads)
	if tg.RestartPolicy != nil {
		v.restart(at(p, "RestartPolicy"), tg.RestartPolicy)
	}
	if tg.ReschedulePolicy != nil {
		if j.Type == JobTypeSystem || j.Type == JobTypeSysBatch {
			v.add(at(p, "ReschedulePolicy"), "%s jobs run on every node and cannot be rescheduled", j.Type)
		} else {
			v.reschedule(at(p, "ReschedulePolicy"), tg.ReschedulePolicy)
		}
	}
	if m := tg.Migrate; m != nil {
		mp := at(p, "Migrate")
		v.nonNegative(mp, "MaxParallel", m.MaxParallel)
		v.healthCheck(mp, m.HealthCheck, m.MinHealthyTime, m.HealthyDeadline)
	}
	if tg.Update != nil {
		v.update(at(p, "Update"), tg.Update, j.Type == JobTypeService)
	}
	if d := tg.EphemeralDisk; d != nil {
		v.nonNegative(at(p, "EphemeralDisk"), "SizeMB", d.SizeMB)
	}
	v.nonNegative(p, "MaxClientDisconnect", deref0(tg.MaxClientDisconnect), "ShutdownDelay", deref0(tg.ShutdownDelay),
		"StopAfterClientDisconnect", deref0(tg.StopAfterClientDisconnect))
	if s := tg.Scaling; s != nil {
		v.scaling(at(p, "Scaling"), s, tg.Count)
	}
	for _, name := range slices.Sorted(maps.Keys(tg.Volumes)) {
		vol := tg.Volumes[name]
		vp := fmt.Sprintf("%s[%s]", at(p, "Volumes"), name)
		switch {
		case vol == nil:
			v.add(vp, "volume is null")
		case !oneOf(vol.Type, "host", "csi"):
			v.add(at(vp, "Type"), "invalid volume type %q: want host or csi", vol.Type)
		case vol.Source == "":
			v.add(at(vp, "Source"), "missing volume source")
		}
	}

	v.ports(p, tg)
	v.services(p, tg)

	if len(tg.Tasks) == 0 {
		v.add(at(p, "Tasks"), "at least one task is required")
	}
	seen := make(map[string]int)
	leaders := 0
	for i, t := range tg.Tasks {
		tp := idx(p, "Tasks", i)
		if t == nil {
			v.add(tp, "task is null")
			continue
		}
		if t.Name != "" {
			if first, dup := seen[t.Name]; dup {
				v.add(at(tp, "Name"), "task %q is also defined at Tasks[%d]", t.Name, first)
			} else {
				seen[t.Name] = i
			}
		}
		if t.Leader {
			leaders++
			if leaders == 2 {
				v.add(at(tp, "Leader"), "only one task of a group may be the leader")
			}
		}
		v.task(tp, tg, t)
	}
}

func (v *validator) task(p string, tg *TaskGroup, t *Task) {
	switch {
	case t.Name == "":
		v.add(at(p, "Name"), "missing task name")
	case nameProblem("task", t.Name) != "":
		v.add(at(p, "Name"), "%s", nameProblem("task", t.Name))
	}
	v.stringMap(at(p, "Meta"), t.Meta, false)
	v.stringMap(at(p, "Env"), t.Env, true)
	v.freeForm(at(p, "Config"), t.Config)
	v.freeForm(at(p, "CSIPluginConfig"), t.CSIPluginConfig)
	if t.Driver == "" {
		v.add(at(p, "Driver"), "missing driver")
	}
	v.nonNegative(p, "KillTimeout", t.KillTimeout, "ShutdownDelay", t.ShutdownDelay)
	v.constraints(p, t.Constraints)
	v.affinities(p, t.Affinities)
	if t.Resources != nil {
		v.resources(at(p, "Resources"), t.Resources)
	}
	if t.RestartPolicy != nil {
		v.restart(at(p, "RestartPolicy"), t.RestartPolicy)
	}
	if l := t.Lifecycle; l != nil && !oneOf(l.Hook, TaskLifecycleHookPrestart, TaskLifecycleHookPoststart, TaskLifecycleHookPoststop) {
		v.add(at(p, "Lifecycle.Hook"), "invalid lifecycle hook %q: want prestart, poststart or poststop", l.Hook)
	}
	if lc := t.LogConfig; lc != nil {
		lp := at(p, "LogConfig")
		if lc.MaxFiles < 1 {
			v.add(at(lp, "MaxFiles"), "keep at least 1 log file")
		}
		if lc.MaxFileSizeMB < 1 {
			v.add(at(lp, "MaxFileSizeMB"), "log files must be at least 1 MB")
		}
		if d := tg.EphemeralDisk; d != nil && !lc.Disabled && lc.MaxFiles > 0 && lc.MaxFileSizeMB > 0 &&
			lc.MaxFiles*lc.MaxFileSizeMB >= d.SizeMB {
			v.add(lp, "logs of up to %d MB do not fit the group's %d MB ephemeral disk", lc.MaxFiles*lc.MaxFileSizeMB, d.SizeMB)
		}
	}
	for i, tmpl := range t.Templates {
		v.template(idx(p, "Templates", i), tmpl)
	}
	for i, a := range t.Artifacts {
		ap := idx(p, "Artifacts", i)
		switch {
		case a == nil:
			v.add(ap, "artifact is null")
		case a.GetterSource == "":
			v.add(at(ap, "GetterSource"), "missing artifact source")
		case !oneOf(a.GetterMode, "", "any", "file", "dir"):
			v.add(at(ap, "GetterMode"), "invalid getter mode %q: want any, file or dir", a.GetterMode)
		}
	}
	if dp := t.DispatchPayload; dp != nil {
		if !relativeInside(dp.File) {
			v.add(at(p, "DispatchPayload.File"), "payload file %q must be a path inside the task directory", dp.File)
		}
	}
	for i, m := range t.VolumeMounts {
		mp := idx(p, "VolumeMounts", i)
		switch {
		case m == nil:
			v.add(mp, "volume mount is null")
		case tg.Volumes[m.Volume] == nil:
			v.add(at(mp, "Volume"), "volume %q is not requested by the group", m.Volume)
		case m.Destination == "":
			v.add(at(mp, "Destination"), "missing mount destination")
		}
	}
	names := make(map[string]bool)
	for i, a := range t.Actions {
		ap := idx(p, "Actions", i)
		switch {
		case a == nil:
			v.add(ap, "action is null")
		case a.Name == "":
			v.add(at(ap, "Name"), "missing action name")
		case names["action "+a.Name]:
			v.add(at(ap, "Name"), "duplicate action %q", a.Name)
		case a.Command == "":
			v.add(at(ap, "Command"), "missing action command")
		}
		if a != nil {
			names["action "+a.Name] = true
		}
	}
	for i, s := range t.Secrets {
		sp := idx(p, "Secrets", i)
		switch {
		case s == nil:
			v.add(sp, "secret is null")
		case s.Name == "":
			v.add(at(sp, "Name"), "missing secret name")
		case names["secret "+s.Name]:
			v.add(at(sp, "Name"), "duplicate secret %q", s.Name)
		case s.Path == "":
			v.add(at(sp, "Path"), "missing secret path")
		}
		if s != nil {
			v.freeForm(at(sp, "Config"), s.Config)
		}
		if s != nil {
			names["secret "+s.Name] = true
		}
	}
	for i, s := range t.ScalingPolicies {
		if s == nil {
			v.add(idx(p, "ScalingPolicies", i), "scaling policy is null")
			continue
		}
		if s.Min > s.Max {
			v.add(at(idx(p, "ScalingPolicies", i), "Min"), "min %d is above max %d", s.Min, s.Max)
		}
	}
}

// deref0 is *d, or 0 for nil.
func deref0(d *time.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return *d
}

// relativeInside reports whether path stays inside the directory it is
// relative to, so a job cannot write outside its task directory.
func relativeInside(path string) bool {
	if path == "" || filepath.IsAbs(path) {
		return false
	}
	clean := filepath.Clean(path)
	return clean != ".." && !strings.HasPrefix(clean, "../")
}

func (v *validator) resources(p string, r *Resources) {
	switch {
	case r.CPU < 0:
		v.add(at(p, "CPU"), "CPU must not be negative")
	case r.Cores < 0:
		v.add(at(p, "Cores"), "cores must not be negative")
	case r.CPU > 0 && r.Cores > 0:
		v.add(at(p, "Cores"), "ask for either CPU or Cores, not both")
	case r.CPU < 1 && r.Cores == 0:
		v.add(at(p, "CPU"), "CPU must be at least 1 MHz")
	}
	if r.MemoryMB < 10 {
		v.add(at(p, "MemoryMB"), "memory must be at least 10 MB, not %d", r.MemoryMB)
	}
	if r.MemoryMaxMB != 0 && r.MemoryMaxMB < r.MemoryMB {
		v.add(at(p, "MemoryMaxMB"), "memory max %d MB is below memory %d MB", r.MemoryMaxMB, r.MemoryMB)
	}
	v.nonNegative(p, "DiskMB", r.DiskMB, "IOPS", r.IOPS)
	for i, d := range r.Devices {
		dp := idx(p, "Devices", i)
		if d == nil {
			v.add(dp, "device is null")
			continue
		}
		if d.Name == "" {
			v.add(at(dp, "Name"), "missing device name")
		}
		if d.Count == 0 {
			v.add(at(dp, "Count"), "ask for at least one device")
		}
		v.constraints(dp, d.Constraints)
		v.affinities(dp, d.Affinities)
	}
}

func (v *validator) restart(p string, r *RestartPolicy) {
	if !oneOf(r.Mode, RestartPolicyModeDelay, RestartPolicyModeFail) {
		v.add(at(p, "Mode"), "invalid restart mode %q: want delay or fail", r.Mode)
	}
	v.nonNegative(p, "Attempts", r.Attempts, "Delay", r.Delay)
	if r.Interval < 0 || (r.Attempts > 0 && r.Interval == 0) {
		v.add(at(p, "Interval"), "restart attempts need a positive interval to count them in")
	}
}

func (v *validator) reschedule(p string, r *ReschedulePolicy) {
	if !oneOf(r.DelayFunction, DelayFunctionConstant, DelayFunctionExponential, DelayFunctionFibonacci) {
		v.add(at(p, "DelayFunction"), "invalid delay function %q: want constant, exponential or fibonacci", r.DelayFunction)
	}
	v.nonNegative(p, "Attempts", r.Attempts, "Delay", r.Delay, "Interval", r.Interval, "MaxDelay", r.MaxDelay)
	switch {
	case r.Unlimited && r.Attempts > 0:
		v.add(at(p, "Attempts"), "an unlimited policy takes no attempts limit")
	case !r.Unlimited && r.Attempts > 0 && r.Interval == 0:
		v.add(at(p, "Interval"), "limited attempts need a positive interval to count them in")
	}
	if r.DelayFunction != DelayFunctionConstant && r.MaxDelay > 0 && r.MaxDelay < r.Delay {
		v.add(at(p, "MaxDelay"), "max delay %s is below delay %s", r.MaxDelay, r.Delay)
	}
}

// update checks an update strategy. Only a service group's strategy is
// checked in full: Canonicalize fills its health fields, while a job's
// strategy and other groups' may leave blanks that are not used.
func (v *validator) update(p string, u *UpdateStrategy, full bool) {
	v.nonNegative(p, "MaxParallel", u.MaxParallel, "Canary", u.Canary, "Stagger", u.Stagger,
		"ProgressDeadline", u.ProgressDeadline)
	if u.Canary > 0 && v.job.Type != JobTypeService {
		v.add(at(p, "Canary"), "canaries are only for service jobs")
	}
	if !full {
		v.nonNegative(p, "MinHealthyTime", u.MinHealthyTime, "HealthyDeadline", u.HealthyDeadline)
		if u.HealthCheck != "" && !oneOf(u.HealthCheck, UpdateHealthCheckChecks, UpdateHealthCheckTaskStates, UpdateHealthCheckManual) {
			v.add(at(p, "HealthCheck"), "invalid health check %q: want checks, task_states or manual", u.HealthCheck)
		}
		return
	}
	v.healthCheck(p, u.HealthCheck, u.MinHealthyTime, u.HealthyDeadline)
	if u.ProgressDeadline != 0 && u.HealthyDeadline >= u.ProgressDeadline {
		v.add(at(p, "HealthyDeadline"), "healthy deadline %s must be below progress deadline %s", u.HealthyDeadline, u.ProgressDeadline)
	}
}

// healthCheck checks the health fields shared by update and migrate.
func (v *validator) healthCheck(p, mode string, minHealthy, deadline time.Duration) {
	if !oneOf(mode, UpdateHealthCheckChecks, UpdateHealthCheckTaskStates, UpdateHealthCheckManual) {
		v.add(at(p, "HealthCheck"), "invalid health check %q: want checks, task_states or manual", mode)
	}
	v.nonNegative(p, "MinHealthyTime", minHealthy)
	if deadline <= 0 {
		v.add(at(p, "HealthyDeadline"), "healthy deadline must be positive")
	} else if minHealthy >= deadline {
		v.add(at(p, "MinHealthyTime"), "min healthy time %s must be below healthy deadline %s", minHealthy, deadline)
	}
}

func (v *validator) scaling(p string, s *ScalingPolicy, count int) {
	v.nonNegative(p, "Min", s.Min, "Max", s.Max)
	v.freeForm(at(p, "Policy"), s.Policy)
	if s.Min > s.Max {
		v.add(at(p, "Min"), "min %d is above max %d", s.Min, s.Max)
	} else if int64(count) < s.Min || int64(count) > s.Max {
		v.add(at(p, "Max"), "group count %d is outside the scaling range %d to %d", count, s.Min, s.Max)
	}
}

func (v *validator) template(p string, t *Template) {
	if t == nil {
		v.add(p, "template is null")
		return
	}
	if t.SourcePath == "" && t.EmbeddedTmpl == "" {
		v.add(at(p, "SourcePath"), "give a source path or an embedded template")
	}
	if t.DestPath == "" {
		v.add(at(p, "DestPath"), "missing destination path")
	}
	if !oneOf(t.ChangeMode, TemplateChangeModeNoop, TemplateChangeModeRestart, TemplateChangeModeSignal, TemplateChangeModeScript) {
		v.add(at(p, "ChangeMode"), "invalid change mode %q: want noop, restart, signal or script", t.ChangeMode)
	}
	if t.ChangeMode == TemplateChangeModeSignal && t.ChangeSignal == "" {
		v.add(at(p, "ChangeSignal"), "change mode signal needs a signal")
	}
	v.nonNegative(p, "Splay", t.Splay)
	if t.Perms != "" {
		if _, err := strconv.ParseUint(t.Perms, 8, 12); err != nil {
			v.add(at(p, "Perms"), "permissions %q are not an octal file mode", t.Perms)
		}
	}
}
