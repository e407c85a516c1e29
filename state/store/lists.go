package store

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

// Lists of the management API. Each filters, counts and sorts in the store
// and returns only the requested page, so a page of a large list costs one
// pass over the rows and no copy of them.

// Page sizes of every paginated list (spec §1, §8).
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// Page selects a page of a list: Number counts from 1. The zero Page is
// the first page of DefaultPageSize items.
type Page struct {
	Number int
	Size   int
}

// Normalize fills defaults: Number below 1 is 1, Size below 1 is
// DefaultPageSize, and Size above MaxPageSize is MaxPageSize. A Number past
// the end is kept: the list is then empty and its meta echoes the page
// asked for.
func (p Page) Normalize() Page {
	if p.Number < 1 {
		p.Number = 1
	}
	if p.Size < 1 {
		p.Size = DefaultPageSize
	}
	p.Size = min(p.Size, MaxPageSize)
	return p
}

// TotalPages is the number of pages a list of total items fills; an empty
// list has one (empty) page.
func (p Page) TotalPages(total int) int {
	p = p.Normalize()
	return max(1, (total+p.Size-1)/p.Size)
}

// pager keeps the items of one page while a list is walked once.
type pager[T any] struct {
	start, end, n int
	items         []T
}

func newPager[T any](p Page) *pager[T] {
	p = p.Normalize()
	// Clamp so that a huge page number cannot overflow the window.
	start := min(p.Number-1, 1<<40/p.Size) * p.Size
	return &pager[T]{start: start, end: start + p.Size}
}

func (pg *pager[T]) add(v T) {
	if pg.n >= pg.start && pg.n < pg.end {
		pg.items = append(pg.items, v)
	}
	pg.n++
}

// pageOf returns page p of items.
func pageOf[T any](items []T, p Page) []T {
	pg := newPager[T](p)
	if pg.start >= len(items) {
		return nil
	}
	return items[pg.start:min(pg.end, len(items))]
}

