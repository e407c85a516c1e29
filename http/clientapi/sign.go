package clientapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/schedhq/sched/http/codec"
)

// A server that proxies a /v1/client request to a node's agent has
// checked the caller's token against the route's ACL rule; it proves that
// to the node by signing the request with a key only the servers and that
// node hold: the hash of the node's secret (the servers store nothing
// else of it; the node can compute it from its secret). The signature
// covers the method, the request URI and the time, so it cannot be moved
// to another request, and a node accepts it for signatureMaxAge
// either side of its own clock.
//
// A node's agent serves /v1/client requests that carry a valid signature
// and refuses those that carry a bad one (403). A request without one is
// proxied to the node's server, which checks the caller's token and sends
// it back signed: a client agent's port enforces the same ACL rules as the
// servers' without resolving tokens itself.

// HeaderProxied marks a /v1/client request a server proxied to the
// allocation's node, and carries its signature (Sign). An agent that
// receives one and cannot serve it itself answers 404 rather than
// proxying again, so a node whose HTTPAddr points back at a server cannot
// loop a request.
const HeaderProxied = "X-Sched-Client-Proxied"

// signatureMaxAge bounds the clock skew and the time a captured
// signature can be replayed for the very same request.
const signatureMaxAge = 2 * time.Minute

// signatureVersion prefixes the header's value.
const signatureVersion = "v1"

// Sign returns the HeaderProxied value for a request
// to the node whose secret hashes to secretHash.
func Sign(secretHash, method, requestURI string, now time.Time) string {
	ts := strconv.FormatInt(now.Unix(), 10)
	return signatureVersion + ":" + ts + ":" + mac(secretHash, method, requestURI, ts)
}

func mac(secretHash, method, requestURI, ts string) string {
	m := hmac.New(sha256.New, []byte("sched client proxy\x00"+secretHash))
	fmt.Fprintf(m, "%s\n%s\n%s", method, requestURI, ts)
	return hex.EncodeToString(m.Sum(nil))
}

// errBadSignature is the answer to a forged, stale or malformed
// signature.
var errBadSignature = errors.New("the request's server signature is not valid for this node")

// verify checks a HeaderProxied value against this
// node's secret hash.
func verify(value, secretHash, method, requestURI string, now time.Time) error {
	parts := strings.Split(value, ":")
	if len(parts) != 3 || parts[0] != signatureVersion || secretHash == "" {
		return errBadSignature
	}
	sec, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return errBadSignature
	}
	if d := now.Sub(time.Unix(sec, 0)); d > signatureMaxAge || d < -signatureMaxAge {
		return errBadSignature
	}
	want := mac(secretHash, method, requestURI, parts[1])
	if !hmac.Equal([]byte(want), []byte(parts[2])) {
		return errBadSignature
	}
	return nil
}

// Signer is implemented by a Client that can check servers'
// signatures: it knows its node's secret. NewHandler then serves
// /v1/client requests only when a server signed them, and proxies unsigned
// ones to the server to be checked.
type Signer interface {
	// NodeSecretHash is state.HashSecret of the node's SecretID; empty
	// while the node has not registered.
	NodeSecretHash() string
}

// checkSignature guards a client agent's /v1/client routes. It
// reports whether the handler may serve r; when it may not, it has
// written the answer (a 403, or the proxied one).
func checkSignature(w http.ResponseWriter, r *http.Request, c Client, proxy func(http.ResponseWriter, *http.Request) bool, now func() time.Time) bool {
	signer, ok := c.(Signer)
	if !ok {
		return true // in-process doubles: nothing to check against
	}
	sig := r.Header.Get(HeaderProxied)
	if sig == "" {
		if proxy(w, r) {
			return false
		}
		codec.WriteError(w, &codec.CodedError{Code: http.StatusForbidden, Message: "a client agent serves /v1/client requests through its servers, and it has none to ask"})
		return false
	}
	if err := verify(sig, signer.NodeSecretHash(), r.Method, r.URL.RequestURI(), now()); err != nil {
		codec.WriteError(w, &codec.CodedError{Code: http.StatusForbidden, Message: err.Error()})
		return false
	}
	return true
}
