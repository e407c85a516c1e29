package store

import (
	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

// toolVersionByVersion returns the version of family with version string
// version, or nil.
func toolVersionByVersion(ws memdb.WatchSet, txn *memdb.Txn, family, version string) (*mgmt.ToolVersion, error) {
	return first[*mgmt.ToolVersion](ws, txn, TableToolVersions, indexMgFamilyVersion, family, version)
}

// toolVersionUsage counts the users of tv: workspaces for a tool version,
// policy sets for a policy version.
func toolVersionUsage(ws memdb.WatchSet, txn *memdb.Txn, tv *mgmt.ToolVersion) (int, error) {
	if tv.Family == mgmt.VersionFamilyPolicy {
		return countRowsWatch(ws, txn, TablePolicySets, indexMgPolicyVersion, tv.Version)
	}
	return countRowsWatch(ws, txn, TableWorkspaces, indexMgToolVersion, tv.Version)
}

func checkVersionFree(t *writeTxn, family, version, selfID string) error {
	other, err := toolVersionByVersion(nil, t.Txn, family, version)
	if err != nil {
		return err
	}
	if other != nil && other.ID != selfID {
		return state.Invalidf(mgmt.AttrPointer("version"), "%s version %q has already been taken", family, version)
	}
	return nil
}

func applyToolVersionCreate(t *writeTxn, req *ToolVersionCreateRequest) (any, error) {
	if err := mgmt.CheckFamily(req.Family); err != nil {
		return nil, err
	}
	v := &state.ValidationError{}
	mgmt.CheckID(v, "ID", mgmt.PrefixToolVersion, req.ID)
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := req.Attributes.Validate(true); err != nil {
		return nil, err
	}
	if err := requireNewID(t, TableToolVersions, req.ID); err != nil {
		return nil, err
	}
	if err := checkVersionFree(t, req.Family, *req.Attributes.Version, req.ID); err != nil {
		return nil, err
	}
	created := mgmt.Time(req.CreatedAt)
	tv := &mgmt.ToolVersion{ID: req.ID, Family: req.Family, Enabled: true, CreatedAt: created, UpdatedAt: created}
	req.Attributes.Apply(tv)
	stampNew(t, &tv.CreateIndex, &tv.ModifyIndex)
	return tv, t.insert(TableToolVersions, tv)
}

func requireToolVersion(t *writeTxn, family, id string) (*mgmt.ToolVersion, error) {
	if err := mgmt.CheckFamily(family); err != nil {
		return nil, err
	}
	tv, err := getRow[*mgmt.ToolVersion](t, TableToolVersions, id)
	if err != nil {
		return nil, err
	}
	if tv == nil || tv.Family != family {
		return nil, state.NotFoundf("%s version %q not found", family, id)
	}
	return tv, nil
}

func applyToolVersionUpdate(t *writeTxn, req *ToolVersionUpdateRequest) (any, error) {
	old, err := requireToolVersion(t, req.Family, req.ID)
	if err != nil {
		return nil, err
	}
	if err := req.Attributes.Validate(false); err != nil {
		return nil, err
	}
	if nv := req.Attributes.Version; nv != nil && *nv != old.Version {
		if err := checkVersionFree(t, old.Family, *nv, old.ID); err != nil {
			return nil, err
		}
		// Users refer to a version by its string: renaming a used version
		// would silently take it away from them.
		n, err := toolVersionUsage(nil, t.Txn, old)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			return nil, state.Invalidf(mgmt.AttrPointer("version"), "cannot change: %d %s use %s", n, mgmt.UsersNoun(old.Family), old.Version)
		}
	}
	tv := old.Copy()
	req.Attributes.Apply(tv)
	tv.UpdatedAt = mgmt.Time(req.Now)
	tv.ModifyIndex = t.index
	return tv, t.insert(TableToolVersions, tv)
}

func applyToolVersionDelete(t *writeTxn, req *ToolVersionDeleteRequest) (any, error) {
	tv, err := requireToolVersion(t, req.Family, req.ID)
	if err != nil {
		return nil, err
	}
	if tv.Official {
		return nil, state.Invalidf(mgmt.AttrPointer("official"), "%s is an official version and cannot be deleted", tv.Version)
	}
	n, err := toolVersionUsage(nil, t.Txn, tv)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		return nil, state.Invalidf(mgmt.AttrPointer("usage"), "%s is used by %d %s and cannot be deleted", tv.Version, n, mgmt.UsersNoun(tv.Family))
	}
	return nil, t.delete(TableToolVersions, tv)
}
