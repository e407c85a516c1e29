package state

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// DiffType says how an object or field changed between two job versions.
type DiffType string

// Diff types, as Nomad clients expect them.
const (
	DiffTypeNone    DiffType = "None"
	DiffTypeAdded   DiffType = "Added"
	DiffTypeDeleted DiffType = "Deleted"
	DiffTypeEdited  DiffType = "Edited"
)

// JobDiff is the structured difference between two versions of a job
// (spec §2 "Diff structure"), shown by plan and by the versions endpoint.
type JobDiff struct {
	Type       DiffType
	ID         string
	Fields     []*FieldDiff
	Objects    []*ObjectDiff
	TaskGroups []*TaskGroupDiff
}

// TaskGroupDiff is the difference of one task group, matched by name.
// Updates is filled by the planner (verb to count, e.g. "create": 2), not by
// Diff.
type TaskGroupDiff struct {
	Type    DiffType
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
	Tasks   []*TaskDiff
	Updates map[string]uint64
}

// TaskDiff is the difference of one task, matched by name. Annotations are
// filled by the planner (e.g. "forces create/destroy update").
type TaskDiff struct {
	Type        DiffType
	Name        string
	Fields      []*FieldDiff
	Objects     []*ObjectDiff
	Annotations []string
}

// FieldDiff is the change of one primitive value, rendered as text: integers
// and durations (nanoseconds) in decimal, booleans as "true"/"false". An
// absent value is "". Map entries are named "Field[key]".
type FieldDiff struct {
	Type        DiffType
	Name        string
	Old, New    string
	Annotations []string
}

// ObjectDiff is the change of a nested object (a policy, a constraint, a
// service, a list of strings, a free-form config map).
type ObjectDiff struct {
	Type    DiffType
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
}

// diffSkip lists, per type, the fields a diff leaves out: bookkeeping the
// servers set, secrets, names that identify the object itself, and children
// diffed on their own (groups, tasks). A job's Update is left out because
// Canonicalize merges it into every group, where it is diffed.
var diffSkip = map[reflect.Type]map[string]bool{
	reflect.TypeFor[Job](): {
		"ID": true, "Version": true, "Status": true, "StatusDescription": true, "Stable": true,
		"SubmitTime": true, "CreateIndex": true, "ModifyIndex": true, "JobModifyIndex": true,
		"TaskGroups": true, "Update": true, "MeshToken": true, "SecretsToken": true, "SchedTokenID": true,
	},
	reflect.TypeFor[TaskGroup]():     {"Name": true, "Tasks": true},
	reflect.TypeFor[Task]():          {"Name": true},
	reflect.TypeFor[ScalingPolicy](): {"ID": true, "CreateIndex": true, "ModifyIndex": true},
}

// diffObjectNames names the objects of list and map fields, one per element.
var diffObjectNames = map[string]string{
	"Constraints":     "Constraint",
	"Affinities":      "Affinity",
	"Spreads":         "Spread",
	"Networks":        "Network",
	"ReservedPorts":   "Static Port",
	"DynamicPorts":    "Dynamic Port",
	"Services":        "Service",
	"Checks":          "Check",
	"Templates":       "Template",
	"Artifacts":       "Artifact",
	"Devices":         "Device",
	"Secrets":         "Secret",
	"VolumeMounts":    "VolumeMount",
	"Volumes":         "Volume",
	"Actions":         "Action",
	"ScalingPolicies": "ScalingPolicy",
}

