// Package codec is the small HTTP codec that the server core (package
// http) and the client agent's surface (http/clientapi) share: the shape
// of a handler, the one error→status mapping, plain-text error bodies,
// JSON request bodies, query parameters, the next-page header and which
// namespace's objects a request sees (the jobs API shares these last two
// with the core). It imports nothing of ours
// but state's sentinel errors, so a client agent links no store through
// it.
package codec

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// Handler is the shape of every handler: a value to encode as JSON, or
// an error for the wrapper to map to a status (StatusOf).
type Handler func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error)

// AlreadyWritten is a handler's value when it wrote its own response (a
// stream, a proxied answer): the wrapper writes nothing more.
type AlreadyWritten struct{}
