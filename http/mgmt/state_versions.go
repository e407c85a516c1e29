package mgmt

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// State versions with their bytes, as Terraform's cloud and remote
// backends use them (docs/terraform.md):
//
//   - POST /workspaces/:id/state-versions with the state file in `state`
//     (base64), and optionally `json-state` and `json-state-outputs`
//     (base64): the version is stored finalized and becomes current.
//     Without `state` it is stored pending, and its hosted-state-upload-url
//     and hosted-json-state-upload-url take the bytes by PUT (go-tfe's
//     StateVersions.Upload); the state's PUT finalizes it.
//   - hosted-state-download-url and hosted-json-state-download-url are
//     API URLs read with the caller's token (state-versions read).
//   - outputs: /state-versions/:id/outputs, /workspaces/:id/current-state-
//     version-outputs (sensitive values null), /state-version-outputs/:id
//     (the value of a sensitive output only with state-versions read).
//
// Every check that can fail does so before anything is proposed: a state
// that is not a state file, over the size limit, or whose serial, lineage
// or md5 disagree with the attributes is a 422 naming the attribute; a
// lineage that differs from the current state's or a serial lower than
// its serial is a 409 (Apply checks them again); a workspace not locked
// by the caller is a 409.

// Paths of a state version's bytes, under its own path.
const (
	pathStateDownload     = "/download"
	pathJSONStateDownload = "/json-download"
	pathStateUpload       = "/upload"
	pathJSONStateUpload   = "/json-upload"
)

// MaxStateBytesLimit is the most Config.MaxStateBytes may be: the request
// body limit (32 MiB) must carry a state in base64.
const MaxStateBytesLimit = mgmt.HardMaxStateBytes

// typeStateVersionOutputs is the JSON:API type of state version outputs.
const typeStateVersionOutputs = "state-version-outputs"

// stateVersionRoutes registers the bytes and outputs of state versions.
func (m *router) stateVersionRoutes() {
	s := terraformAPI{m.s}
	m.handle(http.MethodPost, "/workspaces/:workspace/state-versions", s.workspaceByID(s.stateVersionCreate))
	m.handle(http.MethodGet, "/state-versions/:sv"+pathStateDownload, s.stateVersionDownload(false))
	m.handle(http.MethodGet, "/state-versions/:sv"+pathJSONStateDownload, s.stateVersionDownload(true))
	s.mount(http.MethodPut, apiPrefix+"/state-versions/:sv"+pathStateUpload, m.uploadRoute(store.UploadState))
	s.mount(http.MethodPut, apiPrefix+"/state-versions/:sv"+pathJSONStateUpload, m.uploadRoute(store.UploadJSONState))
	m.handle(http.MethodGet, "/state-versions/:sv/outputs", s.stateVersionOutputs)
	m.handle(http.MethodGet, "/workspaces/:workspace/current-state-version-outputs", s.workspaceByID(s.currentStateVersionOutputs))
	m.handle(http.MethodGet, "/state-version-outputs/:output", s.stateVersionOutput)
}

// maxStateBytes is the configured limit on one state file or JSON state.
func (s terraformAPI) maxStateBytes() int {
	switch n := s.cfg.MaxStateBytes; {
	case n <= 0:
		return mgmt.DefaultMaxStateBytes
	case n > mgmt.HardMaxStateBytes:
		return mgmt.HardMaxStateBytes
	default:
		return n
	}
}

// readBase64 reads a base64 attribute; nil when absent or null.
func readBase64(o *jsonapi.ResourceObject, attr string, limit int) []byte {
	v := o.Attrs.NullableString(attr)
	if v == nil || *v == "" {
		return nil
	}
	if base64.StdEncoding.DecodedLen(len(*v)) > limit+3 {
		o.Attrs.Fail(attr, "%s is %d bytes of base64, over the limit of %d bytes per state", attr, len(*v), limit)
		return nil
	}
	data, err := base64.StdEncoding.DecodeString(*v)
	if err != nil {
		o.Attrs.Fail(attr, "%s is not base64: %v", attr, err)
		return nil
	}
	if len(data) > limit {
		o.Attrs.Fail(attr, "%s is %d bytes, over the limit of %d bytes per state", attr, len(data), limit)
		return nil
	}
	return data
}