// Diff compares j, the old version (nil for a job not yet registered), with
// other, the new one (nil for a removed job). Groups are matched by name,
// tasks by name within a group, named list elements (services, checks,
// ports) by name or label and other list elements by equality. With
// contextual false only changes are listed; with it true, the unchanged
// fields of the job, its groups and tasks and of every changed object are
// listed too, as type None, so a reader sees a change in its context.
// Groups and tasks are always listed, with type None when unchanged, so the
// planner can annotate each of them. The output is sorted by name.
func (j *Job) Diff(other *Job, contextual bool) (*JobDiff, error) {
	if j != nil && other != nil && j.ID != other.ID {
		return nil, Invalidf("ID", "cannot diff job %q against job %q", j.ID, other.ID)
	}
	d := differ{contextual: contextual}
	diff := &JobDiff{Type: DiffTypeNone}
	switch {
	case j == nil && other == nil:
		return diff, nil
	case j == nil:
		diff.Type, diff.ID = DiffTypeAdded, other.ID
	case other == nil:
		diff.Type, diff.ID = DiffTypeDeleted, j.ID
	default:
		diff.ID = j.ID
	}
	oldV, newV := structOf(j), structOf(other)
	diff.Fields, diff.Objects = d.whole(diff.Type).structDiff(oldV, newV)

	var oldGroups, newGroups []*TaskGroup
	if j != nil {
		oldGroups = j.TaskGroups
	}
	if other != nil {
		newGroups = other.TaskGroups
	}
	for _, name := range unionNames(oldGroups, newGroups, func(tg *TaskGroup) string { return tg.Name }) {
		tgd := d.groupDiff(name, lookupByName(oldGroups, name, groupName), lookupByName(newGroups, name, groupName))
		diff.TaskGroups = append(diff.TaskGroups, tgd)
		if tgd.Type != DiffTypeNone && diff.Type == DiffTypeNone {
			diff.Type = DiffTypeEdited
		}
	}
	if diff.Type == DiffTypeNone && (changed(diff.Fields) || len(diff.Objects) > 0) {
		diff.Type = DiffTypeEdited
	}
	return diff, nil
}

func groupName(tg *TaskGroup) string { return tg.Name }
func taskName(t *Task) string        { return t.Name }

// differ walks two values of the same type by reflection. A hand-written
// diff per type would be longer than the types themselves and would drift
// from them as fields are added; the walker picks new fields up by itself.
type differ struct {
	contextual bool
}

// whole returns the differ for an object of type t: a whole added or
// removed object lists its values, not its blanks, so context is dropped.
func (d differ) whole(t DiffType) differ {
	if t == DiffTypeAdded || t == DiffTypeDeleted {
		return differ{}
	}
	return d
}

func (d differ) groupDiff(name string, old, new *TaskGroup) *TaskGroupDiff {
	diff := &TaskGroupDiff{Type: typeOf(old != nil, new != nil), Name: name}
	diff.Fields, diff.Objects = d.whole(diff.Type).structDiff(structOf(old), structOf(new))
	var oldTasks, newTasks []*Task
	if old != nil {
		oldTasks = old.Tasks
	}
	if new != nil {
		newTasks = new.Tasks
	}
	for _, tn := range unionNames(oldTasks, newTasks, taskName) {
		ot, nt := lookupByName(oldTasks, tn, taskName), lookupByName(newTasks, tn, taskName)
		td := &TaskDiff{Type: typeOf(ot != nil, nt != nil), Name: tn}
		td.Fields, td.Objects = d.whole(td.Type).structDiff(structOf(ot), structOf(nt))
		if td.Type == DiffTypeNone && (changed(td.Fields) || len(td.Objects) > 0) {
			td.Type = DiffTypeEdited
		}
		if td.Type != DiffTypeNone && diff.Type == DiffTypeNone {
			diff.Type = DiffTypeEdited
		}
		diff.Tasks = append(diff.Tasks, td)
	}
	if diff.Type == DiffTypeNone && (changed(diff.Fields) || len(diff.Objects) > 0) {
		diff.Type = DiffTypeEdited
	}
	return diff
}

// typeOf is the diff type of an object by presence alone: None when it is
// on both sides (the caller upgrades it to Edited on finding a change).
func typeOf(old, new bool) DiffType {
	switch {
	case !old && new:
		return DiffTypeAdded
	case old && !new:
		return DiffTypeDeleted
	}
	return DiffTypeNone
}

func changed(fields []*FieldDiff) bool {
	for _, f := range fields {
		if f.Type != DiffTypeNone {
			return true
		}
	}
	return false
}

// structOf returns the struct p points to, or the zero Value for nil.
func structOf[T any](p *T) reflect.Value {
	if p == nil {
		return reflect.Value{}
	}
	return reflect.ValueOf(p).Elem()
}

