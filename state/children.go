package state

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/cronexpr"
)

// Child job IDs: a periodic launch is <parent>/periodic-<unix seconds>, a
// dispatch <parent>/dispatch-[<prefix>-]<unix seconds>-<8 hex>.
const (
	PeriodicLaunchSuffix = "/periodic-"
	DispatchLaunchSuffix = "/dispatch-"
	// DispatchIDPrefixMax bounds a dispatch's IdPrefixTemplate.
	DispatchIDPrefixMax = 64
)

var dispatchPrefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// PeriodicLaunch records the latest launch of a periodic job (Unix
// nanoseconds of the launch time it was scheduled for). A new leader
// resumes from it: a launch missed during a failover runs once, never
// twice.
type PeriodicLaunch struct {
	Namespace   string
	ID          string
	Launch      int64
	CreateIndex uint64
	ModifyIndex uint64
}

// Location is the periodic config's time zone; "" is UTC.
func (p *PeriodicConfig) Location() (*time.Location, error) {
	if p.TimeZone == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(p.TimeZone)
}

// Next is the first launch time strictly after after, in the config's
// time zone, over every one of its specs; the zero time when none comes.
func (p *PeriodicConfig) Next(after time.Time) (time.Time, error) {
	loc, err := p.Location()
	if err != nil {
		return time.Time{}, err
	}
	specs := p.Specs
	if p.Spec != "" {
		specs = append([]string{p.Spec}, specs...)
	}
	var next time.Time
	for _, s := range specs {
		e, err := cronexpr.Parse(s)
		if err != nil {
			return time.Time{}, fmt.Errorf("cron spec %q: %w", s, err)
		}
		if t := e.Next(after.In(loc)); !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next, nil
}

// PeriodicChildID is the ID of the child launched for launch time at.
func PeriodicChildID(parentID string, at time.Time) string {
	return fmt.Sprintf("%s%s%d", parentID, PeriodicLaunchSuffix, at.Unix())
}

// DispatchChildID is the ID of a dispatched child: prefix (may be empty)
// is the request's IdPrefixTemplate, suffix 8 hex characters the leader
// drew.
func DispatchChildID(parentID, prefix string, at time.Time, suffix string) string {
	if prefix != "" {
		prefix += "-"
	}
	return fmt.Sprintf("%s%s%s%d-%s", parentID, DispatchLaunchSuffix, prefix, at.Unix(), suffix)
}

// NewChild returns a child of the parent job j: a copy with id, ParentID
// set and no periodic block, so it runs once. The caller sets what a
// dispatch adds (payload, meta, Dispatched).
func (j *Job) NewChild(id string) *Job {
	c := j.Copy()
	c.ID, c.Name, c.ParentID = id, id, j.ID
	c.Periodic = nil
	c.Status, c.StatusDescription, c.Stable = "", "", false
	c.Version, c.CreateIndex, c.ModifyIndex, c.JobModifyIndex, c.SubmitTime = 0, 0, 0, 0, 0
	return c
}

// DispatchRequest is the body of POST /v1/job/:job_id/dispatch (spec §4
// row 13); the idempotency token travels in the query.
type DispatchRequest struct {
	Payload          []byte
	Meta             map[string]string
	IdPrefixTemplate string
}

// JobDispatchResponse answers a dispatch.
type JobDispatchResponse struct {
	DispatchedJobID string
	EvalID          string
	EvalCreateIndex uint64
	JobCreateIndex  uint64
	Index           uint64
}

// PeriodicForceResponse answers POST /v1/job/:job_id/periodic/force.
type PeriodicForceResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	Index           uint64
}

// CheckDispatch validates a dispatch of the parameterized job j: the
// payload against its size limit and the job's payload rule, the meta keys
// against MetaRequired and MetaOptional, the ID prefix's characters. Every
// problem is listed, with the request field it concerns.
func (j *Job) CheckDispatch(req *DispatchRequest) error {
	var v ValidationError
	pj := j.ParameterizedJob
	if pj == nil || j.Dispatched {
		return Invalidf("JobID", "job %q is not a parameterized job", j.ID)
	}
	switch {
	case len(req.Payload) > DispatchPayloadSize:
		v.Add("Payload", "%d bytes exceeds the %d byte limit", len(req.Payload), DispatchPayloadSize)
	case len(req.Payload) == 0 && pj.Payload == DispatchPayloadRequired:
		v.Add("Payload", "the job requires a payload")
	case len(req.Payload) > 0 && pj.Payload == DispatchPayloadForbidden:
		v.Add("Payload", "the job forbids a payload")
	}
	var missing, unknown []string
	for _, k := range pj.MetaRequired {
		if _, ok := req.Meta[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range req.Meta {
		if !slices.Contains(pj.MetaRequired, k) && !slices.Contains(pj.MetaOptional, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(missing)
	slices.Sort(unknown)
	if len(missing) > 0 {
		v.Add("Meta", "missing required keys: %s", strings.Join(missing, ", "))
	}
	if len(unknown) > 0 {
		v.Add("Meta", "keys not allowed by the job (neither required nor optional): %s", strings.Join(unknown, ", "))
	}
	if p := req.IdPrefixTemplate; p != "" && (len(p) > DispatchIDPrefixMax || !dispatchPrefixRE.MatchString(p)) {
		v.Add("IdPrefixTemplate", "must be 1 to %d letters, digits, - or _", DispatchIDPrefixMax)
	}
	return v.Err()
}

// Dispatch returns the child of the parameterized job j that req
// dispatches, with id: Dispatched, the payload, and the job's meta
// overlaid with the request's.
func (j *Job) Dispatch(id string, req *DispatchRequest, token string) *Job {
	c := j.NewChild(id)
	c.Dispatched = true
	c.DispatchIdempotencyToken = token
	c.Payload = slices.Clone(req.Payload)
	if len(req.Meta) > 0 && c.Meta == nil {
		c.Meta = map[string]string{}
	}
	for k, val := range req.Meta {
		c.Meta[k] = val
	}
	return c
}
