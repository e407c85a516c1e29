package command

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/schedhq/sched/state"
)

// diffMarker is the prefix of a changed line: what a reader of a unified
// diff expects, with "+/-" for an edit in place.
func diffMarker(t state.DiffType) string {
	switch t {
	case state.DiffTypeAdded:
		return "+ "
	case state.DiffTypeDeleted:
		return "- "
	case state.DiffTypeEdited:
		return "+/- "
	}
	return ""
}

// writeJobDiff prints d as an indented tree: the job's fields and objects,
// then each group with its fields, objects and tasks.
func writeJobDiff(w io.Writer, d *state.JobDiff) {
	if d.Type == state.DiffTypeNone && len(d.Fields) == 0 && len(d.Objects) == 0 && len(d.TaskGroups) == 0 {
		fmt.Fprintln(w, "No changes")
		return
	}
	fmt.Fprintf(w, "%sJob: %q\n", diffMarker(d.Type), d.ID)
	writeFieldsAndObjects(w, 1, d.Fields, d.Objects)
	for _, g := range d.TaskGroups {
		if g.Type == state.DiffTypeNone && len(g.Fields) == 0 && len(g.Objects) == 0 && !tasksChanged(g.Tasks) {
			continue
		}
		fmt.Fprintf(w, "%sTask Group: %q%s\n", diffMarker(g.Type), g.Name, updatesNote(g.Updates))
		writeFieldsAndObjects(w, 1, g.Fields, g.Objects)
		for _, t := range g.Tasks {
			if t.Type == state.DiffTypeNone && len(t.Fields) == 0 && len(t.Objects) == 0 {
				continue
			}
			note := ""
			if len(t.Annotations) > 0 {
				note = " (" + strings.Join(t.Annotations, ", ") + ")"
			}
			fmt.Fprintf(w, "  %sTask: %q%s\n", diffMarker(t.Type), t.Name, note)
			writeFieldsAndObjects(w, 2, t.Fields, t.Objects)
		}
	}
}

func tasksChanged(tasks []*state.TaskDiff) bool {
	for _, t := range tasks {
		if t.Type != state.DiffTypeNone || len(t.Fields) > 0 || len(t.Objects) > 0 {
			return true
		}
	}
	return false
}

// updatesNote summarises the planner's verbs for a group ("1 create, 2
// in-place update"), empty when there are none.
func updatesNote(u map[string]uint64) string {
	if len(u) == 0 {
		return ""
	}
	var parts []string
	for _, verb := range slices.Sorted(maps.Keys(u)) {
		if u[verb] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", u[verb], verb))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func writeFieldsAndObjects(w io.Writer, depth int, fields []*state.FieldDiff, objects []*state.ObjectDiff) {
	indent := strings.Repeat("  ", depth)
	for _, f := range fields {
		fmt.Fprintf(w, "%s%s%s: %s\n", indent, diffMarker(f.Type), f.Name, fieldChange(f))
	}
	for _, o := range objects {
		fmt.Fprintf(w, "%s%s%s {\n", indent, diffMarker(o.Type), o.Name)
		writeFieldsAndObjects(w, depth+1, o.Fields, o.Objects)
		fmt.Fprintf(w, "%s}\n", indent)
	}
}

func fieldChange(f *state.FieldDiff) string {
	var s string
	switch f.Type {
	case state.DiffTypeAdded:
		s = strconv.Quote(f.New)
	case state.DiffTypeDeleted:
		s = strconv.Quote(f.Old)
	case state.DiffTypeEdited:
		s = strconv.Quote(f.Old) + " => " + strconv.Quote(f.New)
	default:
		s = strconv.Quote(f.New)
	}
	if len(f.Annotations) > 0 {
		s += " (" + strings.Join(f.Annotations, ", ") + ")"
	}
	return s
}
