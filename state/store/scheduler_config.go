package store

import (
	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
)

// TableSchedulerConfig holds the one scheduler configuration. It is
// persisted in snapshots: never rename it.
const TableSchedulerConfig = "scheduler_config"

// schedulerConfigID is the key of the table's one row.
const schedulerConfigID = "scheduler"

// SchedulerConfigSetRequestType writes the scheduler configuration (range
// 50-59, cluster and operator; see commands.go).
const SchedulerConfigSetRequestType MessageType = 50

// schedulerConfigRow is the table's row: the configuration under its key.
type schedulerConfigRow struct {
	ID     string
	Config *state.SchedulerConfiguration
}

func schedulerConfigTable() tableDef {
	return tableDef{
		name: TableSchedulerConfig,
		indexes: map[string]keyFunc{
			indexID: func(o any) []any { return []any{o.(*schedulerConfigRow).ID} },
		},
		newRow: func() any { return new(schedulerConfigRow) },
	}
}

// SchedulerConfigSetRequest replaces the scheduler configuration. With CAS
// it is a check-and-set: it applies only when the stored configuration's
// ModifyIndex equals CASIndex (0: only when none was ever written), and
// otherwise changes nothing and answers Updated false.
type SchedulerConfigSetRequest struct {
	Config   *state.SchedulerConfiguration
	CAS      bool
	CASIndex uint64
}

// SchedulerConfigSetResponse is what Apply answers for a
// SchedulerConfigSetRequest.
type SchedulerConfigSetResponse struct {
	Updated bool
}

// Check implements Checker.
func (req *SchedulerConfigSetRequest) Check() error {
	if req.Config == nil {
		return state.Invalidf("Config", "missing scheduler configuration")
	}
	return req.Config.Validate()
}

// SchedulerConfig returns the scheduler configuration: the one written
// last, or DefaultSchedulerConfiguration (indexes 0) when none was. The
// answer is the store's: do not change it.
func (r reader) SchedulerConfig(ws memdb.WatchSet) (*state.SchedulerConfiguration, error) {
	row, err := first[*schedulerConfigRow](ws, r.txn(), TableSchedulerConfig, indexID, schedulerConfigID)
	if err != nil {
		return nil, err
	}
	if row == nil || row.Config == nil {
		return state.DefaultSchedulerConfiguration(), nil
	}
	return row.Config, nil
}

// applySchedulerConfigSet writes the configuration (see
// SchedulerConfigSetRequest).
func applySchedulerConfigSet(t *writeTxn, req *SchedulerConfigSetRequest) (any, error) {
	old, err := first[*schedulerConfigRow](nil, t.Txn, TableSchedulerConfig, indexID, schedulerConfigID)
	if err != nil {
		return nil, err
	}
	if req.CAS {
		var have uint64
		if old != nil && old.Config != nil {
			have = old.Config.ModifyIndex
		}
		if have != req.CASIndex {
			return &SchedulerConfigSetResponse{Updated: false}, nil
		}
	}
	c := req.Config.Copy()
	c.Canonicalize()
	c.CreateIndex, c.ModifyIndex = t.index, t.index
	if old != nil && old.Config != nil {
		c.CreateIndex = old.Config.CreateIndex
	}
	if err := t.insert(TableSchedulerConfig, &schedulerConfigRow{ID: schedulerConfigID, Config: c}); err != nil {
		return nil, err
	}
	return &SchedulerConfigSetResponse{Updated: true}, nil
}
