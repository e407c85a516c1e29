// Package api is the typed Go client of sched's HTTP APIs. The CLI, client
// agents and the end-to-end tests all talk to a cluster through it, so the
// wire details (paths, query parameters, headers, error bodies) live in one
// place.
//
// Every call takes a context first and ends with optional per-call options
// (*QueryOptions for reads, *WriteOptions for writes; nil means the Config's
// defaults). Reads return a *QueryMeta carrying the index and leader headers,
// which is what a caller needs for the next blocking query; writes return a
// *WriteMeta.
//
// Resource types are the ones in package state: the client decodes exactly
// what the server encodes, so there is no second copy of the model to drift.
//
// A non-2xx answer becomes a *StatusError holding the code and the server's
// message; use errors.As to branch on the code.
package api
