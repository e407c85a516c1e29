package command

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/schedhq/sched/http/api/mgmt"
)

// `sched admin tool-version` and `sched admin policy-version` are one
// implementation over the two version families, which the spec gives the
// same shape. A version is named by ID (tool-..., for both families, as
// the spec says) or by its version string, looked up with
// filter[version].

// mgmtVersionIDPrefix starts the ID of a tool or policy version.
const mgmtVersionIDPrefix = "tool-"

// mgmtVersionFamily is one family as the CLI shows it.
type mgmtVersionFamily struct {
	// word is the word after `sched admin`; noun names one version in
	// messages.
	word, noun string
	endpoints  func(*mgmt.Client) *mgmt.AdminVersions
}

var (
	mgmtToolVersions = mgmtVersionFamily{"tool-version", "tool version",
		func(m *mgmt.Client) *mgmt.AdminVersions { return m.Admin().ToolVersions() }}
	mgmtPolicyVersions = mgmtVersionFamily{"policy-version", "policy version",
		func(m *mgmt.Client) *mgmt.AdminVersions { return m.Admin().PolicyVersions() }}
)

// versionTable is the table of `sched admin <family>`.
func (c *adminCLI) versionTable(f mgmtVersionFamily) []entry {
	bind := func(run func(mgmtVersionFamily, []string) int) func([]string) int {
		return func(args []string) int { return run(f, args) }
	}
	return []entry{
		{"list", "List the " + f.noun + "s", bind(c.mgmtVersionList), nil},
		{"show", "Show one " + f.noun, bind(c.mgmtVersionShow), nil},
		{"create", "Add a " + f.noun, bind(c.mgmtVersionCreate), nil},
		{"update", "Change a " + f.noun, bind(c.mgmtVersionUpdate), nil},
		{"delete", "Remove a " + f.noun, bind(c.mgmtVersionDelete), nil},
	}
}

func (c *adminCLI) mgmtVersionList(f mgmtVersionFamily, args []string) int {
	fs, m := c.mgmtFlagSet("admin "+f.word+" list", "[options]", "List the "+f.noun+"s runs may use.")
	m.jsonFlag(fs)
	var pf mgmtPageFlags
	pf.register(fs)
	exact := fs.String("version", "", "show only this exact version; wins over -search")
	search := fs.String("search", "", "search version numbers")
	if done, code := parseFlags(fs, args, 0, 0); done {
		return code
	}
	if err := pf.check(); err != nil {
		return mgmtUsageError(fs, err)
	}
	client, err := m.mgmt()
	if err != nil {
		return c.fail("creating client", err)
	}
	versions, pg, err := mgmtFetchPages(pf, func(p mgmt.PageOptions) ([]*mgmt.ToolVersion, *mgmt.Pagination, error) {
		page, err := f.endpoints(client).List(c.ctx, mgmt.ToolVersionListOptions{PageOptions: p, FilterVersion: *exact, SearchVersion: *search})
		if err != nil {
			return nil, nil, err
		}
		return page.Items, page.Pagination, nil
	})
	if err != nil {
		return c.fail("retrieving "+f.noun+"s", err)
	}
	return mgmtPrintList(c.cli, m, pf, pg, versions, f.noun+"s", []string{"ID", "Version", "Enabled", "Official", "Beta", "Deprecated", "Usage"},
		func(v *mgmt.ToolVersion) []string {
			return []string{v.ID, v.Version, mgmtYesNo(v.Enabled), mgmtYesNo(v.Official), mgmtYesNo(v.Beta),
				mgmtYesNo(v.Deprecated), strconv.Itoa(v.Usage)}
		})
}

