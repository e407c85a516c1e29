package command

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsimple"

	"github.com/schedhq/sched/state"
)

// quotaCLI holds the commands of `sched quota`: namespace quotas as
// Nomad Enterprise's `nomad quota` names them.
type quotaCLI struct{ *cli }

func (c *quotaCLI) table() []entry {
	return []entry{
		{"list", "List quota specifications", c.quotaList, nil},
		{"status", "Show a quota's limits and usage", c.quotaStatus, nil},
		{"apply", "Create or update a quota from a file", c.quotaApply, nil},
		{"delete", "Delete a quota", c.quotaDelete, nil},
		{"init", "Write an example quota specification", c.quotaInit, nil},
	}
}

// maxQuotaFileBytes bounds a quota specification file.
const maxQuotaFileBytes = 64 << 10

func (c *quotaCLI) quotaList(args []string) int {
	fs, m := c.flagSet("quota list", "[options]", "List the quota specifications.")
	asJSON := c.outputFlags(fs, "print the quotas as JSON")
	client, code := c.parseClient(fs, m, args, 0, 0)
	if client == nil {
		return code
	}
	list, _, err := client.Quotas().List(c.ctx, nil)
	if err != nil {
		return c.fail("retrieving quotas", err)
	}
	if *asJSON {
		return c.printJSON(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(c.stdout, "No quotas found")
		return 0
	}
	rows := make([][]string, 0, len(list))
	for _, q := range list {
		rows = append(rows, []string{q.Name, q.Description})
	}
	writeTable(c.stdout, []string{"Name", "Description"}, rows)
	return 0
}

func (c *quotaCLI) quotaStatus(args []string) int {
	fs, m := c.flagSet("quota status", "[options] NAME", "Show the quota NAME: its limits and what its namespaces use.")
	asJSON := c.outputFlags(fs, "print the quota's usage as JSON")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	spec, _, err := client.Quotas().Info(c.ctx, fs.Arg(0), nil)
	if err != nil {
		return c.fail("retrieving quota", err)
	}
	usage, _, err := client.Quotas().Usage(c.ctx, fs.Arg(0), nil)
	if err != nil {
		return c.fail("retrieving quota usage", err)
	}
	if *asJSON {
		return c.printJSON(usage)
	}
	writeKV(c.stdout, []kv{{"Name", spec.Name}, {"Description", orNone(spec.Description)}})
	fmt.Fprintln(c.stdout, "\nQuota Limits")
	rows := [][]string{}
	for _, l := range spec.Limits {
		if l == nil {
			continue
		}
		var used state.QuotaResources
		if u := usage.Used[l.Region]; u != nil {
			used = u.Used
		}
		lim := l.RegionLimit
		if lim == nil {
			lim = &state.QuotaResources{}
		}
		rows = append(rows, []string{l.Region,
			usedOf(used.CPU, lim.CPU), usedOf(used.MemoryMB, lim.MemoryMB),
			usedOf(used.MemoryMaxMB, lim.MemoryMaxMB), usedOf(used.Allocations, lim.Allocations)})
	}
	writeTable(c.stdout, []string{"Region", "CPU Usage", "Memory Usage", "Memory Max Usage", "Allocations"}, rows)
	return 0
}

// usedOf shows an amount used against its limit: "512 / 1024", "512 / inf"
// (no limit), "0 / 0" (none allowed).
func usedOf(used, limit int) string {
	switch {
	case limit == 0:
		return strconv.Itoa(used) + " / inf"
	case limit < 0:
		return strconv.Itoa(used) + " / 0"
	}
	return fmt.Sprintf("%d / %d", used, limit)
}

func (c *quotaCLI) quotaApply(args []string) int {
	fs, m := c.flagSet("quota apply", "[options] FILE",
		"Create or update a quota from FILE, HCL or JSON (\"sched quota init\" writes an example). Needs a management token.")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	spec, err := readQuotaFile(fs.Arg(0))
	if err != nil {
		return c.fail("reading quota specification", err)
	}
	if _, err := client.Quotas().Register(c.ctx, spec, nil); err != nil {
		return c.fail("applying quota specification", err)
	}
	fmt.Fprintf(c.stdout, "Successfully applied quota specification %q!\n", spec.Name)
	return 0
}

func (c *quotaCLI) quotaDelete(args []string) int {
	fs, m := c.flagSet("quota delete", "[options] NAME", "Delete the quota NAME. No namespace may name it.")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	if _, err := client.Quotas().Delete(c.ctx, fs.Arg(0), nil); err != nil {
		return c.fail("deleting quota", err)
	}
	fmt.Fprintf(c.stdout, "Successfully deleted quota %q!\n", fs.Arg(0))
	return 0
}

func (c *quotaCLI) quotaInit(args []string) int {
	fset := flag.NewFlagSet("quota init", flag.ContinueOnError)
	fset.SetOutput(c.stderr)
	asJSON := fset.Bool("json", false, "write the example as JSON (spec.json)")
	fset.Usage = func() {
		fmt.Fprintf(fset.Output(), "Usage: sched quota init [-json] [FILE]\n\nWrite an example quota specification to FILE (default spec.hcl, or spec.json with -json). An existing file is never overwritten.\n\nOptions:\n")
		fset.PrintDefaults()
	}
	if done, code := parseFlags(fset, args, 0, 1); done {
		return code
	}
	path, body := "spec.hcl", exampleQuotaHCL
	if *asJSON {
		path, body = "spec.json", exampleQuotaJSON
	}
	if fset.NArg() == 1 {
		path = fset.Arg(0)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return c.fail("writing example quota", fmt.Errorf("%s already exists: remove it or name another file", path))
	}
	if err != nil {
		return c.fail("writing example quota", err)
	}
	_, err = f.WriteString(body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return c.fail("writing example quota", err)
	}
	fmt.Fprintf(c.stdout, "Example quota specification written to %s\n", path)
	return 0
}

// quotaFile is the HCL form of a quota specification.
type quotaFile struct {
	Name        string           `hcl:"name"`
	Description string           `hcl:"description,optional"`
	Limits      []quotaFileLimit `hcl:"limit,block"`
}

type quotaFileLimit struct {
	Region      string              `hcl:"region"`
	RegionLimit *quotaFileResources `hcl:"region_limit,block"`
}

type quotaFileResources struct {
	CPU         int `hcl:"cpu,optional"`
	Memory      int `hcl:"memory,optional"`
	MemoryMax   int `hcl:"memory_max,optional"`
	Allocations int `hcl:"allocations,optional"`
}

// readQuotaFile reads a quota specification in HCL, or JSON (the API's
// form) when the file's name ends in .json or its text starts with `{`.
func readQuotaFile(path string) (*state.QuotaSpec, error) {
	src, err := readBounded(path, maxQuotaFileBytes)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(path, ".json") || strings.HasPrefix(strings.TrimSpace(string(src)), "{") {
		if err := state.CheckHCLJSONDepth("quota", src, state.MaxHCLDepth); err != nil {
			return nil, err
		}
		var spec state.QuotaSpec
		if err := json.Unmarshal(src, &spec); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return &spec, nil
	}
	if err := state.CheckHCLDepth("quota", src, state.MaxHCLDepth); err != nil {
		return nil, err
	}
	var f quotaFile
	if err := hclsimple.Decode(path+".hcl", src, nil, &f); err != nil {
		return nil, err
	}
	spec := &state.QuotaSpec{Name: f.Name, Description: f.Description}
	for _, l := range f.Limits {
		ql := &state.QuotaLimit{Region: l.Region}
		if r := l.RegionLimit; r != nil {
			ql.RegionLimit = &state.QuotaResources{CPU: r.CPU, MemoryMB: r.Memory, MemoryMaxMB: r.MemoryMax, Allocations: r.Allocations}
		}
		spec.Limits = append(spec.Limits, ql)
	}
	return spec, nil
}

// readBounded reads a file of at most max bytes.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d a quota specification may be", path, st.Size(), max)
	}
	buf := make([]byte, st.Size())
	_, err = io.ReadFull(f, buf)
	return buf, err
}

const exampleQuotaHCL = `# A namespace quota: what the live allocations of the namespaces that
# name it (sched namespace apply -quota NAME) may hold together.
name        = "default-quota"
description = "Limit the shared default namespace"

# One limit per region; a job's region's limit applies to it. In a limit,
# 0 means no limit and -1 means none allowed.
limit {
  region = "global"
  region_limit {
    cpu         = 2500 # MHz
    memory      = 1000 # MB
    memory_max  = 2000 # MB, what tasks may burst to (memory_max, else memory)
    allocations = 50   # live allocations
  }
}
`

const exampleQuotaJSON = `{
  "Name": "default-quota",
  "Description": "Limit the shared default namespace",
  "Limits": [
    {
      "Region": "global",
      "RegionLimit": {
        "CPU": 2500,
        "MemoryMB": 1000,
        "MemoryMaxMB": 2000,
        "Allocations": 50
      }
    }
  ]
}
`
