package store

import (
	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

// The bytes of state versions (docs/terraform.md, "Where state lives").
// A state file and its JSON rendering are StateBlob rows keyed by their
// SHA-256, so they travel through raft with the command that creates
// their version, are in every snapshot, and are shared by versions with
// the same content; a blob counts the versions naming it and is deleted
// with the last. Outputs are rows of their own, found by ID (go-tfe's
// /state-version-outputs/:id) and by version.

// Tables of state version bytes and outputs. They are persisted in
// snapshots: never rename one.
const (
	TableStateBlobs          = "state_blobs"
	TableStateVersionOutputs = "state_version_outputs"
)

// indexMgStateVersion: outputs of one state version, by name.
const indexMgStateVersion = "state_version"

// StateVersionUploadRequestType stores the bytes of a pending state
// version (the PUT of its upload URL). Range 94-99 of the management API.
const StateVersionUploadRequestType MessageType = 94

// Upload kinds of StateVersionUploadRequest.
const (
	UploadState     = "state"
	UploadJSONState = "json-state"
)

// StateVersionUploadRequest stores the state file (Kind state) or the
// JSON state (Kind json-state) of a state version created without it. The
// state file finalizes the version: it must agree with the version's
// serial and lineage (the leader checks; Apply checks succession again)
// and it becomes the workspace's current state. Outputs, when set, are
// the outputs read from the file, for a version created without
// json-state-outputs.
type StateVersionUploadRequest struct {
	ID      string
	Kind    string
	Data    []byte
	Outputs []*mgmt.StateVersionOutput
}

// Check bounds the upload.
func (r *StateVersionUploadRequest) Check() error {
	if r.Kind != UploadState && r.Kind != UploadJSONState {
		return state.Invalidf("Kind", "%q is not state or json-state", r.Kind)
	}
	if len(r.Data) > mgmt.HardMaxStateBytes {
		return state.Invalidf("Data", "%d bytes is over the limit of %d", len(r.Data), mgmt.HardMaxStateBytes)
	}
	return checkOutputs(r.Outputs)
}

// Check bounds the bytes and outputs a state version carries.
func (r *StateVersionCreateRequest) Check() error {
	if len(r.State) > mgmt.HardMaxStateBytes {
		return state.Invalidf(mgmt.AttrPointer("state"), "%d bytes is over the limit of %d", len(r.State), mgmt.HardMaxStateBytes)
	}
	if len(r.JSONState) > mgmt.HardMaxStateBytes {
		return state.Invalidf(mgmt.AttrPointer("json-state"), "%d bytes is over the limit of %d", len(r.JSONState), mgmt.HardMaxStateBytes)
	}
	return checkOutputs(r.Outputs)
}

func checkOutputs(outs []*mgmt.StateVersionOutput) error {
	if len(outs) > mgmt.MaxStateOutputs {
		return state.Invalidf(mgmt.AttrPointer("json-state-outputs"), "%d outputs is over the limit of %d", len(outs), mgmt.MaxStateOutputs)
	}
	for _, o := range outs {
		if o == nil {
			return state.Invalidf(mgmt.AttrPointer("json-state-outputs"), "an output is missing")
		}
	}
	return nil
}

// stateBlobTableDefs are the tables of this file.
func stateBlobTableDefs() []tableDef {
	return []tableDef{
		{
			name: TableStateBlobs,
			indexes: map[string]keyFunc{
				indexID: func(o any) []any { return []any{o.(*mgmt.StateBlob).SHA256} },
			},
			newRow: func() any { return new(mgmt.StateBlob) },
		},
		{
			name: TableStateVersionOutputs,
			indexes: map[string]keyFunc{
				indexID: func(o any) []any { return []any{o.(*mgmt.StateVersionOutput).ID} },
				indexMgStateVersion: func(o any) []any {
					v := o.(*mgmt.StateVersionOutput)
					return []any{v.StateVersionID, v.Name}
				},
			},
			newRow: func() any { return new(mgmt.StateVersionOutput) },
		},
	}
}

// addBlobRef stores data (once per content) and counts one more version
// naming it; it returns the blob's key, "" for no data.
func addBlobRef(t *writeTxn, data []byte) (string, error) {
	if data == nil {
		return "", nil
	}
	sum := mgmt.SHA256Hex(data)
	old, err := getRow[*mgmt.StateBlob](t, TableStateBlobs, sum)
	if err != nil {
		return "", err
	}
	b := &mgmt.StateBlob{SHA256: sum, Data: data, Refs: 1}
	if old != nil {
		c := *old
		c.Refs++
		b = &c
	} else {
		stampNew(t, &b.CreateIndex, &b.ModifyIndex)
	}
	b.ModifyIndex = t.index
	return sum, t.insert(TableStateBlobs, b)
}

// dropBlobRef counts one version less naming blob sum, deleting it with
// the last.
func dropBlobRef(t *writeTxn, sum string) error {
	if sum == "" {
		return nil
	}
	old, err := getRow[*mgmt.StateBlob](t, TableStateBlobs, sum)
	if err != nil || old == nil {
		return err
	}
	if old.Refs <= 1 {
		return t.delete(TableStateBlobs, old)
	}
	c := *old
	c.Refs--
	c.ModifyIndex = t.index
	return t.insert(TableStateBlobs, &c)
}

// insertOutputs records the outputs of state version sv, with the IDs
// derived from its ID and their names.
func insertOutputs(t *writeTxn, sv *mgmt.StateVersion, outs []*mgmt.StateVersionOutput) error {
	for _, in := range outs {
		o := in.Copy()
		o.ID = mgmt.OutputID(sv.ID, o.Name)
		o.StateVersionID, o.WorkspaceID = sv.ID, sv.WorkspaceID
		stampNew(t, &o.CreateIndex, &o.ModifyIndex)
		if err := t.insert(TableStateVersionOutputs, o); err != nil {
			return err
		}
	}
	return nil
}

// deleteStateVersion deletes a state version with its outputs and its
// references to blobs.
func deleteStateVersion(t *writeTxn, sv *mgmt.StateVersion) error {
	outs, err := list[*mgmt.StateVersionOutput](nil, t.Txn, nil, TableStateVersionOutputs, indexMgStateVersion+"_prefix", sv.ID)
	if err != nil {
		return err
	}
	for _, o := range outs {
		if err := t.delete(TableStateVersionOutputs, o); err != nil {
			return err
		}
	}
	for _, sum := range []string{sv.StateSHA256, sv.JSONStateSHA256} {
		if err := dropBlobRef(t, sum); err != nil {
			return err
		}
	}
	return t.delete(TableStateVersions, sv)
}

// currentStateVersion is the workspace's current (finalized) state
// version, or nil.
func currentStateVersion(t *writeTxn, w *mgmt.Workspace) (*mgmt.StateVersion, error) {
	if w.LatestStateVersionID == "" {
		return nil, nil
	}
	return getRow[*mgmt.StateVersion](t, TableStateVersions, w.LatestStateVersionID)
}

// checkSuccession refuses (ErrConflict) a state that may not follow the
// workspace's current one.
func checkSuccession(t *writeTxn, w *mgmt.Workspace, sv *mgmt.StateVersion) error {
	current, err := currentStateVersion(t, w)
	if err != nil {
		return err
	}
	if err := mgmt.CheckStateSuccession(current, sv.Lineage, sv.Serial, sv.Force); err != nil {
		return state.Conflictf("%v", err)
	}
	return nil
}

// storeStateBytes records the bytes and outputs of sv (a copy the caller
// inserts).
func storeStateBytes(t *writeTxn, sv *mgmt.StateVersion, st, js []byte, outs []*mgmt.StateVersionOutput) error {
	var err error
	if st != nil {
		if sv.StateSHA256, err = addBlobRef(t, st); err != nil {
			return err
		}
		sv.StateSize = int64(len(st))
	}
	if js != nil {
		if sv.JSONStateSHA256, err = addBlobRef(t, js); err != nil {
			return err
		}
	}
	return insertOutputs(t, sv, outs)
}

// makeCurrent makes sv its workspace's current state version when it is
// finalized and not older than the current one.
func makeCurrent(t *writeTxn, w *mgmt.Workspace, sv *mgmt.StateVersion) error {
	if !sv.IsFinalized() || (w.LatestStateVersionID != "" && sv.CreatedAt.Before(w.LatestChangeAt)) {
		return nil
	}
	c := w.Copy()
	c.LatestStateVersionID, c.LatestChangeAt = sv.ID, sv.CreatedAt
	c.ModifyIndex = t.index
	return t.insert(TableWorkspaces, c)
}

func applyStateVersionUpload(t *writeTxn, req *StateVersionUploadRequest) (any, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	old, err := mustGetRow[mgmt.StateVersion](t, TableStateVersions, "state version", req.ID)
	if err != nil {
		return nil, err
	}
	w, err := requireWorkspace(t, old.WorkspaceID)
	if err != nil {
		return nil, err
	}
	sv := *old
	sv.ModifyIndex = t.index
	switch req.Kind {
	case UploadState:
		if old.StateSHA256 != "" {
			return nil, state.Conflictf("state version %q already has its state", old.ID)
		}
		if err := checkSuccession(t, w, &sv); err != nil {
			return nil, err
		}
		existing, err := list[*mgmt.StateVersionOutput](nil, t.Txn, nil, TableStateVersionOutputs, indexMgStateVersion+"_prefix", sv.ID)
		if err != nil {
			return nil, err
		}
		outs := req.Outputs
		if len(existing) > 0 {
			outs = nil
		}
		if err := storeStateBytes(t, &sv, req.Data, nil, outs); err != nil {
			return nil, err
		}
		sv.Status = mgmt.StateVersionFinalized
	case UploadJSONState:
		if old.JSONStateSHA256 != "" {
			return nil, state.Conflictf("state version %q already has its JSON state", old.ID)
		}
		if err := storeStateBytes(t, &sv, nil, req.Data, nil); err != nil {
			return nil, err
		}
	}
	if err := t.insert(TableStateVersions, &sv); err != nil {
		return nil, err
	}
	if req.Kind == UploadState {
		if err := makeCurrent(t, w, &sv); err != nil {
			return nil, err
		}
	}
	return &sv, nil
}

// StateBlob returns the blob with key sum, or nil.
func (r reader) StateBlob(ws memdb.WatchSet, sum string) (*mgmt.StateBlob, error) {
	if sum == "" {
		return nil, nil
	}
	return first[*mgmt.StateBlob](ws, r.txn(), TableStateBlobs, indexID, sum)
}

// StateVersionOutputs lists the outputs of a state version by name.
func (r reader) StateVersionOutputs(ws memdb.WatchSet, stateVersionID string) ([]*mgmt.StateVersionOutput, error) {
	return list[*mgmt.StateVersionOutput](ws, r.txn(), nil, TableStateVersionOutputs, indexMgStateVersion+"_prefix", stateVersionID)
}

// StateVersionOutputByID returns an output, or nil.
func (r reader) StateVersionOutputByID(ws memdb.WatchSet, id string) (*mgmt.StateVersionOutput, error) {
	return first[*mgmt.StateVersionOutput](ws, r.txn(), TableStateVersionOutputs, indexID, id)
}

// stateVersionCommand returns this file's command of type t, if any.
func stateVersionCommand(t MessageType) (command, bool) {
	switch t {
	case StateVersionUploadRequestType:
		return handler(applyStateVersionUpload), true
	case ConfigurationVersionCreateRequestType:
		return handler(applyConfigurationVersionCreate), true
	case ConfigurationVersionUploadRequestType:
		return handler(applyConfigurationVersionUpload), true
	}
	return runExecCommand(t) // run_exec.go
}
