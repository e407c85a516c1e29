package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/schedhq/sched/state"
)

// MaxJSONDepth bounds how deeply a request body may nest JSON objects and
// arrays. A job needs about ten levels around its free-form values, which
// may nest state.MaxNestingDepth more.
const MaxJSONDepth = state.MaxNestingDepth + 36

// CheckJSONDepth scans data, without recursion, and returns a 400 naming
// the byte offset where it nests deeper than max. It does not check that
// data is JSON: the decoder that follows does.
func CheckJSONDepth(data []byte, max int) error {
	if at := state.JSONDepthOffset(data, max); at > 0 {
		return BadRequest("failed to parse request body: JSON nested more than %d levels deep (at byte %d)", max, at)
	}
	return nil
}

// DecodeBody decodes a JSON request body into v. An empty body, malformed
// JSON, a body that is too large, or trailing data are 400s naming the
// problem and its byte offset.
func DecodeBody(r *http.Request, v any) error {
	if r.Body == nil {
		return BadRequest("request body is required")
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &CodedError{Code: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("request body exceeds %d bytes", mbe.Limit)}
		}
		return BadRequest("read request body: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return BadRequest("request body is required")
	}
	if err := CheckJSONDepth(data, MaxJSONDepth); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return BadRequest("failed to parse request body: %s", describeJSONError(err))
	}
	if dec.More() {
		return BadRequest("failed to parse request body: unexpected data after the JSON document")
	}
	return nil
}

func describeJSONError(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		return fmt.Sprintf("%s: cannot use JSON %s as %s (at byte %d)", field, te.Value, te.Type, te.Offset)
	}
	return err.Error()
}

// BodyIsEmpty reports whether r's body holds nothing but white space, and
// leaves the body to be read again.
func BodyIsEmpty(r *http.Request) (bool, error) {
	if r.Body == nil {
		return true, nil
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return false, &CodedError{Code: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("request body exceeds %d bytes", mbe.Limit)}
		}
		return false, BadRequest("read request body: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	return len(bytes.TrimSpace(data)) == 0, nil
}

// DecodeKeptBody decodes r's JSON body into v; an empty body leaves v
// as it is. The body is put back for a proxy to send on.
func DecodeKeptBody(r *http.Request, v any) error {
	empty, err := BodyIsEmpty(r) // reads the body and puts it back
	if err != nil || empty {
		return err
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return BadRequest("read request body: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	err = DecodeBody(r, v)
	r.Body = io.NopCloser(bytes.NewReader(data))
	return err
}
