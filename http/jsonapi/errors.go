package jsonapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Error is one JSON:API error object.
type Error struct {
	Status string  `json:"status"`
	Title  string  `json:"title"`
	Detail string  `json:"detail,omitempty"`
	Source *Source `json:"source,omitempty"`
}

// Source says where in the request an error lies: a JSON pointer into the
// request document, or the name of a query parameter.
type Source struct {
	Pointer   string `json:"pointer,omitempty"`
	Parameter string `json:"parameter,omitempty"`
}

// ErrorDocument is the body of every error answer.
type ErrorDocument struct {
	Errors []*Error `json:"errors"`
}

// HTTPError is an error answer: a status and the error objects its body
// lists. Handlers return it (or errors the http package maps to it).
type HTTPError struct {
	Status int
	Errors []*Error
}

// Error lists the status and each error with where it lies, for logs.
func (e *HTTPError) Error() string {
	parts := make([]string, 0, len(e.Errors))
	for _, x := range e.Errors {
		msg := x.Title
		if x.Detail != "" {
			msg += ": " + x.Detail
		}
		if x.Source != nil && x.Source.Pointer != "" {
			msg = x.Source.Pointer + ": " + msg
		} else if x.Source != nil && x.Source.Parameter != "" {
			msg = x.Source.Parameter + ": " + msg
		}
		parts = append(parts, msg)
	}
	return fmt.Sprintf("%d %s", e.Status, strings.Join(parts, "; "))
}

// Titles of the errors this package and the http package answer. They
// are short and stable; the detail says what exactly went wrong.
const (
	TitleBadRequest      = "bad request"
	TitleUnauthorized    = "unauthorized"
	TitleForbidden       = "forbidden"
	TitleNotFound        = "not found"
	TitleConflict        = "conflict"
	TitleInvalid         = "invalid attribute"
	TitleUnsupportedType = "unsupported media type"
	TitleRateLimited     = "too many requests"
	TitleInternal        = "internal server error"
)

// NewError returns an HTTPError of one error object.
func NewError(status int, title, detail string) *HTTPError {
	return &HTTPError{Status: status, Errors: []*Error{{Status: strconv.Itoa(status), Title: title, Detail: detail}}}
}

// PointerError returns a 422 naming the JSON pointer at fault.
func PointerError(pointer, format string, args ...any) *Error {
	return &Error{Status: strconv.Itoa(http.StatusUnprocessableEntity), Title: TitleInvalid,
		Detail: fmt.Sprintf(format, args...), Source: &Source{Pointer: pointer}}
}

// ParameterError returns a 400 naming the query parameter at fault.
func ParameterError(param, format string, args ...any) *HTTPError {
	return &HTTPError{Status: http.StatusBadRequest, Errors: []*Error{{
		Status: strconv.Itoa(http.StatusBadRequest), Title: TitleBadRequest,
		Detail: fmt.Sprintf(format, args...), Source: &Source{Parameter: param}}}}
}

// Invalid returns a 422 listing errs, or nil when there are none.
func Invalid(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	return &HTTPError{Status: http.StatusUnprocessableEntity, Errors: errs}
}

// WriteError writes e as an error document.
func WriteError(w http.ResponseWriter, e *HTTPError) error {
	for _, x := range e.Errors {
		if x.Status == "" {
			x.Status = strconv.Itoa(e.Status)
		}
	}
	return Write(w, e.Status, &ErrorDocument{Errors: e.Errors})
}
