package store

import (
	"encoding/binary"
	"fmt"

	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
)

// Table names. They are persisted in snapshots: never rename one.
const (
	TableIndex                = "index"
	TableJobs                 = "jobs"
	TableJobVersion           = "job_version"
	TableJobSubmission        = "job_submission"
	TableJobSummary           = "job_summary"
	TableEvals                = "evals"
	TableAllocs               = "allocs"
	TableDeployment           = "deployment"
	TableNodes                = "nodes"
	TableNodePools            = "node_pools"
	TableNamespaces           = "namespaces"
	TableServiceRegistrations = "service_registrations"
	TableScalingEvents        = "scaling_event"
)

// Index names shared by several tables.
const (
	indexID        = "id"
	indexJob       = "job"
	indexNamespace = "namespace"
	indexNode      = "node"
	indexAlloc     = "alloc"
	indexService   = "service"
	indexModify    = "modify"
)

// tableDef is everything the store needs to know about one table: its
// memdb indexes and how to make an empty row for Restore. Adding a table
// (ACL tokens, organizations, workspaces, ...) is one more entry in
// tableDefs; schema building, snapshot and restore iterate this list and
// need no change.
type tableDef struct {
	name string
	// indexes maps index name to the key parts of a row. The "id" index is
	// the unique primary key; the others are non-unique.
	indexes map[string]keyFunc
	// newRow returns a pointer to a zero row, for decoding snapshots.
	newRow func() any
	// derived tables are computed from the others: not persisted in
	// snapshots, rebuilt on restore (node_usage.go).
	derived bool
}

// tableDefs lists every table. The order is the snapshot order. Later areas
// append their tables from their own files.
func tableDefs() []tableDef {
	defs := coreTableDefs()
	defs = append(defs, childTables()...)
	defs = append(defs, aclTables()...)
	defs = append(defs, clusterTables()...)
	defs = append(defs, managementTables()...)
	defs = append(defs, deploymentTables()...)
	defs = append(defs, quotaTables()...)
	defs = append(defs, derivedTables()...)
	return defs
}

// coreTableDefs are the tables of the jobs API.
func coreTableDefs() []tableDef {
	return []tableDef{
		{
			name:    TableIndex,
			indexes: map[string]keyFunc{indexID: func(o any) []any { return []any{o.(*indexEntry).Key} }},
			newRow:  func() any { return new(indexEntry) },
		},
		{
			name: TableNamespaces,
			indexes: map[string]keyFunc{
				indexID: func(o any) []any { return []any{o.(*state.Namespace).Name} },
			},
			newRow: func() any { return new(state.Namespace) },
		},
		{
			name: TableNodePools,
			indexes: map[string]keyFunc{
				indexID: func(o any) []any { return []any{o.(*state.NodePool).Name} },
			},
			newRow: func() any { return new(state.NodePool) },
		},
		{
			name: TableNodes,
			indexes: map[string]keyFunc{
				indexID: func(o any) []any { return []any{o.(*state.Node).ID} },
			},
			newRow: func() any { return new(state.Node) },
		},
		{
			name: TableJobs,
			indexes: map[string]keyFunc{
				indexID:        func(o any) []any { j := o.(*state.Job); return []any{j.Namespace, j.ID} },
				indexNamespace: func(o any) []any { return []any{o.(*state.Job).Namespace} },
			},
			newRow: func() any { return new(state.Job) },
		},
		{
			name: TableJobVersion,
			indexes: map[string]keyFunc{
				indexID: func(o any) []any { j := o.(*state.Job); return []any{j.Namespace, j.ID, j.Version} },
			},
			newRow: func() any { return new(state.Job) },
		},
		{
			name: TableJobSubmission,
			indexes: map[string]keyFunc{
				indexID: func(o any) []any {
					s := o.(*state.JobSubmission)
					return []any{s.Namespace, s.JobID, s.Version}
				},
			},
			newRow: func() any { return new(state.JobSubmission) },
		},
		{
			name: TableJobSummary,
			indexes: map[string]keyFunc{
				indexID: func(o any) []any { s := o.(*state.JobSummary); return []any{s.Namespace, s.JobID} },
			},
			newRow: func() any { return new(state.JobSummary) },
		},
		{
			name: TableEvals,
			indexes: map[string]keyFunc{
				indexID:  func(o any) []any { return []any{o.(*state.Evaluation).ID} },
				indexJob: func(o any) []any { e := o.(*state.Evaluation); return []any{e.Namespace, e.JobID} },
				// ModifyIndex then ID: the leader's eval feed reads what
				// changed after an index without listing every evaluation.
				indexModify: func(o any) []any { e := o.(*state.Evaluation); return []any{e.ModifyIndex, e.ID} },
			},
			newRow: func() any { return new(state.Evaluation) },
		},
		// Buckets of allocations, not a row per allocation
		// (alloc_table.go); the lookups by node and by job (and through
		// the job, by evaluation) are derived tables (alloc_lists.go).
		allocTableDef(),
		{
			name: TableDeployment,
			indexes: map[string]keyFunc{
				indexID:  func(o any) []any { return []any{o.(*state.Deployment).ID} },
				indexJob: func(o any) []any { d := o.(*state.Deployment); return []any{d.Namespace, d.JobID} },
			},
			newRow: func() any { return new(state.Deployment) },
		},
		{
			name: TableServiceRegistrations,
			indexes: map[string]keyFunc{
				indexID: func(o any) []any { return []any{o.(*state.ServiceRegistration).ID} },
				indexService: func(o any) []any {
					s := o.(*state.ServiceRegistration)
					return []any{s.Namespace, s.ServiceName}
				},
				indexJob: func(o any) []any {
					s := o.(*state.ServiceRegistration)
					return []any{s.Namespace, s.JobID}
				},
				indexAlloc: func(o any) []any { return []any{o.(*state.ServiceRegistration).AllocID} },
				indexNode:  func(o any) []any { return []any{o.(*state.ServiceRegistration).NodeID} },
			},
			newRow: func() any { return new(state.ServiceRegistration) },
		},
	}
}

