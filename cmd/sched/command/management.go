package command

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/http/api/mgmt"
)

// This file holds what the management commands (`sched org`, `sched
// project`, `sched admin`) share: their flags, the organization they act
// in, paging, and -json output. They talk to /api/v2 through api.Mgmt, so
// the token goes as "Authorization: Bearer" and no namespace applies.

// envMgmtOrg names the environment variable that defaults -org.
const envMgmtOrg = "SCHED_ORG"

// mgmtAllPagesSize is the page size used to fetch a whole list: the spec's
// maximum, so a list of N items costs N/100 requests.
const mgmtAllPagesSize = 100

// mgmtMeta holds the flags of a management command.
type mgmtMeta struct {
	meta
	org  string
	json bool
	// tmpl is the command's -t template (the cli's, which printJSON uses).
	tmpl *string
}

// mgmtFlagSet returns a flag set for `sched <name>` with -address and
// -token registered as for every other command (no -namespace: it means
// nothing to /api/v2).
func (c *cli) mgmtFlagSet(name, usage, help string) (*flag.FlagSet, *mgmtMeta) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	m := &mgmtMeta{meta: meta{getenv: c.getenv}, tmpl: &c.tmpl}
	addr := c.getenv(api.EnvAddress)
	if addr == "" {
		addr = api.DefaultAddress
	}
	fs.StringVar(&m.address, "address", addr, "address of a sched agent (env "+api.EnvAddress+")")
	// As in flagSet: the token's default is read in client, so that -h
	// never prints a secret.
	fs.StringVar(&m.token, "token", "", "secret of the token to authenticate with (default: env "+api.EnvToken+")")
	m.tlsFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: sched %s %s\n\n%s\n\nOptions:\n", name, usage, strings.TrimSpace(help))
		fs.PrintDefaults()
	}
	return fs, m
}

// orgFlag registers -org, defaulting to $SCHED_ORG.
func (m *mgmtMeta) orgFlag(fs *flag.FlagSet) {
	fs.StringVar(&m.org, "org", m.getenv(envMgmtOrg), "name of the organization (env "+envMgmtOrg+")")
}

// jsonFlag registers -json and -t (output.go).
func (m *mgmtMeta) jsonFlag(fs *flag.FlagSet) {
	fs.BoolVar(&m.json, "json", false, "print the result as JSON")
	fs.Var(templateFlag{tmpl: m.tmpl, json: &m.json}, "t", "print the result through this Go `template`; the data is what -json prints")
}

// errMgmtNoOrg is the usage error of an organization-scoped command run
// without one.
var errMgmtNoOrg = errors.New("no organization given: pass -org or set " + envMgmtOrg)

// requireOrg returns errMgmtNoOrg when no organization was given.
func (m *mgmtMeta) requireOrg() error {
	if m.org == "" {
		return errMgmtNoOrg
	}
	return nil
}

// mgmt returns the management API client configured from the flags.
func (m *mgmtMeta) mgmt() (*mgmt.Client, error) {
	client, err := m.client()
	if err != nil {
		return nil, err
	}
	return mgmt.New(client), nil
}

// parseMgmt is parseClient for a management command: the client of
// /api/v2 made from the shared flags in m.
func (c *cli) parseMgmt(fs *flag.FlagSet, m *mgmtMeta, args []string, min, max int) (*mgmt.Client, int) {
	if done, code := parseFlags(fs, args, min, max); done {
		return nil, code
	}
	client, err := m.mgmt()
	if err != nil {
		return nil, c.fail("creating client", err)
	}
	return client, 0
}

// mgmtPageFlags are -page and -page-size. With neither, a list command
// fetches every page, as the jobs API's list commands show everything;
// with either, it shows that one page and says where it is in the list.
type mgmtPageFlags struct {
	number, size int
}

func (p *mgmtPageFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&p.number, "page", 0, "show only this page (from 1) instead of every item")
	fs.IntVar(&p.size, "page-size", 0, "items per page, at most 100; alone, shows the first page (default 20)")
}

// check rejects page values the server would refuse anyway, before any
// request.
func (p mgmtPageFlags) check() error {
	if p.number < 0 {
		return fmt.Errorf("-page must be at least 1, got %d", p.number)
	}
	if p.size < 0 || p.size > mgmtAllPagesSize {
		return fmt.Errorf("-page-size must be 1 to %d, got %d", mgmtAllPagesSize, p.size)
	}
	return nil
}

// single reports whether one page was asked for.
func (p mgmtPageFlags) single() bool { return p.number != 0 || p.size != 0 }

// mgmtFetchPages returns the items of the page p asks for, or of every page.
// fetch returns one page's items and pagination; a server that sends no
// pagination is taken to have answered everything at once.
func mgmtFetchPages[T any](p mgmtPageFlags, fetch func(mgmt.PageOptions) ([]*T, *mgmt.Pagination, error)) ([]*T, *mgmt.Pagination, error) {
	if p.single() {
		return fetch(mgmt.PageOptions{PageNumber: p.number, PageSize: p.size})
	}
	var all []*T
	for number := 1; ; {
		items, pg, err := fetch(mgmt.PageOptions{PageNumber: number, PageSize: mgmtAllPagesSize})
		if err != nil {
			return nil, nil, err
		}
		all = append(all, items...)
		// Stop at the last page, and on a next-page that does not move
		// forward, so a confused server cannot loop us for ever.
		if pg == nil || pg.NextPage <= number {
			return all, pg, nil
		}
		number = pg.NextPage
	}
}

// mgmtPrintList prints what a list command fetched: JSON with -json ([]
// when empty), "No <plural> found" when empty, else a table of one row per
// item and, for a single page, where it sits in its list.
func mgmtPrintList[T any](c *cli, m *mgmtMeta, p mgmtPageFlags, pg *mgmt.Pagination, items []*T, plural string, header []string, row func(*T) []string) int {
	if m.json {
		if items == nil {
			items = []*T{}
		}
		return c.printJSON(items)
	}
	if len(items) == 0 {
		fmt.Fprintf(c.stdout, "No %s found\n", plural)
		return 0
	}
	rows := make([][]string, 0, len(items))
	for _, it := range items {
		rows = append(rows, row(it))
	}
	writeTable(c.stdout, header, rows)
	if p.single() && pg != nil {
		fmt.Fprintf(c.stdout, "\nPage %d of %d (%d total)\n", pg.CurrentPage, max(pg.TotalPages, 1), pg.TotalCount)
	}
	return 0
}

// mgmtUsageError prints a usage problem and the command's usage; exit code 1.
func mgmtUsageError(fs *flag.FlagSet, err error) int {
	fmt.Fprintf(fs.Output(), "Error: %v\n\n", err)
	fs.Usage()
	return 1
}

// mgmtGiven returns the names of the flags set on the command line, so that
// an update sends only what the user asked to change.
func mgmtGiven(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// mgmtStrIf returns &v when name was given.
func mgmtStrIf(set map[string]bool, name, v string) *string {
	if !set[name] {
		return nil
	}
	return &v
}

// mgmtBoolIf returns &v when name was given.
func mgmtBoolIf(set map[string]bool, name string, v bool) *bool {
	if !set[name] {
		return nil
	}
	return &v
}

// mgmtTime prints a time like formatTime; the zero time is "<none>".
func (c *cli) mgmtTime(t time.Time) string {
	if t.IsZero() {
		return "<none>"
	}
	return c.formatTime(t.UnixNano())
}

// mgmtYesNo prints a boolean as the detail blocks do.
func mgmtYesNo(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// mgmtSplitList splits a comma-separated flag value, dropping blanks.
func mgmtSplitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