// stateVersionCreate serves POST /workspaces/:id/state-versions: serial
// (required), md5, lineage, state, json-state, json-state-outputs, force,
// and optionally the run that wrote it. 201.
func (s terraformAPI) stateVersionCreate(w http.ResponseWriter, r *http.Request, c *call, ws workspaceCtx) (result, error) {
	if !ws.pa.CanWriteStateVersions() {
		return result{}, forbidden("not allowed to create state versions in workspace %q", ws.w.ID)
	}
	o, err := readResource(r, jsonapi.Expect{Type: typeStateVersions})
	if err != nil {
		return result{}, err
	}
	sv := &mgmt.StateVersion{ID: s.newID(mgmt.PrefixStateVersion), WorkspaceID: ws.w.ID,
		CreatedBy: lockHolder(c), CreatedAt: s.now(), UploadSecret: uploadSecret()}
	serial := o.Attrs.Int("serial")
	if serial != nil {
		sv.Serial = int64(*serial)
	} else if !o.Attrs.Has("serial") {
		o.Attrs.Fail("serial", "is required")
	}
	sv.MD5, sv.Lineage = deref(o.Attrs.NullableString("md5")), deref(o.Attrs.NullableString("lineage"))
	if f := o.Attrs.Bool("force"); f != nil {
		sv.Force = *f
	}
	fail := func(attr, format string, args ...any) {
		o.Attrs.Fail(attr, "%s %s", attr, fmt.Sprintf(format, args...))
	}
	limit := s.maxStateBytes()
	st := readBase64(o, "state", limit)
	js := readBase64(o, "json-state", limit)
	jso := readBase64(o, "json-state-outputs", limit)
	if runID, sent := o.ToOne("run", typeRuns); sent {
		sv.RunID = runID
	}
	var outputs []*mgmt.StateVersionOutput
	if jso != nil {
		if outputs, err = mgmt.ParseJSONStateOutputs(jso); err != nil {
			fail("json-state-outputs", "%v", err)
		}
	}
	if js != nil {
		if err := mgmt.CheckJSON(js); err != nil {
			fail("json-state", "%v", err)
		}
	}
	if st == nil {
		sv.Status = mgmt.StateVersionPending
	} else {
		sv.Status = mgmt.StateVersionFinalized
		fileOutputs := checkStateFile(fail, sv, st, serial != nil)
		if jso == nil {
			outputs = fileOutputs
		}
	}
	if err := o.Err(); err != nil {
		return result{}, err
	}
	if err := s.checkSuccession(ws.w, sv); err != nil {
		return result{}, err
	}
	resp, err := s.propose(w, r, store.StateVersionCreateRequestType, &store.StateVersionCreateRequest{
		StateVersion: sv, State: st, JSONState: js, Outputs: outputs})
	if err != nil {
		return result{}, err
	}
	return created(jsonapi.One(s.stateVersionResource(r, resp.(*mgmt.StateVersion), true)))
}

// checkStateFile checks that st is a state file whose MD5 is the
// version's md5 (when sent), reporting problems through fail, and fills
// what the attributes left out (serial, lineage, md5) from the file. As
// in TFE the attributes win over the file: go-tfe's own tests record
// serial 0 and another lineage with a file of serial 5. It returns the
// outputs the file holds.
func checkStateFile(fail func(string, string, ...any), sv *mgmt.StateVersion, st []byte, serialSent bool) []*mgmt.StateVersionOutput {
	info, err := mgmt.ParseStateFile(st)
	if err != nil {
		fail("state", "%v", err)
		return nil
	}
	if !serialSent {
		sv.Serial = info.Serial
	}
	if sv.Lineage == "" {
		sv.Lineage = info.Lineage
	}
	sum := mgmt.MD5Hex(st)
	switch {
	case sv.MD5 == "":
		sv.MD5 = sum
	case sv.MD5 != sum:
		fail("md5", "is %q but the state file's MD5 is %q", sv.MD5, sum)
	}
	sv.TerraformVersion = info.TerraformVersion
	return info.Outputs
}

// checkSuccession answers the 409 of a state that may not follow the
// workspace's current one (Apply checks again, against the state it
// applies to).
func (s terraformAPI) checkSuccession(w *mgmt.Workspace, sv *mgmt.StateVersion) error {
	if w.LatestStateVersionID == "" {
		return nil
	}
	current, err := s.store.StateVersionByID(nil, w.LatestStateVersionID)
	if err != nil {
		return err
	}
	if err := mgmt.CheckStateSuccession(current, sv.Lineage, sv.Serial, sv.Force); err != nil {
		return jsonapi.NewError(http.StatusConflict, jsonapi.TitleConflict, err.Error())
	}
	return nil
}