// unionNames lists the names of both lists, sorted, skipping nil entries.
func unionNames[T any](a, b []*T, name func(*T) string) []string {
	var names []string
	for _, list := range [][]*T{a, b} {
		for _, x := range list {
			if x != nil && !slices.Contains(names, name(x)) {
				names = append(names, name(x))
			}
		}
	}
	slices.Sort(names)
	return names
}

func lookupByName[T any](list []*T, n string, name func(*T) string) *T {
	for _, x := range list {
		if x != nil && name(x) == n {
			return x
		}
	}
	return nil
}

// structDiff compares two structs of one type; either may be the zero Value
// (absent).
func (d differ) structDiff(old, new reflect.Value) ([]*FieldDiff, []*ObjectDiff) {
	t := typeOfValues(old, new)
	var fields []*FieldDiff
	var objects []*ObjectDiff
	skip := diffSkip[t]
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || skip[f.Name] {
			continue
		}
		ov, nv := fieldOf(old, i), fieldOf(new, i)
		fs, os := d.valueDiff(f.Name, f.Type, ov, nv)
		fields = append(fields, fs...)
		objects = append(objects, os...)
	}
	sortFields(fields)
	sortObjects(objects)
	return fields, objects
}

func typeOfValues(a, b reflect.Value) reflect.Type {
	if a.IsValid() {
		return a.Type()
	}
	return b.Type()
}

func fieldOf(v reflect.Value, i int) reflect.Value {
	if !v.IsValid() {
		return reflect.Value{}
	}
	return v.Field(i)
}

// valueDiff compares one field of type t, present on each side when its
// Value is valid.
func (d differ) valueDiff(name string, t reflect.Type, old, new reflect.Value) ([]*FieldDiff, []*ObjectDiff) {
	switch {
	case isPrimitive(t):
		return d.fields(map[string]string{name: primitive(old)}, map[string]string{name: primitive(new)}), nil
	case t.Kind() == reflect.Pointer && isPrimitive(t.Elem()):
		return d.fields(map[string]string{name: primitive(deref(old))}, map[string]string{name: primitive(deref(new))}), nil
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
		return nil, d.object(name, deref(old), deref(new))
	case t.Kind() == reflect.Struct:
		return nil, d.object(name, old, new)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return d.fields(map[string]string{name: bytesText(old)}, map[string]string{name: bytesText(new)}), nil
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return nil, d.stringSet(name, old, new)
	case t.Kind() == reflect.Slice && structElem(t.Elem()):
		return nil, d.list(name, old, new)
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String:
		return d.fields(mapEntries(name, old), mapEntries(name, new)), nil
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && structElem(t.Elem()):
		return nil, d.keyedMap(name, old, new)
	default:
		// Free-form values (driver config, multiregion, nested maps and
		// lists) flatten into one object of "key.sub[0]" fields.
		return nil, d.flatObject(name, old, new)
	}
}

