package scheduler

import (
	"fmt"
	"strconv"
	"strings"
)

// allocName is the name of an allocation: "<job>.<group>[<index>]". The
// index is what keeps allocations of a group apart for users and for
// templates (SCHED_ALLOC_INDEX); it is reused, never duplicated among live
// allocations.
func allocName(job, group string, index int) string {
	return fmt.Sprintf("%s.%s[%d]", job, group, index)
}

// allocIndex returns the index of an allocation name, or -1 when the name
// does not end in "[<index>]".
func allocIndex(name string) int {
	if !strings.HasSuffix(name, "]") {
		return -1
	}
	open := strings.LastIndexByte(name, '[')
	if open < 0 {
		return -1
	}
	n, err := strconv.Atoi(name[open+1 : len(name)-1])
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// nameIndex hands out the indexes of a group's new allocations.
type nameIndex struct {
	job, group string
	used       map[int]bool
	// low is an index below which every index is used: indexes are only
	// ever taken, so the search for a free one resumes there.
	low int
}

// newNameIndex returns an index where the names of the kept allocations
// are taken.
func newNameIndex(job, group string, kept []string) *nameIndex {
	ni := &nameIndex{job: job, group: group, used: map[int]bool{}}
	for _, name := range kept {
		if i := allocIndex(name); i >= 0 {
			ni.used[i] = true
		}
	}
	return ni
}

// take marks a name as used, e.g. one a replacement inherits.
func (ni *nameIndex) take(name string) {
	if i := allocIndex(name); i >= 0 {
		ni.used[i] = true
	}
}

// next returns the lowest free index's name and takes it, so a group
// whose count is n keeps the names 0..n-1 when it can.
func (ni *nameIndex) next() string {
	for ; ; ni.low++ {
		if !ni.used[ni.low] {
			ni.used[ni.low] = true
			return allocName(ni.job, ni.group, ni.low)
		}
	}
}
