package mgmt

import (
	"crypto/sha256"
	"crypto/subtle"
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

// Runs executed as jobs (docs/terraform.md, state/mgmt/run_exec.go): the
// plans and applies of runs, their logs, and the worker endpoints.
//
//   - GET /plans/:id and /applies/:id are go-tfe's Plan and Apply, read by
//     whoever may read the run. Their log-read-url is a signed URL, as
//     TFE's archivist's: /plans/:id/logs/:token, where the token is
//     derived (one way) from the run's worker secret, so any server checks
//     it and it reveals nothing of the secret; go-tfe's log reader sends
//     no credentials. It serves the log as the archivist does: ?offset
//     and ?limit, STX first, ETX once the phase ended. /plans/:id/logs
//     serves the same to a caller with a token who may read the run.
//   - /runs/:id/worker/... serve the run's worker, authorized by the run's
//     worker secret (header X-Sched-Run-Secret), which its job carries;
//     only while the run executes, and only for its own workspace:
//     GET configuration (the archive), GET state (the current state file,
//     204 without one), GET variables (the run's), POST log?phase= (a chunk of output), POST
//     result?phase= (the phase's outcome), PUT state (the new state, only
//     during the apply: a state version of the run).
const (
	typePlans   = "plans"
	typeApplies = "applies"

	// headerRunSecret carries a worker's run secret.
	headerRunSecret = mgmt.WorkerSecretHeader

	pathWorker = "/worker"
)

// runExecRoutes registers plans, applies, their logs and the worker.
func (m *router) runExecRoutes() {
	s := terraformAPI{m.s}
	m.handle(http.MethodGet, "/plans/:phase", s.phaseShow(mgmt.PhasePlan))
	m.handle(http.MethodGet, "/applies/:phase", s.phaseShow(mgmt.PhaseApply))
	m.handle(http.MethodGet, "/plans/:phase/logs", s.phaseLogs(mgmt.PhasePlan))
	m.handle(http.MethodGet, "/applies/:phase/logs", s.phaseLogs(mgmt.PhaseApply))
	s.mount(http.MethodGet, apiPrefix+"/plans/:phase/logs/:token", m.signedLogs(mgmt.PhasePlan))
	s.mount(http.MethodGet, apiPrefix+"/applies/:phase/logs/:token", m.signedLogs(mgmt.PhaseApply))
	m.handle(http.MethodGet, "/runs/:run/run-events", s.runEvents)
	w := apiPrefix + "/runs/:run" + pathWorker
	s.mount(http.MethodGet, w+"/configuration", m.worker(s.workerConfiguration))
	s.mount(http.MethodGet, w+"/state", m.worker(s.workerState))
	s.mount(http.MethodPut, w+"/state", m.worker(s.workerSaveState))
	s.mount(http.MethodPost, w+"/log", m.worker(s.workerLog))
	s.mount(http.MethodPost, w+"/result", m.worker(s.workerResult))
	s.mount(http.MethodGet, w+"/variables", m.worker(s.workerVariables))
}

// visiblePhase loads the run of a plan or apply ID the caller can see.
func (s terraformAPI) visiblePhase(c *call, phase, id string) (*mgmt.Run, workspaceCtx, error) {
	prefix := mgmt.PrefixPlan
	if phase == mgmt.PhaseApply {
		prefix = mgmt.PrefixApply
	}
	runID, ok := mgmt.RunOfPhase(id, prefix)
	if !ok {
		return nil, workspaceCtx{}, notFound(phase, id)
	}
	run, ws, err := s.visibleRun(c, runID)
	if err != nil {
		return nil, workspaceCtx{}, notFound(phase, id)
	}
	return run, ws, nil
}

// phaseShow serves GET /plans/:id and /applies/:id.
func (s terraformAPI) phaseShow(phase string) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
		run, _, err := s.visiblePhase(c, phase, p.ByName("phase"))
		if err != nil {
			return result{}, err
		}
		return ok(jsonapi.One(phaseResource(r, run, phase)))
	}
}