// visibleStateVersion loads a state version of a workspace the caller can
// see, or a 404.
func (s terraformAPI) visibleStateVersion(c *call, id string) (*mgmt.StateVersion, workspaceCtx, error) {
	sv, err := s.store.StateVersionByID(nil, id)
	if err != nil {
		return nil, workspaceCtx{}, err
	}
	if sv == nil {
		return nil, workspaceCtx{}, notFound("state version", id)
	}
	ws, err := s.visibleWorkspace(c, sv.WorkspaceID)
	if err != nil || !ws.pa.CanReadStateOutputs() {
		return nil, workspaceCtx{}, notFound("state version", id)
	}
	return sv, ws, nil
}

// stateVersionDownload serves the hosted download URLs: the state file
// (or JSON state) as it was uploaded, to a caller with state-versions
// read. A version without those bytes is a 404.
func (s terraformAPI) stateVersionDownload(jsonState bool) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
		sv, ws, err := s.visibleStateVersion(c, p.ByName("sv"))
		if err != nil {
			return result{}, err
		}
		if !ws.pa.CanReadStateVersions() {
			return result{}, forbidden("not allowed to read the state of workspace %q", ws.w.ID)
		}
		sum, what := sv.StateSHA256, "state"
		if jsonState {
			sum, what = sv.JSONStateSHA256, "JSON state"
		}
		blob, err := s.store.StateBlob(nil, sum)
		if err != nil {
			return result{}, err
		}
		if blob == nil {
			return result{}, notFound(what+" of state version", sv.ID)
		}
		return result{status: http.StatusOK, raw: blob.Data, rawType: "application/json"}, nil
	}
}

// uploadSecretParam is the query parameter of an upload URL's secret.
const uploadSecretParam = "upload-secret"

// uploadSecret draws the secret of a new state version's upload URLs.
func uploadSecret() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// uploadRoute serves the hosted upload URLs. go-tfe PUTs to them without
// its token, as it would to TFE's object store: the URL's secret (drawn
// at create, shown only to callers with state-versions write) authorizes
// the upload. A request with a token is judged by the token instead.
func (m *router) uploadRoute(kind string) httprouter.Handle {
	s := terraformAPI{m.s}
	withToken := m.wrap(s.stateVersionUpload(kind))
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		secret := r.URL.Query().Get(uploadSecretParam)
		if secret == "" || s.RequestToken(r) != "" {
			withToken(w, r, p)
			return
		}
		res, err := m.uploadWithSecret(w, r, p, kind, secret)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		_ = jsonapi.Write(w, res.status, res.doc)
	}
}

func (m *router) uploadWithSecret(w http.ResponseWriter, r *http.Request, p httprouter.Params, kind, secret string) (result, error) {
	s := terraformAPI{m.s}
	if err := m.limiter.admit(w, "addr:"+remoteHost(r)); err != nil {
		return result{}, err
	}
	id := p.ByName("sv")
	sv, err := s.store.StateVersionByID(nil, id)
	if err != nil {
		return result{}, err
	}
	if sv == nil || sv.UploadSecret == "" || subtle.ConstantTimeCompare([]byte(sv.UploadSecret), []byte(secret)) != 1 {
		return result{}, notFound("state version", id)
	}
	ws, err := s.store.WorkspaceByID(nil, sv.WorkspaceID)
	if err != nil {
		return result{}, err
	}
	if ws == nil {
		return result{}, notFound("state version", id)
	}
	return s.upload(w, r, sv, ws, kind)
}

// stateVersionUpload serves an upload URL for a caller with a token and
// state-versions write.
func (s terraformAPI) stateVersionUpload(kind string) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
		sv, ws, err := s.visibleStateVersion(c, p.ByName("sv"))
		if err != nil {
			return result{}, err
		}
		if !ws.pa.CanWriteStateVersions() {
			return result{}, forbidden("not allowed to upload state to workspace %q", ws.w.ID)
		}
		return s.upload(w, r, sv, ws.w, kind)
	}
}

