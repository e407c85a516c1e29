package command

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schedhq/sched/state"
)

// newTable returns a writer that aligns tab-separated columns two spaces
// apart, the layout of Nomad's tables.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
}

// writeTable prints a header row and rows as aligned columns, without the
// trailing blanks an empty last cell would leave.
func writeTable(w io.Writer, header []string, rows [][]string) {
	var buf bytes.Buffer
	tw := newTable(&buf)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line == "" {
			continue
		}
		io.WriteString(w, strings.TrimRight(line, " \n")+"\n")
	}
}

// kv is one "Key = Value" line of a detail block.
type kv struct{ key, value string }

// writeKV prints pairs with their "=" signs aligned.
func writeKV(w io.Writer, pairs []kv) {
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	for _, p := range pairs {
		if p.value == "" {
			fmt.Fprintf(tw, "%s\t=\n", p.key)
			continue
		}
		fmt.Fprintf(tw, "%s\t= %s\n", p.key, p.value)
	}
	tw.Flush()
}

// shortIDLength is how much of a UUID the tables show, as Nomad does:
// enough to be unique in practice and to paste into a prefix lookup.
const shortIDLength = 8

// shortID returns the first characters of id unless verbose.
func shortID(id string, verbose bool) string {
	if verbose || len(id) <= shortIDLength {
		return id
	}
	return id[:shortIDLength]
}

// formatTime prints Unix nanoseconds as an RFC 3339 time in the CLI's
// time zone; zero, a time never set, prints as "<none>".
func (c *cli) formatTime(unixNanos int64) string {
	if unixNanos == 0 {
		return "<none>"
	}
	return time.Unix(0, unixNanos).In(c.loc).Format(time.RFC3339)
}

// ago prints how long before now a Unix-nanosecond time was, with at most
// two units ("3m12s ago", "2d4h ago"): precise enough to tell allocations
// apart, short enough for a table column.
func (c *cli) ago(unixNanos int64) string {
	if unixNanos == 0 {
		return "<none>"
	}
	d := c.now().Sub(time.Unix(0, unixNanos)).Round(time.Second)
	if d < time.Second {
		return "just now"
	}
	units := []struct {
		suffix string
		size   time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}}
	var b strings.Builder
	shown := 0
	for _, u := range units {
		if n := d / u.size; n > 0 || shown > 0 {
			if n > 0 {
				fmt.Fprintf(&b, "%d%s", n, u.suffix)
			}
			d -= n * u.size
			shown++
			if shown == 2 {
				break
			}
		}
	}
	return b.String() + " ago"
}

// orNone prints an empty value as "<none>".
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func (c *cli) writeAllocs(w io.Writer, allocs []*state.AllocListStub, verbose bool) {
	fmt.Fprintln(w, "Allocations")
	if len(allocs) == 0 {
		fmt.Fprintln(w, "No allocations placed")
		return
	}
	c.writeAllocTable(w, allocs, verbose)
}

// writeAllocTable prints the allocation table of writeAllocs without its
// title, as `job allocs` does.
func (c *cli) writeAllocTable(w io.Writer, allocs []*state.AllocListStub, verbose bool) {
	// Newest first, as Nomad lists them: the allocations a user just
	// caused are at the top.
	allocs = slices.Clone(allocs)
	slices.SortStableFunc(allocs, func(a, b *state.AllocListStub) int { return cmp.Compare(b.CreateIndex, a.CreateIndex) })
	rows := make([][]string, 0, len(allocs))
	for _, a := range allocs {
		version := "<none>"
		if a.JobType != "" { // the stub of an allocation whose job is known
			version = strconv.FormatUint(a.JobVersion, 10)
		}
		rows = append(rows, []string{
			shortID(a.ID, verbose), shortID(a.NodeID, verbose), a.TaskGroup, version,
			a.DesiredStatus, a.ClientStatus, c.ago(a.CreateTime), c.ago(a.ModifyTime),
		})
	}
	writeTable(w, []string{"ID", "Node ID", "Task Group", "Version", "Desired", "Status", "Created", "Modified"}, rows)
}
