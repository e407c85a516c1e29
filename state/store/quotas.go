package store

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// Quota tables. TableQuotas holds the specs (persisted); TableQuotaUsage
// one row per quota with what the live allocations of its namespaces
// hold, derived from the allocations: kept in step by every write of an
// allocation in a namespace that has a quota (writeTxn.trackQuota), moved
// when a namespace changes quota, rebuilt on restore.
const (
	TableQuotas     = "quotas"
	TableQuotaUsage = "quota_usage"
)

// Quota commands (range 110-119, commands.go).
const (
	QuotaUpsertRequestType MessageType = 110
	QuotaDeleteRequestType MessageType = 111
)

// quotaUsage is a row of TableQuotaUsage.
type quotaUsage struct {
	Name string
	Used state.QuotaResources
}

// quotaTables are the tables of this area.
func quotaTables() []tableDef {
	return []tableDef{{
		name:    TableQuotas,
		indexes: map[string]keyFunc{indexID: func(o any) []any { return []any{o.(*state.QuotaSpec).Name} }},
		newRow:  func() any { return new(state.QuotaSpec) },
	}, {
		name:    TableQuotaUsage,
		derived: true,
		indexes: map[string]keyFunc{indexID: func(o any) []any { return []any{o.(*quotaUsage).Name} }},
		newRow:  func() any { return new(quotaUsage) },
	}}
}

// quotaCommand returns the commands of this area.
func quotaCommand(t MessageType) (command, bool) {
	switch t {
	case QuotaUpsertRequestType:
		return handler(applyQuotaUpsert), true
	case QuotaDeleteRequestType:
		return handler(applyQuotaDelete), true
	}
	return command{}, false
}

// QuotaUpsertRequest creates or updates quota specifications.
type QuotaUpsertRequest struct {
	Quotas []*state.QuotaSpec
}

// Check validates every spec.
func (req *QuotaUpsertRequest) Check() error {
	if len(req.Quotas) == 0 {
		return state.Invalidf("Quotas", "no quota specification")
	}
	for i, q := range req.Quotas {
		if err := q.Validate(); err != nil {
			return state.Invalidf(state.Fieldf("Quotas", i, ""), "%v", err)
		}
	}
	return nil
}

// QuotaDeleteRequest deletes quota specifications, all or none: it fails
// when one is unknown or still named by a namespace.
type QuotaDeleteRequest struct {
	Names []string
}

// Check refuses an empty request.
func (req *QuotaDeleteRequest) Check() error {
	if len(req.Names) == 0 {
		return state.Invalidf("Names", "no quota name")
	}
	return nil
}

func applyQuotaUpsert(t *writeTxn, req *QuotaUpsertRequest) (any, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	for _, q := range req.Quotas {
		old, err := first[*state.QuotaSpec](nil, t.Txn, TableQuotas, indexID, q.Name)
		if err != nil {
			return nil, err
		}
		next := q.Copy()
		next.CreateIndex, next.ModifyIndex = t.index, t.index
		if old != nil {
			next.CreateIndex = old.CreateIndex
		}
		if err := t.insert(TableQuotas, next); err != nil {
			return nil, err
		}
		if old == nil {
			// No namespace can name a quota that does not exist yet.
			if err := t.insert(TableQuotaUsage, &quotaUsage{Name: q.Name}); err != nil {
				return nil, err
			}
		}
	}
	return nil, nil
}

func applyQuotaDelete(t *writeTxn, req *QuotaDeleteRequest) (any, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	nss, err := list[*state.Namespace](nil, t.Txn, nil, TableNamespaces, indexID)
	if err != nil {
		return nil, err
	}
	for i, name := range req.Names {
		q, err := first[*state.QuotaSpec](nil, t.Txn, TableQuotas, indexID, name)
		if err != nil {
			return nil, err
		}
		if q == nil {
			return nil, state.NotFoundf("quota %q not found", name)
		}
		for _, ns := range nss {
			if ns.Quota == name {
				return nil, state.Conflictf("quota %q (Names[%d]) is used by namespace %q", name, i, ns.Name)
			}
		}
		if err := t.delete(TableQuotas, q); err != nil {
			return nil, err
		}
		if u, err := first[*quotaUsage](nil, t.Txn, TableQuotaUsage, indexID, name); err != nil {
			return nil, err
		} else if u != nil {
			if err := t.delete(TableQuotaUsage, u); err != nil {
				return nil, err
			}
		}
	}
	return nil, nil
}

