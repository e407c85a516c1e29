package http

import (
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// maxProfileSeconds bounds a CPU profile or trace taken through the API.
const maxProfileSeconds = 300

// pprofProfiles are the runtime profiles GET /v1/agent/pprof/:profile
// serves besides "profile" (CPU), "trace" and "cmdline".
var pprofProfiles = map[string]bool{"goroutine": true, "heap": true, "allocs": true, "block": true,
	"mutex": true, "threadcreate": true}

// agentPprof serves GET /v1/agent/pprof/:profile: the Go runtime's
// profiles of this agent, in pprof's format (`go tool pprof URL`).
// "profile" is a CPU profile and "trace" an execution trace of ?seconds
// (default 1, at most 300); the others are snapshots (?debug=1 or 2 for
// text). It needs agent:write, and is served only with enable_debug or
// with ACLs on (as Nomad does): profiles show what the agent is doing,
// not the state's secrets, but cost CPU while they run.
func (s *Server) agentPprof(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	if !s.cfg.EnableDebug && (s.cfg.ACL == nil || !s.cfg.ACL.Enforcing()) {
		return nil, &CodedError{Code: http.StatusForbidden, Message: "profiling is off: set enable_debug = true in the agent's config (or turn ACLs on and use a token with agent:write)"}
	}
	name := p.ByName("profile")
	if v := r.URL.Query().Get("seconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxProfileSeconds {
			return nil, codec.BadRequest("seconds: %q is not a whole number of seconds from 1 to %d", v, maxProfileSeconds)
		}
	}
	// A profile runs for its seconds: past the agent's write timeout.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add((maxProfileSeconds + 30) * time.Second))
	switch {
	case name == "profile":
		pprof.Profile(w, r)
	case name == "trace":
		pprof.Trace(w, r)
	case name == "cmdline":
		pprof.Cmdline(w, r)
	case pprofProfiles[name]:
		pprof.Handler(name).ServeHTTP(w, r)
	default:
		return nil, state.NotFoundf("profile %q (profile, trace, cmdline, goroutine, heap, allocs, block, mutex, threadcreate)", name)
	}
	return codec.AlreadyWritten{}, nil
}