// phaseResource renders a run's plan or apply as go-tfe reads it.
func phaseResource(r *http.Request, run *mgmt.Run, phase string) *jsonapi.Resource {
	p := run.Phase(phase)
	id, typ, self := mgmt.PlanID(run.ID), typePlans, "/plans/"
	if phase == mgmt.PhaseApply {
		id, typ, self = mgmt.ApplyID(run.ID), typeApplies, "/applies/"
	}
	ts := map[string]any{}
	for status, at := range p.StatusTimestamps {
		key := status
		if status == mgmt.PhaseRunning {
			key = "started"
		}
		ts[key+"-at"] = jsonapi.Time(at)
	}
	path := apiPrefix + self + url.PathEscape(id)
	base := strings.TrimSuffix(jsonapi.BaseURL(r), r.URL.EscapedPath())
	attrs := map[string]any{
		"status":                p.PhaseStatus(),
		"status-timestamps":     ts,
		"log-read-url":          nil,
		"resource-additions":    p.Additions,
		"resource-changes":      p.Changes,
		"resource-destructions": p.Destructions,
		"resource-imports":      p.Imports,
	}
	if tok := logToken(run); tok != "" {
		attrs["log-read-url"] = base + path + "/logs/" + tok
	}
	if phase == mgmt.PhasePlan {
		attrs["has-changes"] = p.HasChanges
	}
	return &jsonapi.Resource{ID: id, Type: typ, Attributes: attrs, Links: selfLink(path)}
}

// Log stream markers, as TFE's archivist frames a log.
const (
	logSTX = 0x02
	logETX = 0x03
)

// phaseLogs serves a phase's log-read-url: the log framed by STX and (once
// the phase ended) ETX, from ?offset (bytes of the framed stream) and at
// most ?limit bytes (default and cap 1 MiB). 200 text/plain.
func (s terraformAPI) phaseLogs(phase string) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
		run, _, err := s.visiblePhase(c, phase, p.ByName("phase"))
		if err != nil {
			return result{}, err
		}
		return s.logAnswer(r, run, phase)
	}
}

// logToken is the token of a run's signed log URLs: derived one way from
// the run's worker secret, "" while the run has none (before its plan).
func logToken(run *mgmt.Run) string {
	if run.WorkerSecret == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("sched log-read-url\x00" + run.WorkerSecret))
	return hex.EncodeToString(sum[:16])
}

// signedLogs serves a phase's signed log URL: no credentials, the token in
// the path (a wrong one is a 404, as an unknown run).
func (m *router) signedLogs(phase string) httprouter.Handle {
	s := terraformAPI{m.s}
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		res, err := func() (result, error) {
			if err := m.limiter.admit(w, "addr:"+remoteHost(r)); err != nil {
				return result{}, err
			}
			if err := s.ReadBarrier(r.Context()); err != nil {
				return result{}, err
			}
			id := p.ByName("phase")
			prefix := mgmt.PrefixPlan
			if phase == mgmt.PhaseApply {
				prefix = mgmt.PrefixApply
			}
			runID, ok := mgmt.RunOfPhase(id, prefix)
			if !ok {
				return result{}, notFound(phase, id)
			}
			run, err := s.store.RunByID(nil, runID)
			if err != nil {
				return result{}, err
			}
			if run == nil || logToken(run) == "" || subtle.ConstantTimeCompare([]byte(logToken(run)), []byte(p.ByName("token"))) != 1 {
				return result{}, notFound(phase, id)
			}
			return s.logAnswer(r, run, phase)
		}()
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeRaw(w, res)
	}
}

// logAnswer is the part of a phase's log a request's offset and limit
// ask for.
func (s terraformAPI) logAnswer(r *http.Request, run *mgmt.Run, phase string) (result, error) {
	offset, err := intParam(r, "offset", 0)
	if err != nil {
		return result{}, err
	}
	limit, err := intParam(r, "limit", 1<<20)
	if err != nil {
		return result{}, err
	}
	return result{status: http.StatusOK, raw: framedLog(run.Phase(phase), offset, min(limit, 1<<20)), rawType: "text/plain"}, nil
}

// framedLog is the part [offset, offset+limit) of a phase's framed log.
func framedLog(p *mgmt.RunPhase, offset, limit int) []byte {
	framed := make([]byte, 0, len(p.Log)+2)
	framed = append(append(framed, logSTX), p.Log...)
	if mgmt.PhaseIsFinal(p.PhaseStatus()) {
		framed = append(framed, logETX)
	}
	if offset >= len(framed) {
		return []byte{}
	}
	return framed[offset:min(len(framed), offset+limit)]
}

// intParam reads a non-negative integer query parameter.
func intParam(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, jsonapi.ParameterError(name, "must be a non-negative integer")
	}
	return n, nil
}

