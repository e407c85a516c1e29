package http

import "github.com/schedhq/sched/http/codec"

// CodedError is an error that knows its HTTP status (codec.CodedError):
// the writer and the forwarders of the agent return it.
type CodedError = codec.CodedError