// quotaOfNamespace returns the quota namespace ns names ("" for none),
// remembered for the rest of the command: namespaces do not change in a
// command that writes allocations.
func (t *writeTxn) quotaOfNamespace(ns string) (string, error) {
	if q, ok := t.quotaOf[ns]; ok {
		return q, nil
	}
	n, err := first[*state.Namespace](nil, t.Txn, TableNamespaces, indexID, ns)
	if err != nil {
		return "", err
	}
	q := ""
	if n != nil {
		q = n.Quota
	}
	if t.quotaOf == nil {
		t.quotaOf = map[string]string{}
	}
	t.quotaOf[ns] = q
	return q, nil
}

// trackQuota moves the quota usage of one allocation from old to new
// (either may be nil): nothing for a namespace without a quota, one row
// lookup and an in-place change otherwise.
func (t *writeTxn) trackQuota(old, new *state.Allocation) error {
	a := new
	if a == nil {
		a = old
	}
	oldLive, newLive := old != nil && !old.Terminal(), new != nil && !new.Terminal()
	if !oldLive && !newLive {
		return nil
	}
	q, err := t.quotaOfNamespace(a.Namespace)
	if err != nil || q == "" {
		return err
	}
	var delta state.QuotaResources
	if oldLive {
		delta.Add(old, -1)
	}
	if newLive {
		delta.Add(new, +1)
	}
	if delta == (state.QuotaResources{}) {
		return nil
	}
	return t.addQuotaUsage(q, delta)
}

// addQuotaUsage adds delta to quota q's usage row: copied and written on
// the command's first change of it, changed in place afterwards (nobody
// sees it before the command commits).
func (t *writeTxn) addQuotaUsage(q string, delta state.QuotaResources) error {
	row, mine := t.quotaRows[q]
	if !mine {
		old, err := first[*quotaUsage](nil, t.Txn, TableQuotaUsage, indexID, q)
		if err != nil {
			return err
		}
		row = &quotaUsage{Name: q}
		if old != nil {
			*row = *old
		}
		if t.quotaRows == nil {
			t.quotaRows = map[string]*quotaUsage{}
		}
		t.quotaRows[q] = row
		if err := t.Insert(TableQuotaUsage, row); err != nil {
			return fmt.Errorf("insert into %s: %w", TableQuotaUsage, err)
		}
		t.touched[TableQuotaUsage] = true
	}
	row.Used = row.Used.Plus(delta)
	return nil
}

// namespaceQuotaUsage adds up what the live allocations of namespace ns
// hold. It walks every allocation: run only when a namespace changes
// quota, which is rare.
func namespaceQuotaUsage(txn *memdb.Txn, ns string) (state.QuotaResources, error) {
	var sum state.QuotaResources
	err := eachAlloc(nil, txn, "", func(a *state.Allocation) bool {
		if a.Namespace == ns {
			sum.Add(a, +1)
		}
		return true
	})
	return sum, err
}

// moveNamespaceQuota moves namespace ns's usage from quota from to quota
// to (either may be ""), when its quota changes.
func (t *writeTxn) moveNamespaceQuota(ns, from, to string) error {
	if from == to {
		return nil
	}
	if to != "" {
		q, err := first[*state.QuotaSpec](nil, t.Txn, TableQuotas, indexID, to)
		if err != nil {
			return err
		}
		if q == nil {
			return state.Invalidf("Quota", "quota %q not found", to)
		}
	}
	sum, err := namespaceQuotaUsage(t.Txn, ns)
	if err != nil {
		return err
	}
	if t.quotaOf != nil {
		delete(t.quotaOf, ns)
	}
	if from != "" {
		if err := t.addQuotaUsage(from, state.QuotaResources{}.Minus(sum)); err != nil {
			return err
		}
	}
	if to != "" {
		return t.addQuotaUsage(to, sum)
	}
	return nil
}

