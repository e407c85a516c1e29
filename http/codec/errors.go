package codec

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/schedhq/sched/state"
)

// CodedError is an error that knows its HTTP status. Layers below the
// handlers (the writer, a forwarder) return it for conditions that are not
// the state machine's to judge, such as "no cluster leader" (503).
type CodedError struct {
	Code    int
	Message string
	// Err, when set, is the underlying error (kept for errors.Is).
	Err error
}

// StatusCode is the HTTP status the error answers with. The management
// API, which cannot import the core, finds it through this method.
func (e *CodedError) StatusCode() int { return e.Code }

func (e *CodedError) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	return e.Message
}

func (e *CodedError) Unwrap() error { return e.Err }

// ClientGone reports whether a request failed because its caller went
// away (its context was canceled), which is no fault of the server's.
func ClientGone(r *http.Request, err error) bool {
	return r.Context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, r.Context().Err()) || StatusOf(err) >= 500)
}

// BadRequest returns a 400 error naming what is wrong.
func BadRequest(format string, args ...any) error {
	return &CodedError{Code: http.StatusBadRequest, Message: fmt.Sprintf(format, args...)}
}

// StatusOf maps an error to its HTTP status: typed errors first, then the
// state sentinels, and 500 for everything else (a real fault).
func StatusOf(err error) int {
	var ce *CodedError
	switch {
	case errors.As(err, &ce):
		return ce.Code
	case errors.Is(err, state.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, state.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, state.ErrConflict):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

// WriteError writes err as a plain-text body (the message alone, one line),
// the format Nomad's clients print verbatim.
func WriteError(w http.ResponseWriter, err error) {
	code := StatusOf(err)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintln(w, err.Error())
}