// containsLowerASCII reports whether s contains lowerSub, a lowercase
// string, ignoring the case of s's ASCII letters. It does not allocate,
// which matters when a list filters thousands of names; names it serves
// (project names) are ASCII by rule.
func containsLowerASCII(s, lowerSub string) bool {
	n := len(lowerSub)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lowerSub[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

// containsFold reports whether s contains sub, ignoring case.
func containsFold(s, sub string) bool {
	return sub == "" || strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// ProjectListOptions are the query parameters of the project list.
type ProjectListOptions struct {
	// Query (q) keeps projects whose name contains it, ignoring case. It
	// is ignored when Names is set.
	Query string
	// Names (filter[names]) keeps projects named any of them, ignoring
	// case.
	Names []string
	// CanCreateWorkspace (filter[permissions][create-workspace] present)
	// keeps projects where the caller may create workspaces.
	CanCreateWorkspace bool
	// CanUpdate (filter[permissions][update] present) keeps projects the
	// caller may update.
	CanUpdate bool
	// Sort is "" (creation order: stable, the Default Project first),
	// "name" or "-name".
	Sort string
	Page Page
}

// ProjectListEntry is one project of a list, with what the caller's view
// of it needs.
type ProjectListEntry struct {
	Project        *mgmt.Project
	Access         mgmt.ProjectAccess
	WorkspaceCount int
	TeamCount      int
}

// ProjectList is one page of projects.
type ProjectList struct {
	Items []ProjectListEntry
	// Total is the number of projects of the organization the caller can
	// see; Matching the number that pass the filters
	// (meta.status-counts).
	Total    int
	Matching int
	Page     Page
}

// ListProjects lists the projects of a's organization that the caller can
// see. An organization the caller cannot access is ErrNotFound; a bad sort
// is ErrInvalid naming the "sort" parameter.
//
// Cost: a caller without organization-wide visibility walks only the
// projects its teams have records on; filter[names] looks names up; an
// unfiltered list by a caller who sees every project stops at the end of
// the page (its total is the organization's counter). Only q, or a
// permission filter that can drop projects, walks every project.
func (r reader) ListProjects(ws memdb.WatchSet, a *mgmt.OrgAuthority, opts ProjectListOptions) (*ProjectList, error) {
	if !a.CanAccess() {
		return nil, state.NotFoundf("organization not found")
	}
	if opts.Sort != "" && opts.Sort != "name" && opts.Sort != "-name" {
		return nil, state.Invalidf("sort", "%q is not one of name, -name", opts.Sort)
	}
	org := a.Organization.Name
	txn := r.txn()
	records, err := recordsByProject(ws, txn, a)
	if err != nil {
		return nil, err
	}
	var names map[string]bool
	if len(opts.Names) > 0 {
		names = make(map[string]bool, len(opts.Names))
		for _, n := range opts.Names {
			names[strings.ToLower(strings.TrimSpace(n))] = true
		}
	}
	query := strings.ToLower(opts.Query)
	out := &ProjectList{Page: opts.Page.Normalize()}
	pg := newPager[ProjectListEntry](opts.Page)
	base := a.OrgWideAccess()
	// everyOne: every project is visible and no filter can drop one, so
	// the organization's counter is the total and the walk stops at the
	// end of the page.
	everyOne := base.Visible && names == nil && query == "" &&
		(!opts.CanCreateWorkspace || base.CanCreateWorkspace()) && (!opts.CanUpdate || base.CanUpdate())
	totalKnown := base.Visible
	if totalKnown {
		if out.Total, err = orgCount(ws, txn, TableProjects, org); err != nil {
			return nil, err
		}
	}
	next, err := projectCandidates(ws, txn, org, opts.Sort, base.Visible, names, records)
	if err != nil {
		return nil, err
	}
	for p := next(); p != nil; p = next() {
		if everyOne && pg.n >= pg.end {
			break
		}
		access := base
		if recs := records[p.ID]; len(recs) > 0 {
			access = a.ProjectAccessWith(base, p.ID, recs)
		}
		if !access.Visible {
			continue
		}
		if !totalKnown {
			out.Total++
		}
		switch {
		case names != nil:
			if !names[strings.ToLower(p.Name)] {
				continue
			}
		case query != "":
			if !containsLowerASCII(p.Name, query) {
				continue
			}
		}
		if (opts.CanCreateWorkspace && !access.CanCreateWorkspace()) || (opts.CanUpdate && !access.CanUpdate()) {
			continue
		}
		out.Matching++
		pg.add(ProjectListEntry{Project: p, Access: access})
	}
	if everyOne {
		out.Matching = out.Total
	}
	for i := range pg.items {
		e := &pg.items[i]
		if e.WorkspaceCount, e.TeamCount, err = projectCounts(ws, txn, e.Project.ID); err != nil {
			return nil, err
		}
	}
	out.Items = pg.items
	return out, nil
}

// projectCandidates returns, one at a time in the order sort asks, the
// projects of org that ListProjects must look at: for a caller who sees
// every project, those named (names) or else every project (through the
// index of that order); for any other caller, the projects its teams have
// records on, as no other is visible.
func projectCandidates(ws memdb.WatchSet, txn *memdb.Txn, org, sort string, seesAll bool,
	names map[string]bool, records map[string][]*mgmt.TeamProject) (func() *mgmt.Project, error) {
	var picked []*mgmt.Project
	switch {
	case names != nil && seesAll:
		for name := range names {
			p, err := first[*mgmt.Project](ws, txn, TableProjects, indexMgOrgName, org, name)
			if err != nil {
				return nil, err
			}
			if p != nil {
				picked = append(picked, p)
			}
		}
	case !seesAll:
		for id := range records {
			p, err := first[*mgmt.Project](ws, txn, TableProjects, indexID, id)
			if err != nil {
				return nil, err
			}
			if p != nil && p.OrganizationName == org {
				picked = append(picked, p)
			}
		}
	default:
		var iter memdb.ResultIterator
		var err error
		switch sort {
		case "name":
			iter, err = txn.Get(TableProjects, indexMgOrgName, org)
		case "-name":
			iter, err = txn.GetReverse(TableProjects, indexMgOrgName, org)
		default:
			iter, err = txn.Get(TableProjects, indexMgOrg, org)
		}
		if err != nil {
			return nil, err
		}
		watch(ws, iter.WatchCh())
		return func() *mgmt.Project {
			if raw := iter.Next(); raw != nil {
				return raw.(*mgmt.Project)
			}
			return nil
		}, nil
	}
	// The same orders as the indexes: creation (CreateIndex, then ID) or
	// lowercased name, which is unique in an organization.
	slices.SortFunc(picked, func(x, y *mgmt.Project) int {
		switch sort {
		case "name":
			return strings.Compare(strings.ToLower(x.Name), strings.ToLower(y.Name))
		case "-name":
			return strings.Compare(strings.ToLower(y.Name), strings.ToLower(x.Name))
		}
		return cmp.Or(cmp.Compare(x.CreateIndex, y.CreateIndex), strings.Compare(x.ID, y.ID))
	})
	i := 0
	return func() *mgmt.Project {
		if i >= len(picked) {
			return nil
		}
		i++
		return picked[i-1]
	}, nil
}

// recordsByProject loads the team-projects of a's teams, by project.
func recordsByProject(ws memdb.WatchSet, txn *memdb.Txn, a *mgmt.OrgAuthority) (map[string][]*mgmt.TeamProject, error) {
	out := map[string][]*mgmt.TeamProject{}
	for _, teamID := range a.TeamIDs {
		recs, err := list[*mgmt.TeamProject](ws, txn, nil, TableTeamProjects, indexMgTeam, teamID)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			out[rec.ProjectID] = append(out[rec.ProjectID], rec)
		}
	}
	return out, nil
}

// TeamProjectList is one page of a project's team access.
type TeamProjectList struct {
	Items    []*mgmt.TeamProject
	Matching int
	Page     Page
}

// ListTeamProjects lists the team-projects of project projectID that the
// caller sees (spec §5.3, OrgAuthority.CanViewTeamProject), in creation
// order. A project that is unknown or outside a's organization, or an
// organization the caller cannot access, is ErrNotFound.
func (r reader) ListTeamProjects(ws memdb.WatchSet, a *mgmt.OrgAuthority, projectID string, page Page) (*TeamProjectList, error) {
	txn := r.txn()
	p, err := first[*mgmt.Project](ws, txn, TableProjects, indexID, projectID)
	if err != nil {
		return nil, err
	}
	if p == nil || !a.CanAccess() || p.OrganizationName != a.Organization.Name {
		return nil, state.NotFoundf("project %q not found", projectID)
	}
	recs, err := recordsForProject(ws, txn, a, p.ID)
	if err != nil {
		return nil, err
	}
	access := a.EffectiveProjectAccess(p, recs)
	all, err := list[*mgmt.TeamProject](ws, txn, nil, TableTeamProjects, indexMgProject, p.ID)
	if err != nil {
		return nil, err
	}
	out := &TeamProjectList{Page: page.Normalize()}
	pg := newPager[*mgmt.TeamProject](page)
	for _, rec := range all {
		team, err := first[*mgmt.Team](ws, txn, TableTeams, indexID, rec.TeamID)
		if err != nil {
			return nil, err
		}
		if !a.CanViewTeamProject(team, access) {
			continue
		}
		out.Matching++
		pg.add(rec)
	}
	out.Items = pg.items
	return out, nil
}

// Admin workspace list sorts.
var adminWorkspaceSorts = []string{"name", "current-run.created-at", "latest-change-at"}

// AdminWorkspaceListOptions are the query parameters of the admin workspace
// list.
type AdminWorkspaceListOptions struct {
	// Query (q) keeps workspaces whose name or organization name contains
	// it, ignoring case.
	Query string
	// Statuses (filter[current_run][status]) keeps workspaces whose current
	// run is in one of them.
	Statuses []string
	// Sort is "" (creation order), or name, current-run.created-at or
	// latest-change-at, each optionally prefixed "-". Workspaces without a
	// run sort as the oldest by current-run.created-at.
	Sort string
	Page Page
}

// AdminWorkspaceEntry is one workspace of the admin list with its current
// run (nil when none).
type AdminWorkspaceEntry struct {
	Workspace  *mgmt.Workspace
	CurrentRun *mgmt.Run
}

// AdminWorkspaceList is one page of the admin workspace list.
type AdminWorkspaceList struct {
	Items    []AdminWorkspaceEntry
	Matching int
	// StatusCounts counts the workspaces matching Query (before the status
	// filter) by their current run's status: a key for every status of
	// RunStatuses, plus "none" (no run) and "total".
	StatusCounts map[string]int
	Page         Page
}

// ListAdminWorkspaces lists every workspace of the installation. Unknown
// statuses or sorts are ErrInvalid naming the query parameter.
func (r reader) ListAdminWorkspaces(ws memdb.WatchSet, opts AdminWorkspaceListOptions) (*AdminWorkspaceList, error) {
	for _, s := range opts.Statuses {
		if !slices.Contains(mgmt.RunStatuses(), s) {
			return nil, state.Invalidf("filter[current_run][status]", "%q is not a run status", s)
		}
	}
	key, desc := strings.CutPrefix(opts.Sort, "-")
	if opts.Sort != "" && !slices.Contains(adminWorkspaceSorts, key) {
		return nil, state.Invalidf("sort", "%q is not one of name, current-run.created-at, latest-change-at (optionally prefixed -)", opts.Sort)
	}
	txn := r.txn()
	all, err := list[*mgmt.Workspace](ws, txn, nil, TableWorkspaces, indexMgCreated)
	if err != nil {
		return nil, err
	}
	out := &AdminWorkspaceList{Page: opts.Page.Normalize(), StatusCounts: map[string]int{"none": 0, "total": 0}}
	for _, s := range mgmt.RunStatuses() {
		out.StatusCounts[s] = 0
	}
	var matching []AdminWorkspaceEntry
	for _, w := range all {
		if opts.Query != "" && !containsFold(w.Name, opts.Query) && !containsFold(w.OrganizationName, opts.Query) {
			continue
		}
		var run *mgmt.Run
		if w.CurrentRunID != "" {
			if run, err = first[*mgmt.Run](ws, txn, TableRuns, indexID, w.CurrentRunID); err != nil {
				return nil, err
			}
		}
		out.StatusCounts["total"]++
		if run == nil {
			out.StatusCounts["none"]++
		} else {
			out.StatusCounts[run.Status]++
		}
		if len(opts.Statuses) > 0 && (run == nil || !slices.Contains(opts.Statuses, run.Status)) {
			continue
		}
		matching = append(matching, AdminWorkspaceEntry{Workspace: w, CurrentRun: run})
	}
	if key != "" {
		slices.SortStableFunc(matching, func(x, y AdminWorkspaceEntry) int {
			c := compareAdminWorkspaces(key, x, y)
			if desc {
				c = -c
			}
			return c
		})
	}
	out.Matching = len(matching)
	out.Items = pageOf(matching, opts.Page)
	return out, nil
}

func compareAdminWorkspaces(key string, x, y AdminWorkspaceEntry) int {
	switch key {
	case "name":
		return cmp.Or(
			cmp.Compare(strings.ToLower(x.Workspace.Name), strings.ToLower(y.Workspace.Name)),
			cmp.Compare(x.Workspace.OrganizationName, y.Workspace.OrganizationName))
	case "current-run.created-at":
		return runCreated(x.CurrentRun).Compare(runCreated(y.CurrentRun))
	default:
		return x.Workspace.LatestChangeAt.Compare(y.Workspace.LatestChangeAt)
	}
}

func runCreated(r *mgmt.Run) time.Time {
	if r == nil {
		return time.Time{}
	}
	return r.CreatedAt
}

// AdminOrganizationListOptions are the query parameters of the admin
// organization list.
type AdminOrganizationListOptions struct {
	// Query (q) keeps organizations whose name or notification e-mail
	// contains it, ignoring case; when set, Email and Name are ignored.
	Query string
	// Email (q[email]) and Name (q[name]) each keep organizations whose
	// e-mail, respectively name, contains them; given both, both must
	// match.
	Email string
	Name  string
	// ModuleProducer and ProviderProducer, when set, keep organizations
	// that share modules/providers (true) or do not (false).
	ModuleProducer   *bool
	ProviderProducer *bool
	Page             Page
}

// OrganizationList is one page of organizations.
type OrganizationList struct {
	Items    []*mgmt.Organization
	Matching int
	// Active and Disabled count the matching organizations by is-disabled
	// (meta.status-counts of the admin list, whose total is Matching).
	Active   int
	Disabled int
	Page     Page
}

// ListAdminOrganizations lists every organization, by name.
func (r reader) ListAdminOrganizations(ws memdb.WatchSet, opts AdminOrganizationListOptions) (*OrganizationList, error) {
	all, err := list[*mgmt.Organization](ws, r.txn(), nil, TableOrganizations, indexID)
	if err != nil {
		return nil, err
	}
	out := &OrganizationList{Page: opts.Page.Normalize()}
	pg := newPager[*mgmt.Organization](opts.Page)
	for _, o := range all {
		if opts.Query != "" {
			if !containsFold(o.Name, opts.Query) && !containsFold(o.Email, opts.Query) {
				continue
			}
		} else if !containsFold(o.Email, opts.Email) || !containsFold(o.Name, opts.Name) {
			continue
		}
		if opts.ModuleProducer != nil && o.ModuleProducer() != *opts.ModuleProducer {
			continue
		}
		if opts.ProviderProducer != nil && o.ProviderProducer() != *opts.ProviderProducer {
			continue
		}
		out.Matching++
		if o.IsDisabled {
			out.Disabled++
		} else {
			out.Active++
		}
		pg.add(o)
	}
	out.Items = pg.items
	return out, nil
}

// OrganizationConsumers lists the organizations allowed to use
// organization name's modules (kind module) or providers (kind provider),
// by name. The list is empty when the organization shares that kind
// globally or has no consumers (spec §4). An unknown organization is
// ErrNotFound.
func (r reader) OrganizationConsumers(ws memdb.WatchSet, name, kind string, page Page) (*OrganizationList, error) {
	txn := r.txn()
	org, err := first[*mgmt.Organization](ws, txn, TableOrganizations, indexID, name)
	if err != nil {
		return nil, err
	}
	if org == nil {
		return nil, state.NotFoundf("organization %q not found", name)
	}
	names, global := org.ModuleConsumers, org.GlobalModuleSharing
	if kind == ConsumerKindProvider {
		names, global = org.ProviderConsumers, org.GlobalProviderSharing
	}
	out := &OrganizationList{Page: page.Normalize()}
	if global {
		return out, nil
	}
	pg := newPager[*mgmt.Organization](page)
	for _, n := range names {
		c, err := first[*mgmt.Organization](ws, txn, TableOrganizations, indexID, n)
		if err != nil {
			return nil, err
		}
		if c == nil {
			continue
		}
		out.Matching++
		pg.add(c)
	}
	out.Items = pg.items
	return out, nil
}

// OrganizationsForCaller lists the organizations c belongs to, by name: a
// user's organizations are those of their teams, a team or organization
// token's is its own, and a management token sees every one. Disabled
// organizations are left out for everyone but site administrators (spec
// §3: inaccessible to users).
func (r reader) OrganizationsForCaller(ws memdb.WatchSet, c mgmt.Caller, page Page) (*OrganizationList, error) {
	return r.SearchOrganizationsForCaller(ws, c, OrganizationSearch{}, page)
}

// OrganizationSearch is the search of the organization list's q, q[email]
// and q[name] parameters: Query keeps the organizations whose name or
// notification e-mail contains it, ignoring case (Email and Name are then
// ignored); otherwise Email and Name each keep those whose e-mail,
// respectively name, contains them. The zero value keeps every one.
type OrganizationSearch struct {
	Query, Email, Name string
}

// matches reports whether o is one the search keeps.
func (q OrganizationSearch) matches(o *mgmt.Organization) bool {
	if q.Query != "" {
		return containsFold(o.Name, q.Query) || containsFold(o.Email, q.Query)
	}
	return containsFold(o.Email, q.Email) && containsFold(o.Name, q.Name)
}

// SearchOrganizationsForCaller is OrganizationsForCaller narrowed to the
// organizations search keeps; Matching counts those.
func (r reader) SearchOrganizationsForCaller(ws memdb.WatchSet, c mgmt.Caller, search OrganizationSearch, page Page) (*OrganizationList, error) {
	txn := r.txn()
	all, err := list[*mgmt.Organization](ws, txn, nil, TableOrganizations, indexID)
	if err != nil {
		return nil, err
	}
	mine := map[string]bool{}
	switch c.Kind {
	case mgmt.CallerUser:
		ms, err := list[*mgmt.TeamMembership](ws, txn, nil, TableTeamMemberships, indexMgUser, c.UserID)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			mine[m.OrganizationName] = true
		}
	case mgmt.CallerTeam, mgmt.CallerOrganization:
		mine[c.OrganizationName] = true
	}
	out := &OrganizationList{Page: page.Normalize()}
	pg := newPager[*mgmt.Organization](page)
	for _, o := range all {
		if (c.Kind != mgmt.CallerManagement && !mine[o.Name]) || (o.IsDisabled && !c.IsSiteAdmin) || !search.matches(o) {
			continue
		}
		out.Matching++
		if o.IsDisabled {
			out.Disabled++
		} else {
			out.Active++
		}
		pg.add(o)
	}
	out.Items = pg.items
	return out, nil
}

// ToolVersionListOptions are the query parameters of the admin tool/policy
// version lists.
type ToolVersionListOptions struct {
	// Version (filter[version]) keeps the version equal to it; it takes
	// precedence over Search.
	Version string
	// Search (search[version]) keeps versions containing it.
	Search string
	Page   Page
}

// ToolVersionEntry is one version of a list with its usage.
type ToolVersionEntry struct {
	Version *mgmt.ToolVersion
	Usage   int
}

// ToolVersionList is one page of tool or policy versions.
type ToolVersionList struct {
	Items    []ToolVersionEntry
	Matching int
	Page     Page
}

// ListToolVersions lists the versions of family in creation order.
func (r reader) ListToolVersions(ws memdb.WatchSet, family string, opts ToolVersionListOptions) (*ToolVersionList, error) {
	txn := r.txn()
	all, err := list[*mgmt.ToolVersion](ws, txn, nil, TableToolVersions, indexMgFamily, family)
	if err != nil {
		return nil, err
	}
	out := &ToolVersionList{Page: opts.Page.Normalize()}
	pg := newPager[ToolVersionEntry](opts.Page)
	for _, tv := range all {
		switch {
		case opts.Version != "":
			if tv.Version != opts.Version {
				continue
			}
		case opts.Search != "":
			if !containsFold(tv.Version, opts.Search) {
				continue
			}
		}
		out.Matching++
		pg.add(ToolVersionEntry{Version: tv})
	}
	for i := range pg.items {
		if pg.items[i].Usage, err = toolVersionUsage(ws, txn, pg.items[i].Version); err != nil {
			return nil, err
		}
	}
	out.Items = pg.items
	return out, nil
}
