package clientapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/schedhq/sched/http/codec"
)

// agentSelfCheckTimeout bounds the question a client-only agent asks its
// server before it answers GET /v1/agent/self.
const agentSelfCheckTimeout = 5 * time.Second

// checkAgentRead decides whether the caller may read a client-only
// agent's /v1/agent/self, which names the node and the doors the agent's
// configuration leaves open. A client agent resolves no token, so it asks
// its server the very question the server answers for its own
// /v1/agent/self (agent:read), with the caller's token: the server's
// refusal (401/403) is the answer, as it words it. With no server to ask
// the caller is refused with a 503: an agent that cannot check a token
// does not tell who it is or what it leaves open. A client that follows
// no server (a unit test's) has no ACL rules to apply, and answers.
func checkAgentRead(r *http.Request, c Client) error {
	f, ok := c.(ServerFollower)
	if !ok {
		return nil
	}
	target, err := serverURL(f.CurrentServer())
	if err != nil {
		return &codec.CodedError{Code: http.StatusServiceUnavailable,
			Message: "this client agent has no server to check the token against; its security findings are in its log at start"}
	}
	ctx, cancel := context.WithTimeout(r.Context(), agentSelfCheckTimeout)
	defer cancel()
	target.Path = "/v1/agent/self"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return err
	}
	for _, h := range []string{"X-Sched-Token", "X-Nomad-Token", "Authorization"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	transport := &http.Transport{DisableKeepAlives: true}
	if t, ok := c.(interface{ ServerTLS() *tls.Config }); ok && t.ServerTLS() != nil {
		transport.TLSClientConfig = t.ServerTLS()
	}
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return &codec.CodedError{Code: http.StatusBadGateway,
			Message: fmt.Sprintf("cannot reach the client's server at %s to check the token: %v", target.Host, err), Err: err}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch {
	case resp.StatusCode == http.StatusOK:
		return nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return &codec.CodedError{Code: resp.StatusCode, Message: strings.TrimSpace(string(body))}
	default:
		return &codec.CodedError{Code: http.StatusBadGateway,
			Message: fmt.Sprintf("the client's server at %s answered %d to the token check", target.Host, resp.StatusCode)}
	}
}