// upload stores the raw state file (which finalizes a pending version) or
// JSON state of sv. A second upload of the same kind is a 409.
func (s terraformAPI) upload(w http.ResponseWriter, r *http.Request, sv *mgmt.StateVersion, ws *mgmt.Workspace, kind string) (result, error) {
	limit := s.maxStateBytes()
	data, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		return result{}, jsonapi.NewError(http.StatusBadRequest, jsonapi.TitleBadRequest, fmt.Sprintf("read request body: %v", err))
	}
	if len(data) > limit {
		return result{}, jsonapi.NewError(http.StatusRequestEntityTooLarge, "request entity too large",
			fmt.Sprintf("the %s is over the limit of %d bytes per state", kind, limit))
	}
	req := &store.StateVersionUploadRequest{ID: sv.ID, Kind: kind, Data: data}
	switch kind {
	case store.UploadState:
		if sv.StateSHA256 != "" {
			return result{}, jsonapi.NewError(http.StatusConflict, jsonapi.TitleConflict, fmt.Sprintf("state version %q already has its state", sv.ID))
		}
		var problems []string
		fail := func(attr, format string, args ...any) {
			problems = append(problems, "the uploaded state: "+attr+" "+fmt.Sprintf(format, args...))
		}
		check := *sv
		outs := checkStateFile(fail, &check, data, true)
		if len(problems) > 0 {
			return result{}, uploadInvalid(problems)
		}
		if err := s.checkSuccession(ws, sv); err != nil {
			return result{}, err
		}
		if outs == nil {
			outs = []*mgmt.StateVersionOutput{}
		}
		req.Outputs = outs
	case store.UploadJSONState:
		if sv.JSONStateSHA256 != "" {
			return result{}, jsonapi.NewError(http.StatusConflict, jsonapi.TitleConflict, fmt.Sprintf("state version %q already has its JSON state", sv.ID))
		}
		if err := mgmt.CheckJSON(data); err != nil {
			return result{}, uploadInvalid([]string{"the uploaded JSON state " + err.Error()})
		}
	}
	if _, err := s.propose(w, r, store.StateVersionUploadRequestType, req); err != nil {
		return result{}, err
	}
	return result{status: http.StatusOK}, nil
}

// uploadInvalid is the 422 of an upload body.
func uploadInvalid(problems []string) error {
	errs := make([]*jsonapi.Error, len(problems))
	for i, p := range problems {
		errs[i] = &jsonapi.Error{Title: jsonapi.TitleInvalid, Detail: p}
	}
	return jsonapi.Invalid(errs)
}

// stateVersionOutputs serves GET /state-versions/:id/outputs.
func (s terraformAPI) stateVersionOutputs(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	sv, ws, err := s.visibleStateVersion(c, p.ByName("sv"))
	if err != nil {
		return result{}, err
	}
	return s.outputList(r, sv.ID, ws.pa.CanReadStateVersions())
}

// currentStateVersionOutputs serves GET /workspaces/:id/current-state-
// version-outputs: a 404 while the workspace has no state.
func (s terraformAPI) currentStateVersionOutputs(w http.ResponseWriter, r *http.Request, c *call, ws workspaceCtx) (result, error) {
	if !ws.pa.CanReadStateOutputs() {
		return result{}, forbidden("not allowed to read the state outputs of workspace %q", ws.w.ID)
	}
	if ws.w.LatestStateVersionID == "" {
		return result{}, notFound("current state version of workspace", ws.w.ID)
	}
	return s.outputList(r, ws.w.LatestStateVersionID, false)
}

// outputList lists a version's outputs; sensitive values only when reveal.
func (s terraformAPI) outputList(r *http.Request, svID string, reveal bool) (result, error) {
	page, err := pageOf(r)
	if err != nil {
		return result{}, err
	}
	outs, err := s.store.StateVersionOutputs(nil, svID)
	if err != nil {
		return result{}, err
	}
	return pageDoc(r, page, outs, func(o *mgmt.StateVersionOutput) *jsonapi.Resource { return outputResource(o, reveal) })
}

// stateVersionOutput serves GET /state-version-outputs/:id. A sensitive
// value is shown only to a caller who may read the whole state.
func (s terraformAPI) stateVersionOutput(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	id := p.ByName("output")
	o, err := s.store.StateVersionOutputByID(nil, id)
	if err != nil {
		return result{}, err
	}
	if o == nil {
		return result{}, notFound("state version output", id)
	}
	ws, err := s.visibleWorkspace(c, o.WorkspaceID)
	if err != nil || !ws.pa.CanReadStateOutputs() {
		return result{}, notFound("state version output", id)
	}
	return ok(jsonapi.One(outputResource(o, ws.pa.CanReadStateVersions())))
}

// outputResource renders an output; a sensitive value is null unless
// reveal.
func outputResource(o *mgmt.StateVersionOutput, reveal bool) *jsonapi.Resource {
	var value any = json.RawMessage(o.Value)
	if o.Sensitive && !reveal {
		value = nil
	}
	return &jsonapi.Resource{
		ID:   o.ID,
		Type: typeStateVersionOutputs,
		Attributes: map[string]any{
			"name":          o.Name,
			"sensitive":     o.Sensitive,
			"type":          simpleType(o.Type),
			"value":         value,
			"detailed-type": json.RawMessage(o.Type),
		},
		Links: selfLink(apiPrefix + "/state-version-outputs/" + url.PathEscape(o.ID)),
	}
}