// rebuildQuotaUsage computes the quota usage rows from the allocations
// (after a restore).
func rebuildQuotaUsage(txn *memdb.Txn) error {
	quotas, err := list[*state.QuotaSpec](nil, txn, nil, TableQuotas, indexID)
	if err != nil || len(quotas) == 0 {
		return err
	}
	nss, err := list[*state.Namespace](nil, txn, nil, TableNamespaces, indexID)
	if err != nil {
		return err
	}
	rows := map[string]*quotaUsage{}
	for _, q := range quotas {
		rows[q.Name] = &quotaUsage{Name: q.Name}
	}
	quotaOf := map[string]*quotaUsage{}
	for _, ns := range nss {
		if r := rows[ns.Quota]; r != nil {
			quotaOf[ns.Name] = r
		}
	}
	if len(quotaOf) > 0 {
		err = eachAlloc(nil, txn, "", func(a *state.Allocation) bool {
			if r := quotaOf[a.Namespace]; r != nil {
				r.Used.Add(a, +1)
			}
			return true
		})
		if err != nil {
			return err
		}
	}
	for _, r := range rows {
		if err := txn.Insert(TableQuotaUsage, r); err != nil {
			return err
		}
	}
	return nil
}

// Quotas lists the quota specifications, ordered by name.
func (r reader) Quotas(ws memdb.WatchSet) ([]*state.QuotaSpec, error) {
	return list[*state.QuotaSpec](ws, r.txn(), nil, TableQuotas, indexID)
}

// QuotaByName returns a quota specification, or nil.
func (r reader) QuotaByName(ws memdb.WatchSet, name string) (*state.QuotaSpec, error) {
	return first[*state.QuotaSpec](ws, r.txn(), TableQuotas, indexID, name)
}

// QuotaUsageByName returns a quota's usage beside its limits, or nil when
// the quota does not exist.
func (r reader) QuotaUsageByName(ws memdb.WatchSet, name string) (*state.QuotaUsage, error) {
	txn := r.txn()
	q, err := first[*state.QuotaSpec](ws, txn, TableQuotas, indexID, name)
	if err != nil || q == nil {
		return nil, err
	}
	u, err := first[*quotaUsage](ws, txn, TableQuotaUsage, indexID, name)
	if err != nil {
		return nil, err
	}
	return usageOf(q, u), nil
}

// QuotaUsages lists every quota's usage, ordered by name.
func (r reader) QuotaUsages(ws memdb.WatchSet) ([]*state.QuotaUsage, error) {
	txn := r.txn()
	quotas, err := list[*state.QuotaSpec](ws, txn, nil, TableQuotas, indexID)
	if err != nil {
		return nil, err
	}
	out := make([]*state.QuotaUsage, 0, len(quotas))
	for _, q := range quotas {
		u, err := first[*quotaUsage](ws, txn, TableQuotaUsage, indexID, q.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, usageOf(q, u))
	}
	return out, nil
}

// QuotaOfNamespace returns the quota namespace ns names and what its
// namespaces use now, or nils when it names none: what the scheduler and
// the plan applier check placements against.
func (r reader) QuotaOfNamespace(ws memdb.WatchSet, ns string) (*state.QuotaSpec, state.QuotaResources, error) {
	txn := r.txn()
	n, err := first[*state.Namespace](ws, txn, TableNamespaces, indexID, ns)
	if err != nil || n == nil || n.Quota == "" {
		return nil, state.QuotaResources{}, err
	}
	q, err := first[*state.QuotaSpec](ws, txn, TableQuotas, indexID, n.Quota)
	if err != nil || q == nil {
		return nil, state.QuotaResources{}, err
	}
	u, err := first[*quotaUsage](ws, txn, TableQuotaUsage, indexID, n.Quota)
	if err != nil || u == nil {
		return q, state.QuotaResources{}, err
	}
	return q, u.Used, nil
}

// usageOf builds a quota's usage answer from its spec and usage row.
func usageOf(q *state.QuotaSpec, u *quotaUsage) *state.QuotaUsage {
	out := &state.QuotaUsage{Name: q.Name, Used: map[string]*state.QuotaUsed{},
		CreateIndex: q.CreateIndex, ModifyIndex: q.ModifyIndex}
	var used state.QuotaResources
	if u != nil {
		used = u.Used
	}
	for _, l := range q.Limits {
		if l == nil {
			continue
		}
		e := &state.QuotaUsed{Region: l.Region, Used: used}
		if l.RegionLimit != nil {
			lim := *l.RegionLimit
			e.RegionLimit = &lim
		}
		out.Used[l.Region] = e
	}
	if len(q.Limits) == 0 {
		out.Used[state.DefaultRegion] = &state.QuotaUsed{Region: state.DefaultRegion, Used: used}
	}
	return out
}