// runEvents serves GET /runs/:id/run-events, which Terraform lists for
// warnings: sched records none.
func (s terraformAPI) runEvents(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	if _, _, err := s.visibleRun(c, p.ByName("run")); err != nil {
		return result{}, err
	}
	return ok(jsonapi.Many([]*jsonapi.Resource{}))
}

// workerHandler serves a worker's request for its run.
type workerHandler func(w http.ResponseWriter, r *http.Request, run *mgmt.Run) (result, error)

// worker wraps a worker endpoint: the rate limit per run, then the run's
// secret (404 for a wrong one, as for a run that does not exist, so
// nothing is learnt by guessing), then the handler.
func (m *router) worker(h workerHandler) httprouter.Handle {
	s := m.s
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		res, err := func() (result, error) {
			id := p.ByName("run")
			if err := m.limiter.admit(w, "run:"+id); err != nil {
				return result{}, err
			}
			if r.Method == http.MethodGet {
				if err := s.ReadBarrier(r.Context()); err != nil {
					return result{}, err
				}
			}
			run, err := s.store.RunByID(nil, id)
			if err != nil {
				return result{}, err
			}
			secret := r.Header.Get(headerRunSecret)
			if run == nil || run.WorkerSecret == "" || secret == "" ||
				subtle.ConstantTimeCompare([]byte(run.WorkerSecret), []byte(secret)) != 1 {
				return result{}, notFound("run", id)
			}
			if mgmt.RunIsFinal(run.Status) {
				return result{}, jsonapi.NewError(http.StatusConflict, jsonapi.TitleConflict,
					fmt.Sprintf("run %q is %s: its worker has nothing more to do", run.ID, run.Status))
			}
			return h(w, r, run)
		}()
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if res.raw != nil {
			writeRaw(w, res)
			return
		}
		_ = jsonapi.Write(w, res.status, res.doc)
	}
}

// workerConfiguration serves the run's configuration archive.
func (s terraformAPI) workerConfiguration(w http.ResponseWriter, r *http.Request, run *mgmt.Run) (result, error) {
	cv, err := s.store.ConfigurationVersionByID(nil, run.ConfigurationVersionID)
	if err != nil {
		return result{}, err
	}
	if cv == nil || cv.ArchiveSHA256 == "" {
		return result{}, notFound("configuration archive of run", run.ID)
	}
	blob, err := s.store.StateBlob(nil, cv.ArchiveSHA256)
	if err != nil {
		return result{}, err
	}
	if blob == nil {
		return result{}, notFound("configuration archive of run", run.ID)
	}
	return result{status: http.StatusOK, raw: blob.Data, rawType: "application/gzip"}, nil
}

// workerState serves the workspace's current state file; 204 when it has
// none.
func (s terraformAPI) workerState(w http.ResponseWriter, r *http.Request, run *mgmt.Run) (result, error) {
	ws, err := s.store.WorkspaceByID(nil, run.WorkspaceID)
	if err != nil {
		return result{}, err
	}
	if ws == nil || ws.LatestStateVersionID == "" {
		return result{status: http.StatusNoContent}, nil
	}
	sv, err := s.store.StateVersionByID(nil, ws.LatestStateVersionID)
	if err != nil {
		return result{}, err
	}
	if sv == nil || sv.StateSHA256 == "" {
		return result{status: http.StatusNoContent}, nil
	}
	blob, err := s.store.StateBlob(nil, sv.StateSHA256)
	if err != nil {
		return result{}, err
	}
	if blob == nil {
		return result{status: http.StatusNoContent}, nil
	}
	return result{status: http.StatusOK, raw: blob.Data, rawType: "application/json"}, nil
}

// workerVariables serves the run's variables, a JSON list of
// mgmt.RunVariable.
func (s terraformAPI) workerVariables(w http.ResponseWriter, r *http.Request, run *mgmt.Run) (result, error) {
	body, err := json.Marshal(append([]mgmt.RunVariable{}, run.Variables...))
	if err != nil {
		return result{}, err
	}
	return result{status: http.StatusOK, raw: body, rawType: "application/json"}, nil
}

// workerPhase reads ?phase and checks it is the run's current phase.
func workerPhase(r *http.Request, run *mgmt.Run) (string, error) {
	phase := r.URL.Query().Get("phase")
	if phase != mgmt.PhasePlan && phase != mgmt.PhaseApply {
		return "", jsonapi.ParameterError("phase", "must be plan or apply")
	}
	return phase, nil
}