// simpleType is TFE's one-word type of an output: string, number,
// boolean, array (lists, sets, tuples) or object (maps, objects).
func simpleType(t []byte) string {
	var name string
	if json.Unmarshal(t, &name) == nil {
		if name == "bool" {
			return "boolean"
		}
		return name
	}
	var parts []json.RawMessage
	if json.Unmarshal(t, &parts) == nil && len(parts) > 0 {
		var kind string
		_ = json.Unmarshal(parts[0], &kind)
		switch kind {
		case "list", "set", "tuple":
			return "array"
		case "map", "object":
			return "object"
		}
	}
	return "unknown"
}

// stateVersionResource renders a state version with the URLs of its
// bytes (absolute, on the host the request came to) and its outputs;
// the upload URLs, which carry the version's upload secret, only for a
// writer (a caller with state-versions write).
func (s terraformAPI) stateVersionResource(r *http.Request, sv *mgmt.StateVersion, writer bool) *jsonapi.Resource {
	self := apiPrefix + "/state-versions/" + url.PathEscape(sv.ID)
	base := strings.TrimSuffix(jsonapi.BaseURL(r), r.URL.EscapedPath()) + self
	status := sv.Status
	if status == "" {
		status = mgmt.StateVersionFinalized
	}
	attrs := map[string]any{
		"serial":                         sv.Serial,
		"lineage":                        jsonapi.NullString(sv.Lineage),
		"md5":                            jsonapi.NullString(sv.MD5),
		"created-at":                     jsonapi.Time(sv.CreatedAt),
		"status":                         status,
		"size":                           sv.StateSize,
		"tool-version":                   jsonapi.NullString(sv.TerraformVersion),
		"resources-processed":            true,
		"hosted-state-download-url":      nil,
		"hosted-json-state-download-url": nil,
		"hosted-state-upload-url":        nil,
		"hosted-json-state-upload-url":   nil,
	}
	upload := ""
	if writer && sv.UploadSecret != "" {
		upload = "?" + uploadSecretParam + "=" + sv.UploadSecret
	}
	if sv.StateSHA256 != "" {
		attrs["hosted-state-download-url"] = base + pathStateDownload
	} else if status == mgmt.StateVersionPending && upload != "" {
		attrs["hosted-state-upload-url"] = base + pathStateUpload + upload
	}
	if sv.JSONStateSHA256 != "" {
		attrs["hosted-json-state-download-url"] = base + pathJSONStateDownload
	} else if upload != "" {
		attrs["hosted-json-state-upload-url"] = base + pathJSONStateUpload + upload
	}
	var outIDs []jsonapi.Identifier
	if outs, err := s.store.StateVersionOutputs(nil, sv.ID); err == nil {
		for _, o := range outs {
			outIDs = append(outIDs, jsonapi.Identifier{Type: typeStateVersionOutputs, ID: o.ID})
		}
	}
	if outIDs == nil {
		outIDs = []jsonapi.Identifier{}
	}
	return &jsonapi.Resource{
		ID:         sv.ID,
		Type:       typeStateVersions,
		Attributes: attrs,
		Relationships: map[string]*jsonapi.Relationship{
			"workspace": jsonapi.ToOne(typeWorkspaces, sv.WorkspaceID),
			"run":       jsonapi.ToOne(typeRuns, sv.RunID),
			"outputs":   jsonapi.ToMany(outIDs).Related(self + "/outputs"),
		},
		Links: selfLink(self),
	}
}

// includeOutputs is the include path of a state version's outputs.
const includeOutputs = "outputs"

// stateVersionDoc renders a state version, with its outputs included when
// the request asks (?include=outputs); sensitive values only for a caller
// who may read the state.
func (s terraformAPI) stateVersionDoc(r *http.Request, sv *mgmt.StateVersion, pa mgmt.ProjectAccess) (*jsonapi.Document, error) {
	inc, err := jsonapi.ParseInclude(r.URL.Query(), includeOutputs)
	if err != nil {
		return nil, err
	}
	doc := jsonapi.One(s.stateVersionResource(r, sv, pa.CanWriteStateVersions()))
	if inc[includeOutputs] {
		outs, err := s.store.StateVersionOutputs(nil, sv.ID)
		if err != nil {
			return nil, err
		}
		for _, o := range outs {
			doc.Include(outputResource(o, pa.CanReadStateVersions()))
		}
	}
	return doc, nil
}

// writeRaw writes a raw answer (a state file).
func writeRaw(w http.ResponseWriter, res result) {
	h := w.Header()
	h.Set("Content-Type", res.rawType)
	h.Set("Content-Length", strconv.Itoa(len(res.raw)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(res.status)
	_, _ = io.Copy(w, bytes.NewReader(res.raw))
}
