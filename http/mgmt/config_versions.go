package mgmt

import (
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// Configuration versions: the first step of runs executed by sched
// (docs/terraform.md). A version is created pending with an upload URL;
// the PUT of a gzipped tarball to it (checked: size, entries, paths that
// stay inside) stores the archive and marks it uploaded. Runs do not
// execute yet, so nothing consumes them.

const (
	typeConfigurationVersions = "configuration-versions"
	pathConfigUpload          = "/upload"
	pathConfigDownload        = "/download"
)

// configVersionRoutes registers configuration versions.
func (m *router) configVersionRoutes() {
	s := terraformAPI{m.s}
	m.handle(http.MethodPost, "/workspaces/:workspace/configuration-versions", s.workspaceByID(s.configVersionCreate))
	m.handle(http.MethodGet, "/workspaces/:workspace/configuration-versions", s.workspaceByID(s.configVersionList))
	m.handle(http.MethodGet, "/configuration-versions/:cv", s.configVersionShow)
	m.handle(http.MethodGet, "/configuration-versions/:cv"+pathConfigDownload, s.configVersionDownload)
	s.mount(http.MethodPut, apiPrefix+"/configuration-versions/:cv"+pathConfigUpload, m.configUploadRoute())
}

// configVersionCreate serves POST /workspaces/:id/configuration-versions
// (runs plan permission): attributes auto-queue-runs (default true),
// speculative and provisional, all optional. 201 with the upload URL.
func (s terraformAPI) configVersionCreate(w http.ResponseWriter, r *http.Request, c *call, ws workspaceCtx) (result, error) {
	if !ws.pa.CanQueueRuns() {
		return result{}, forbidden("not allowed to create configuration versions in workspace %q", ws.w.ID)
	}
	o, err := readOptionalResource(r, jsonapi.Expect{Type: typeConfigurationVersions})
	if err != nil {
		return result{}, err
	}
	cv := &mgmt.ConfigurationVersion{ID: s.newID(mgmt.PrefixConfigurationVersion), WorkspaceID: ws.w.ID,
		AutoQueueRuns: true, UploadSecret: uploadSecret(), CreatedBy: lockHolder(c), CreatedAt: s.now()}
	if o != nil {
		for _, f := range []struct {
			name string
			dst  *bool
		}{{"auto-queue-runs", &cv.AutoQueueRuns}, {"speculative", &cv.Speculative}, {"provisional", &cv.Provisional}} {
			if v := o.Attrs.Bool(f.name); v != nil {
				*f.dst = *v
			}
		}
		if err := o.Err(); err != nil {
			return result{}, err
		}
	}
	resp, err := s.propose(w, r, store.ConfigurationVersionCreateRequestType, &store.ConfigurationVersionCreateRequest{ConfigurationVersion: cv})
	if err != nil {
		return result{}, err
	}
	return created(jsonapi.One(configVersionResource(r, resp.(*mgmt.ConfigurationVersion), true)))
}

// visibleConfigVersion loads a configuration version of a workspace the
// caller can see, or a 404.
func (s terraformAPI) visibleConfigVersion(c *call, id string) (*mgmt.ConfigurationVersion, workspaceCtx, error) {
	cv, err := s.store.ConfigurationVersionByID(nil, id)
	if err != nil {
		return nil, workspaceCtx{}, err
	}
	if cv == nil {
		return nil, workspaceCtx{}, notFound("configuration version", id)
	}
	ws, err := s.visibleWorkspace(c, cv.WorkspaceID)
	if err != nil {
		return nil, workspaceCtx{}, notFound("configuration version", id)
	}
	return cv, ws, nil
}

func (s terraformAPI) configVersionShow(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	cv, _, err := s.visibleConfigVersion(c, p.ByName("cv"))
	if err != nil {
		return result{}, err
	}
	return ok(jsonapi.One(configVersionResource(r, cv, false)))
}

func (s terraformAPI) configVersionList(w http.ResponseWriter, r *http.Request, c *call, ws workspaceCtx) (result, error) {
	page, err := pageOf(r)
	if err != nil {
		return result{}, err
	}
	cvs, err := s.store.ConfigurationVersionsByWorkspace(nil, ws.w.ID)
	if err != nil {
		return result{}, err
	}
	return pageDoc(r, page, cvs, func(cv *mgmt.ConfigurationVersion) *jsonapi.Resource { return configVersionResource(r, cv, false) })
}

// configVersionDownload serves the archive to a caller who may queue runs.
func (s terraformAPI) configVersionDownload(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	cv, ws, err := s.visibleConfigVersion(c, p.ByName("cv"))
	if err != nil {
		return result{}, err
	}
	if !ws.pa.CanQueueRuns() {
		return result{}, forbidden("not allowed to read the configurations of workspace %q", ws.w.ID)
	}
	blob, err := s.store.StateBlob(nil, cv.ArchiveSHA256)
	if err != nil {
		return result{}, err
	}
	if blob == nil {
		return result{}, notFound("archive of configuration version", cv.ID)
	}
	return result{status: http.StatusOK, raw: blob.Data, rawType: "application/gzip"}, nil
}

// configUploadRoute serves the upload URL: authorized by the version's
// secret (go-tfe PUTs without its token) or by a token that may queue
// runs in the workspace.
func (m *router) configUploadRoute() httprouter.Handle {
	s := terraformAPI{m.s}
	withToken := m.wrap(func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
		cv, ws, err := s.visibleConfigVersion(c, p.ByName("cv"))
		if err != nil {
			return result{}, err
		}
		if !ws.pa.CanQueueRuns() {
			return result{}, forbidden("not allowed to upload configurations to workspace %q", ws.w.ID)
		}
		return s.configUpload(w, r, cv)
	})
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		secret := r.URL.Query().Get(uploadSecretParam)
		if secret == "" || s.RequestToken(r) != "" {
			withToken(w, r, p)
			return
		}
		res, err := func() (result, error) {
			if err := m.limiter.admit(w, "addr:"+remoteHost(r)); err != nil {
				return result{}, err
			}
			id := p.ByName("cv")
			cv, err := s.store.ConfigurationVersionByID(nil, id)
			if err != nil {
				return result{}, err
			}
			if cv == nil || cv.UploadSecret == "" || subtle.ConstantTimeCompare([]byte(cv.UploadSecret), []byte(secret)) != 1 {
				return result{}, notFound("configuration version", id)
			}
			return s.configUpload(w, r, cv)
		}()
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		_ = jsonapi.Write(w, res.status, res.doc)
	}
}

