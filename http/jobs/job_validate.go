package jobs

import (
	"strconv"

	"github.com/schedhq/sched/state"
)

// entryIDs checks the IDs of a request's list entries: each is required and
// appears once. list names the list ("Allocs"), noun the entry
// ("allocation"), for messages such as
// `Allocs[2].ID: allocation "x" is also listed at Allocs[0]`.
type entryIDs struct {
	list, noun string
	seen       map[string]int
}

func newEntryIDs(list, noun string) *entryIDs {
	return &entryIDs{list: list, noun: noun, seen: map[string]int{}}
}

// field is the path of entry i.
func (l *entryIDs) field(i int) string { return l.list + "[" + strconv.Itoa(i) + "]" }

// check records entry i's id, adding to v when it is empty or repeated.
func (l *entryIDs) check(v *state.ValidationError, i int, id string) {
	switch j, dup := l.seen[id]; {
	case id == "":
		v.Add(l.field(i)+".ID", "required")
	case dup:
		v.Add(l.field(i)+".ID", "%s %q is also listed at %s", l.noun, id, l.field(j))
	default:
		l.seen[id] = i
	}
}