func isPrimitive(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

func structElem(t reflect.Type) bool {
	return t.Kind() == reflect.Struct || (t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct)
}

// deref follows a pointer; nil or absent yields the zero Value.
func deref(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

// primitive renders a primitive value; absent is "".
func primitive(v reflect.Value) string {
	if !v.IsValid() {
		return ""
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	return fmt.Sprint(v.Interface())
}

func bytesText(v reflect.Value) string {
	if !v.IsValid() || v.Len() == 0 {
		return ""
	}
	return base64.StdEncoding.EncodeToString(v.Bytes())
}

func mapEntries(name string, v reflect.Value) map[string]string {
	out := make(map[string]string)
	if !v.IsValid() {
		return out
	}
	for it := v.MapRange(); it.Next(); {
		out[name+"["+it.Key().String()+"]"] = it.Value().String()
	}
	return out
}

// fields compares two flat name-to-text maps.
func (d differ) fields(old, new map[string]string) []*FieldDiff {
	var out []*FieldDiff
	for _, name := range unionKeys(old, new) {
		if f := fieldDiff(name, old[name], new[name], d.contextual); f != nil {
			out = append(out, f)
		}
	}
	return out
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// fieldDiff compares one rendered value; nil when unchanged and not
// contextual.
func fieldDiff(name, old, new string, contextual bool) *FieldDiff {
	f := &FieldDiff{Name: name, Old: old, New: new}
	switch {
	case old == new:
		if !contextual {
			return nil
		}
		f.Type = DiffTypeNone
	case old == "":
		f.Type = DiffTypeAdded
	case new == "":
		f.Type = DiffTypeDeleted
	default:
		f.Type = DiffTypeEdited
	}
	return f
}

// object compares two structs as one named object; nil when they are equal.
func (d differ) object(name string, old, new reflect.Value) []*ObjectDiff {
	if !old.IsValid() && !new.IsValid() {
		return nil
	}
	if old.IsValid() && new.IsValid() && reflect.DeepEqual(old.Interface(), new.Interface()) {
		return nil
	}
	o := &ObjectDiff{Type: typeOf(old.IsValid(), new.IsValid()), Name: name}
	o.Fields, o.Objects = d.whole(o.Type).structDiff(old, new)
	if o.Type == DiffTypeNone {
		if !changed(o.Fields) && len(o.Objects) == 0 {
			return nil // Only skipped fields differ.
		}
		o.Type = DiffTypeEdited
	}
	return []*ObjectDiff{o}
}

// stringSet compares lists of strings as multisets: order is not part of
// the change (datacenters, tags).
func (d differ) stringSet(name string, old, new reflect.Value) []*ObjectDiff {
	count := func(v reflect.Value) map[string]int {
		m := make(map[string]int)
		if v.IsValid() {
			for i := range v.Len() {
				m[v.Index(i).String()]++
			}
		}
		return m
	}
	oc, nc := count(old), count(new)
	o := &ObjectDiff{Type: DiffTypeEdited, Name: name}
	switch {
	case len(oc) == 0 && len(nc) == 0:
		return nil
	case len(oc) == 0:
		o.Type = DiffTypeAdded
	case len(nc) == 0:
		o.Type = DiffTypeDeleted
	}
	changes := false
	for _, s := range unionKeys(oc, nc) {
		for range min(oc[s], nc[s]) {
			if d.contextual {
				o.Fields = append(o.Fields, &FieldDiff{Type: DiffTypeNone, Name: name, Old: s, New: s})
			}
		}
		for range oc[s] - nc[s] {
			o.Fields = append(o.Fields, &FieldDiff{Type: DiffTypeDeleted, Name: name, Old: s})
			changes = true
		}
		for range nc[s] - oc[s] {
			o.Fields = append(o.Fields, &FieldDiff{Type: DiffTypeAdded, Name: name, New: s})
			changes = true
		}
	}
	if !changes {
		return nil
	}
	sortFields(o.Fields)
	return []*ObjectDiff{o}
}

// listKey is the field that identifies an element of a list of structs
// across versions, or "" when elements are matched by equality.
func listKey(t reflect.Type) string {
	for _, k := range []string{"Name", "Label"} {
		if f, ok := t.FieldByName(k); ok && f.Type.Kind() == reflect.String {
			return k
		}
	}
	return ""
}

// list compares lists of structs. Elements with a name (or port label) are
// paired by it, so an edited service is one Edited object; others are
// paired by equality, so a changed constraint is one Deleted and one Added
// object.
func (d differ) list(name string, old, new reflect.Value) []*ObjectDiff {
	objName := name
	if n, ok := diffObjectNames[name]; ok {
		objName = n
	}
	elems := func(v reflect.Value) []reflect.Value {
		var out []reflect.Value
		if v.IsValid() {
			for i := range v.Len() {
				if e := deref(v.Index(i)); e.IsValid() {
					out = append(out, e)
				}
			}
		}
		return out
	}
	oe, ne := elems(old), elems(new)
	elemType := typeOfValues(old, new).Elem()
	if elemType.Kind() == reflect.Pointer {
		elemType = elemType.Elem()
	}
	var out []*ObjectDiff
	if key := listKey(elemType); key != "" {
		// Pair the n-th element with a key on one side with the n-th
		// element with that key on the other.
		used := make([]bool, len(ne))
		for _, o := range oe {
			match := reflect.Value{}
			for i, n := range ne {
				if !used[i] && n.FieldByName(key).String() == o.FieldByName(key).String() {
					used[i], match = true, n
					break
				}
			}
			out = append(out, d.object(objName, o, match)...)
		}
		for i, n := range ne {
			if !used[i] {
				out = append(out, d.object(objName, reflect.Value{}, n)...)
			}
		}
		return out
	}
	used := make([]bool, len(ne))
	for _, o := range oe {
		found := false
		for i, n := range ne {
			if !used[i] && reflect.DeepEqual(o.Interface(), n.Interface()) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			out = append(out, d.object(objName, o, reflect.Value{})...)
		}
	}
	for i, n := range ne {
		if !used[i] {
			out = append(out, d.object(objName, reflect.Value{}, n)...)
		}
	}
	return out
}

// keyedMap compares maps of structs (group volumes) entry by entry.
func (d differ) keyedMap(name string, old, new reflect.Value) []*ObjectDiff {
	objName := name
	if n, ok := diffObjectNames[name]; ok {
		objName = n
	}
	entries := func(v reflect.Value) map[string]reflect.Value {
		m := make(map[string]reflect.Value)
		if v.IsValid() {
			for it := v.MapRange(); it.Next(); {
				m[it.Key().String()] = deref(it.Value())
			}
		}
		return m
	}
	om, nm := entries(old), entries(new)
	var out []*ObjectDiff
	for _, k := range unionKeys(om, nm) {
		out = append(out, d.object(objName, om[k], nm[k])...)
	}
	return out
}

// flatObject compares free-form values flattened to "key.sub[0]" fields.
func (d differ) flatObject(name string, old, new reflect.Value) []*ObjectDiff {
	of, nf := make(map[string]string), make(map[string]string)
	flatten("", deref(old), of)
	flatten("", deref(new), nf)
	o := &ObjectDiff{Type: DiffTypeEdited, Name: name}
	switch {
	case len(of) == 0 && len(nf) == 0:
		return nil
	case len(of) == 0:
		o.Type = DiffTypeAdded
	case len(nf) == 0:
		o.Type = DiffTypeDeleted
	}
	o.Fields = d.fields(of, nf)
	if !changed(o.Fields) {
		return nil
	}
	return []*ObjectDiff{o}
}

// flatten renders v into out under prefix: map entries as "prefix.key",
// list elements as "prefix[i]", structs by field name.
func flatten(prefix string, v reflect.Value, out map[string]string) {
	v = deref(v)
	if !v.IsValid() {
		return
	}
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch v.Kind() {
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			flatten(join(fmt.Sprint(it.Key().Interface())), it.Value(), out)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			out[prefix] = bytesText(v)
			return
		}
		for i := range v.Len() {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), v.Index(i), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				flatten(join(v.Type().Field(i).Name), v.Field(i), out)
			}
		}
	default:
		out[prefix] = primitive(v)
	}
}

func sortFields(fs []*FieldDiff) {
	slices.SortStableFunc(fs, func(a, b *FieldDiff) int {
		return cmpStrings(a.Name, b.Name, string(a.Type), string(b.Type), a.Old, b.Old, a.New, b.New)
	})
}

func sortObjects(os []*ObjectDiff) {
	slices.SortStableFunc(os, func(a, b *ObjectDiff) int {
		return cmpStrings(a.Name, b.Name, string(a.Type), string(b.Type), objectKey(a), objectKey(b))
	})
}

// objectKey renders an object's fields, to order objects of one name and
// type deterministically.
func objectKey(o *ObjectDiff) string {
	var b strings.Builder
	for _, f := range o.Fields {
		fmt.Fprintf(&b, "%s=%s>%s;", f.Name, f.Old, f.New)
	}
	for _, c := range o.Objects {
		b.WriteString(c.Name + "{" + objectKey(c) + "}")
	}
	return b.String()
}

// cmpStrings compares pairs (a1, b1, a2, b2, ...) in order.
func cmpStrings(pairs ...string) int {
	for i := 0; i+1 < len(pairs); i += 2 {
		if c := strings.Compare(pairs[i], pairs[i+1]); c != 0 {
			return c
		}
	}
	return 0
}