func (c *adminCLI) mgmtVersionShow(f mgmtVersionFamily, args []string) int {
	fs, m := c.mgmtFlagSet("admin "+f.word+" show", "[options] VERSION",
		"Show one "+f.noun+", given by ID ("+mgmtVersionIDPrefix+"...) or version string.")
	m.jsonFlag(fs)
	client, code := c.parseMgmt(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	v, err := c.mgmtFindVersion(f, client, fs.Arg(0))
	if err != nil {
		return c.fail("retrieving "+f.noun, err)
	}
	if m.json {
		return c.printJSON(v)
	}
	reason := ""
	if v.DeprecatedReason != nil {
		reason = *v.DeprecatedReason
	}
	archs := make([]string, 0, len(v.Archs))
	for _, a := range v.Archs {
		archs = append(archs, a.OS+"/"+a.Arch)
	}
	writeKV(c.stdout, []kv{
		{"ID", v.ID},
		{"Version", v.Version},
		{"URL", v.URL},
		{"SHA", v.SHA},
		{"Enabled", mgmtYesNo(v.Enabled)},
		{"Official", mgmtYesNo(v.Official)},
		{"Beta", mgmtYesNo(v.Beta)},
		{"Deprecated", mgmtYesNo(v.Deprecated)},
		{"Deprecated Reason", orNone(reason)},
		{"Usage", strconv.Itoa(v.Usage)},
		{"Archs", orNone(strings.Join(archs, ", "))},
		{"Created", c.mgmtTime(v.CreatedAt)},
	})
	return 0
}

// mgmtVersionFlags are the attributes create and update share.
type mgmtVersionFlags struct {
	version, url, sha, reason           string
	official, enabled, beta, deprecated bool
}

func (v *mgmtVersionFlags) register(fs *flag.FlagSet, withVersion bool) {
	if withVersion {
		fs.StringVar(&v.version, "version", "", `the version string, "N.N.N" or "N.N.N-bundle"`)
	}
	fs.StringVar(&v.url, "url", "", "download location of the linux/amd64 binary")
	fs.StringVar(&v.sha, "sha", "", "SHA-256 checksum of the binary")
	fs.BoolVar(&v.official, "official", false, "mark the version official (it can no longer be deleted)")
	fs.BoolVar(&v.enabled, "enabled", true, "let runs use the version")
	fs.BoolVar(&v.beta, "beta", false, "mark the version a beta pre-release")
	fs.BoolVar(&v.deprecated, "deprecated", false, "mark the version deprecated")
	fs.StringVar(&v.reason, "deprecated-reason", "", "why the version is deprecated (with -deprecated)")
}

func (c *adminCLI) mgmtVersionCreate(f mgmtVersionFamily, args []string) int {
	fs, m := c.mgmtFlagSet("admin "+f.word+" create", "[options] VERSION", `
Add the `+f.noun+` VERSION ("N.N.N" or "N.N.N-bundle"). -url and -sha are
required.`)
	m.jsonFlag(fs)
	var vf mgmtVersionFlags
	vf.register(fs, false)
	if done, code := parseFlags(fs, args, 1, 1); done {
		return code
	}
	if vf.url == "" || vf.sha == "" {
		return mgmtUsageError(fs, errors.New("-url and -sha are required"))
	}
	set := mgmtGiven(fs)
	client, err := m.mgmt()
	if err != nil {
		return c.fail("creating client", err)
	}
	v, err := f.endpoints(client).Create(c.ctx, mgmt.ToolVersionCreateOptions{
		Version: fs.Arg(0), URL: vf.url, SHA: vf.sha,
		Official:         mgmtBoolIf(set, "official", vf.official),
		Enabled:          mgmtBoolIf(set, "enabled", vf.enabled),
		Beta:             mgmtBoolIf(set, "beta", vf.beta),
		Deprecated:       mgmtBoolIf(set, "deprecated", vf.deprecated),
		DeprecatedReason: mgmtStrIf(set, "deprecated-reason", vf.reason),
	})
	if err != nil {
		return c.fail("creating "+f.noun, err)
	}
	if m.json {
		return c.printJSON(v)
	}
	fmt.Fprintf(c.stdout, "Successfully created %s %q with ID %q!\n", f.noun, v.Version, v.ID)
	return 0
}

func (c *adminCLI) mgmtVersionUpdate(f mgmtVersionFamily, args []string) int {
	fs, m := c.mgmtFlagSet("admin "+f.word+" update", "[options] VERSION", `
Change one `+f.noun+`, given by ID (`+mgmtVersionIDPrefix+`...) or version string. Only
the options given are sent; the others keep their values. An empty
-deprecated-reason clears the reason.`)
	m.jsonFlag(fs)
	var vf mgmtVersionFlags
	vf.register(fs, true)
	if done, code := parseFlags(fs, args, 1, 1); done {
		return code
	}
	set := mgmtGiven(fs)
	opts := mgmt.ToolVersionUpdateOptions{
		Version:          mgmtStrIf(set, "version", vf.version),
		URL:              mgmtStrIf(set, "url", vf.url),
		SHA:              mgmtStrIf(set, "sha", vf.sha),
		Official:         mgmtBoolIf(set, "official", vf.official),
		Enabled:          mgmtBoolIf(set, "enabled", vf.enabled),
		Beta:             mgmtBoolIf(set, "beta", vf.beta),
		Deprecated:       mgmtBoolIf(set, "deprecated", vf.deprecated),
		DeprecatedReason: mgmtStrIf(set, "deprecated-reason", vf.reason),
	}
	if !mgmtAnyGiven(set, "version", "url", "sha", "official", "enabled", "beta", "deprecated", "deprecated-reason") {
		return mgmtUsageError(fs, errors.New("nothing to update: give at least one attribute"))
	}
	client, err := m.mgmt()
	if err != nil {
		return c.fail("creating client", err)
	}
	id, err := c.mgmtResolveVersion(f, client, fs.Arg(0))
	if err != nil {
		return c.fail("looking up "+f.noun, err)
	}
	v, err := f.endpoints(client).Update(c.ctx, id, opts)
	if err != nil {
		return c.fail("updating "+f.noun, err)
	}
	if m.json {
		return c.printJSON(v)
	}
	fmt.Fprintf(c.stdout, "Successfully updated %s %q!\n", f.noun, v.Version)
	return 0
}

func (c *adminCLI) mgmtVersionDelete(f mgmtVersionFamily, args []string) int {
	fs, m := c.mgmtFlagSet("admin "+f.word+" delete", "[options] VERSION", `
Remove one `+f.noun+`, given by ID (`+mgmtVersionIDPrefix+`...) or version string. The
server refuses an official version and one that is in use.`)
	client, code := c.parseMgmt(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	id, err := c.mgmtResolveVersion(f, client, fs.Arg(0))
	if err != nil {
		return c.fail("looking up "+f.noun, err)
	}
	if err := f.endpoints(client).Delete(c.ctx, id); err != nil {
		return c.fail("deleting "+f.noun, err)
	}
	fmt.Fprintf(c.stdout, "Successfully deleted %s %q!\n", f.noun, fs.Arg(0))
	return 0
}

// mgmtFindVersion returns the version arg names: by ID, or by exact version.
func (c *adminCLI) mgmtFindVersion(f mgmtVersionFamily, client *mgmt.Client, arg string) (*mgmt.ToolVersion, error) {
	if strings.HasPrefix(arg, mgmtVersionIDPrefix) {
		return f.endpoints(client).Read(c.ctx, arg)
	}
	page, err := f.endpoints(client).List(c.ctx, mgmt.ToolVersionListOptions{FilterVersion: arg})
	if err != nil {
		return nil, err
	}
	for _, v := range page.Items {
		if v.Version == arg {
			return v, nil
		}
	}
	return nil, fmt.Errorf("no %s %q", f.noun, arg)
}

// mgmtResolveVersion returns the ID of the version arg names.
func (c *adminCLI) mgmtResolveVersion(f mgmtVersionFamily, client *mgmt.Client, arg string) (string, error) {
	if strings.HasPrefix(arg, mgmtVersionIDPrefix) {
		return arg, nil
	}
	v, err := c.mgmtFindVersion(f, client, arg)
	if err != nil {
		return "", err
	}
	return v.ID, nil
}