// configUpload checks and stores an archive: 413 over the size limit, 422
// for an archive that is not a gzipped tar or holds a path that escapes.
// A later upload replaces the archive, as TFE's does.
func (s terraformAPI) configUpload(w http.ResponseWriter, r *http.Request, cv *mgmt.ConfigurationVersion) (result, error) {
	limit := mgmt.DefaultMaxConfigurationBytes
	data, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		return result{}, jsonapi.NewError(http.StatusBadRequest, jsonapi.TitleBadRequest, fmt.Sprintf("read request body: %v", err))
	}
	if len(data) > limit {
		return result{}, jsonapi.NewError(http.StatusRequestEntityTooLarge, "request entity too large",
			fmt.Sprintf("the configuration archive is over the limit of %d bytes", limit))
	}
	if err := mgmt.CheckConfigurationArchive(data); err != nil {
		return result{}, uploadInvalid([]string{"the configuration archive " + err.Error()})
	}
	if _, err := s.propose(w, r, store.ConfigurationVersionUploadRequestType,
		&store.ConfigurationVersionUploadRequest{ID: cv.ID, Archive: data, Now: s.now()}); err != nil {
		return result{}, err
	}
	return result{status: http.StatusOK}, nil
}

// configVersionResource renders a configuration version; the upload URL,
// which carries its secret, only in the answer to its creator (as TFE:
// reads do not show it), while it awaits its archive.
func configVersionResource(r *http.Request, cv *mgmt.ConfigurationVersion, writer bool) *jsonapi.Resource {
	self := apiPrefix + "/configuration-versions/" + url.PathEscape(cv.ID)
	var upload any
	if writer && cv.Status == mgmt.ConfigurationPending && cv.UploadSecret != "" {
		upload = strings.TrimSuffix(jsonapi.BaseURL(r), r.URL.EscapedPath()) + self + pathConfigUpload + "?" + uploadSecretParam + "=" + cv.UploadSecret
	}
	ts := map[string]any{}
	if !cv.UploadedAt.IsZero() {
		ts["uploaded-at"] = jsonapi.Time(cv.UploadedAt)
	}
	return &jsonapi.Resource{
		ID:   cv.ID,
		Type: typeConfigurationVersions,
		Attributes: map[string]any{
			"auto-queue-runs":   cv.AutoQueueRuns,
			"speculative":       cv.Speculative,
			"provisional":       cv.Provisional,
			"status":            cv.Status,
			"source":            "tfe-api",
			"size":              cv.Size,
			"error":             nil,
			"error-message":     nil,
			"upload-url":        upload,
			"status-timestamps": ts,
			"created-at":        jsonapi.Time(cv.CreatedAt),
		},
		Relationships: map[string]*jsonapi.Relationship{
			"workspace": jsonapi.ToOne(typeWorkspaces, cv.WorkspaceID),
		},
		Links: map[string]string{"self": self, "download": self + pathConfigDownload},
	}
}