// workerLog appends a chunk (the body, at most mgmt.MaxRunLogChunk bytes)
// to the phase's log.
func (s terraformAPI) workerLog(w http.ResponseWriter, r *http.Request, run *mgmt.Run) (result, error) {
	phase, err := workerPhase(r, run)
	if err != nil {
		return result{}, err
	}
	data, err := readBounded(r, mgmt.MaxRunLogChunk, "log chunk")
	if err != nil {
		return result{}, err
	}
	if _, err := s.propose(w, r, store.RunLogAppendRequestType, &store.RunLogAppendRequest{RunID: run.ID, Phase: phase, Data: data}); err != nil {
		return result{}, err
	}
	return result{status: http.StatusNoContent}, nil
}

// workerResult records the phase's outcome: a JSON mgmt.PlanResult.
func (s terraformAPI) workerResult(w http.ResponseWriter, r *http.Request, run *mgmt.Run) (result, error) {
	phase, err := workerPhase(r, run)
	if err != nil {
		return result{}, err
	}
	data, err := readBounded(r, 64<<10, "result")
	if err != nil {
		return result{}, err
	}
	var res mgmt.PlanResult
	if err := json.Unmarshal(data, &res); err != nil {
		return result{}, jsonapi.NewError(http.StatusBadRequest, jsonapi.TitleBadRequest, "the result is not JSON: "+err.Error())
	}
	for _, n := range []int{res.Additions, res.Changes, res.Destructions, res.Imports} {
		if n < 0 {
			return result{}, jsonapi.NewError(http.StatusUnprocessableEntity, jsonapi.TitleInvalid, "resource counts must not be negative")
		}
	}
	if _, err := s.propose(w, r, store.RunPhaseUpdateRequestType,
		&store.RunPhaseUpdateRequest{RunID: run.ID, Phase: phase, Result: &res, Now: s.now()}); err != nil {
		return result{}, err
	}
	return result{status: http.StatusNoContent}, nil
}

// workerSaveState records the apply's new state (the body, a state file)
// as a state version of the run: it must follow the current state (same
// lineage, a higher serial), as any state version must.
func (s terraformAPI) workerSaveState(w http.ResponseWriter, r *http.Request, run *mgmt.Run) (result, error) {
	if run.Status != mgmt.RunApplying && run.Status != mgmt.RunApplyQueued {
		return result{}, jsonapi.NewError(http.StatusConflict, jsonapi.TitleConflict,
			fmt.Sprintf("run %q is %s: only its apply saves state", run.ID, run.Status))
	}
	st, err := readBounded(r, s.maxStateBytes(), "state")
	if err != nil {
		return result{}, err
	}
	ws, err := s.store.WorkspaceByID(nil, run.WorkspaceID)
	if err != nil {
		return result{}, err
	}
	if ws == nil {
		return result{}, notFound("workspace", run.WorkspaceID)
	}
	sv := &mgmt.StateVersion{ID: s.newID(mgmt.PrefixStateVersion), WorkspaceID: ws.ID, RunID: run.ID,
		CreatedAt: s.now(), Status: mgmt.StateVersionFinalized}
	var problems []string
	outputs := checkStateFile(func(attr, format string, args ...any) {
		problems = append(problems, attr+" "+fmt.Sprintf(format, args...))
	}, sv, st, false)
	if len(problems) > 0 {
		return result{}, uploadInvalid(problems)
	}
	if err := s.checkSuccession(ws, sv); err != nil {
		return result{}, err
	}
	resp, err := s.propose(w, r, store.StateVersionCreateRequestType, &store.StateVersionCreateRequest{
		StateVersion: sv, State: st, Outputs: outputs})
	if err != nil {
		return result{}, err
	}
	return created(jsonapi.One(s.stateVersionResource(r, resp.(*mgmt.StateVersion), false)))
}

// readBounded reads a request body of at most limit bytes: 413 past it.
func readBounded(r *http.Request, limit int, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		return nil, jsonapi.NewError(http.StatusBadRequest, jsonapi.TitleBadRequest, fmt.Sprintf("read request body: %v", err))
	}
	if len(data) > limit {
		return nil, jsonapi.NewError(http.StatusRequestEntityTooLarge, "request entity too large",
			fmt.Sprintf("the %s is over the limit of %d bytes", what, limit))
	}
	return data, nil
}