// tableDefByName returns the definition of the named table.
func tableDefByName(name string) (tableDef, bool) {
	for _, d := range tableDefs() {
		if d.name == name {
			return d, true
		}
	}
	return tableDef{}, false
}

// dbSchema builds the memdb schema from tableDefs.
func dbSchema() *memdb.DBSchema {
	s := &memdb.DBSchema{Tables: make(map[string]*memdb.TableSchema)}
	for _, d := range tableDefs() {
		ts := &memdb.TableSchema{Name: d.name, Indexes: make(map[string]*memdb.IndexSchema)}
		for name, fn := range d.indexes {
			ts.Indexes[name] = &memdb.IndexSchema{
				Name:    name,
				Unique:  name == indexID,
				Indexer: keyIndexer{parts: fn},
			}
		}
		s.Tables[d.name] = ts
	}
	return s
}

// indexEntry is a row of the index table: the Raft index of the last write
// to table Key. Blocking reads compare it with the index a client has seen.
type indexEntry struct {
	Key   string
	Value uint64
}

// keyFunc returns the key parts of a row for one index, each a string or a
// uint64.
type keyFunc func(obj any) []any

// prefixArg marks the last argument of a "_prefix" lookup as a partial
// string: rows whose key part merely starts with it match. Without it, every
// argument of a prefix lookup matches whole parts, so ("default", "web")
// finds the versions of job "web" and not those of "web2".
type prefixArg string

// keyIndexer encodes composite keys that sort like their parts: each string
// is followed by a 0 byte (IDs never contain one, so "a" sorts before "a-b")
// and each uint64 is 8 big-endian bytes (so versions sort numerically).
type keyIndexer struct {
	parts keyFunc
}

var (
	_ memdb.SingleIndexer = keyIndexer{}
	_ memdb.PrefixIndexer = keyIndexer{}
)

// FromObject implements memdb.SingleIndexer.
func (k keyIndexer) FromObject(obj any) (bool, []byte, error) {
	key, err := encodeKey(k.parts(obj), false)
	if err != nil {
		return false, nil, err
	}
	return true, key, nil
}

// FromArgs implements memdb.Indexer: an exact key.
func (k keyIndexer) FromArgs(args ...any) ([]byte, error) {
	return encodeKey(args, false)
}

// PrefixFromArgs implements memdb.PrefixIndexer: the leading parts of a key,
// the last of which may be a prefixArg.
func (k keyIndexer) PrefixFromArgs(args ...any) ([]byte, error) {
	return encodeKey(args, true)
}

func encodeKey(parts []any, allowPrefix bool) ([]byte, error) {
	// Sized first: one allocation per key, not one per part appended (a
	// lookup by ID is made for every node a placement ranks).
	n := 0
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			n += len(v) + 1
		case uint64:
			n += 8
		case prefixArg:
			n += len(v)
		}
	}
	var key []byte
	if n > 0 {
		key = make([]byte, 0, n)
	}
	for i, p := range parts {
		switch v := p.(type) {
		case string:
			key = append(key, v...)
			key = append(key, 0)
		case uint64:
			key = binary.BigEndian.AppendUint64(key, v)
		case prefixArg:
			if !allowPrefix || i != len(parts)-1 {
				return nil, fmt.Errorf("prefix argument must be the last one of a prefix lookup")
			}
			key = append(key, v...)
		default:
			return nil, fmt.Errorf("unsupported key part %T", p)
		}
	}
	return key, nil
}
