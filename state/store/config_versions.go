package store

import (
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

// Configuration versions of workspaces (the Terraform configuration a run
// plans). The uploaded archive is a blob of state_blobs, counted as state
// files are (state_versions.go).

// TableConfigurationVersions holds configuration versions. Persisted in
// snapshots: never rename.
const TableConfigurationVersions = "configuration_versions"

// Command types of configuration versions (range 120-126).
const (
	ConfigurationVersionCreateRequestType MessageType = 120
	ConfigurationVersionUploadRequestType MessageType = 121
)

// ConfigurationVersionCreateRequest records a pending configuration
// version, with the ID, time and upload secret the leader chose.
type ConfigurationVersionCreateRequest struct {
	ConfigurationVersion *mgmt.ConfigurationVersion
}

// ConfigurationVersionUploadRequest stores the archive of a configuration
// version (checked by the leader with mgmt.CheckConfigurationArchive) and
// marks it uploaded; a later upload replaces the archive, as TFE's upload
// URL takes one again (nothing consumes archives yet).
type ConfigurationVersionUploadRequest struct {
	ID      string
	Archive []byte
	Now     time.Time
}

// Check bounds the archive.
func (r *ConfigurationVersionUploadRequest) Check() error {
	if len(r.Archive) == 0 {
		return state.Invalidf("Archive", "is empty")
	}
	if len(r.Archive) > mgmt.HardMaxStateBytes {
		return state.Invalidf("Archive", "%d bytes is over the limit of %d", len(r.Archive), mgmt.HardMaxStateBytes)
	}
	return nil
}

func configVersionTableDefs() []tableDef {
	return []tableDef{{
		name: TableConfigurationVersions,
		indexes: map[string]keyFunc{
			indexID: func(o any) []any { return []any{o.(*mgmt.ConfigurationVersion).ID} },
			indexMgWorkspace: func(o any) []any {
				v := o.(*mgmt.ConfigurationVersion)
				return []any{v.WorkspaceID, v.CreateIndex}
			},
		},
		newRow: func() any { return new(mgmt.ConfigurationVersion) },
	}}
}

func applyConfigurationVersionCreate(t *writeTxn, req *ConfigurationVersionCreateRequest) (any, error) {
	in := req.ConfigurationVersion
	if in == nil {
		return nil, state.Invalidf("/data", "missing configuration version")
	}
	v := &state.ValidationError{}
	mgmt.CheckID(v, "ID", mgmt.PrefixConfigurationVersion, in.ID)
	if err := v.Err(); err != nil {
		return nil, err
	}
	w, err := requireWorkspace(t, in.WorkspaceID)
	if err != nil {
		return nil, err
	}
	if err := requireNewID(t, TableConfigurationVersions, in.ID); err != nil {
		return nil, err
	}
	cv := &mgmt.ConfigurationVersion{ID: in.ID, WorkspaceID: w.ID, OrganizationName: w.OrganizationName,
		Status: mgmt.ConfigurationPending, AutoQueueRuns: in.AutoQueueRuns, Speculative: in.Speculative,
		Provisional: in.Provisional, UploadSecret: in.UploadSecret, CreatedBy: in.CreatedBy, CreatedAt: mgmt.Time(in.CreatedAt)}
	stampNew(t, &cv.CreateIndex, &cv.ModifyIndex)
	return cv, t.insert(TableConfigurationVersions, cv)
}

func applyConfigurationVersionUpload(t *writeTxn, req *ConfigurationVersionUploadRequest) (any, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	old, err := mustGetRow[mgmt.ConfigurationVersion](t, TableConfigurationVersions, "configuration version", req.ID)
	if err != nil {
		return nil, err
	}
	cv := *old
	if err := dropBlobRef(t, old.ArchiveSHA256); err != nil {
		return nil, err
	}
	if cv.ArchiveSHA256, err = addBlobRef(t, req.Archive); err != nil {
		return nil, err
	}
	cv.Size = int64(len(req.Archive))
	cv.Status = mgmt.ConfigurationUploaded
	cv.UploadedAt = mgmt.Time(req.Now)
	cv.ModifyIndex = t.index
	return &cv, t.insert(TableConfigurationVersions, &cv)
}

// deleteConfigurationVersions deletes a workspace's configuration
// versions and their references to blobs.
func deleteConfigurationVersions(t *writeTxn, workspaceID string) error {
	cvs, err := list[*mgmt.ConfigurationVersion](nil, t.Txn, nil, TableConfigurationVersions, indexMgWorkspace, workspaceID)
	if err != nil {
		return err
	}
	for _, cv := range cvs {
		if err := dropBlobRef(t, cv.ArchiveSHA256); err != nil {
			return err
		}
		if err := t.delete(TableConfigurationVersions, cv); err != nil {
			return err
		}
	}
	return nil
}

// ConfigurationVersionByID returns a configuration version, or nil.
func (r reader) ConfigurationVersionByID(ws memdb.WatchSet, id string) (*mgmt.ConfigurationVersion, error) {
	return first[*mgmt.ConfigurationVersion](ws, r.txn(), TableConfigurationVersions, indexID, id)
}

// ConfigurationVersionsByWorkspace lists a workspace's configuration
// versions, newest first.
func (r reader) ConfigurationVersionsByWorkspace(ws memdb.WatchSet, workspaceID string) ([]*mgmt.ConfigurationVersion, error) {
	return newestFirst[*mgmt.ConfigurationVersion](ws, r.txn(), TableConfigurationVersions, indexMgWorkspace, workspaceID)
}
