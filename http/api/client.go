package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// Environment variables read by DefaultConfig. The CLI reads the same names
// for its flag defaults, so a shell configured once works for both.
const (
	EnvAddress   = "SCHED_ADDR"
	EnvToken     = "SCHED_TOKEN"
	EnvNamespace = "SCHED_NAMESPACE"
)

// DefaultAddress is the local agent's HTTP address, used when neither the
// Config nor the environment names one.
const DefaultAddress = "http://127.0.0.1:4646"

// HeaderToken carries the secret of the caller's token on every request.
const HeaderToken = "X-Sched-Token"

// Config says where and as whom a Client talks.
type Config struct {
	// Address is the base URL of any server agent, such as
	// "http://10.0.0.1:4646". Empty means DefaultAddress. A bare host:port
	// is taken as plain HTTP.
	Address string
	// Token is sent as X-Sched-Token on every request unless the call's
	// options name another. Empty sends no token.
	Token string
	// Namespace is sent as ?namespace= on every request unless the call's
	// options name another. Empty lets the server pick "default".
	Namespace string
	// HTTPClient does the requests. Nil means a client of its own with no
	// overall timeout, because blocking queries legitimately wait minutes;
	// bound calls with their context instead.
	HTTPClient *http.Client
	// TLS configures the client's own transport for https:// addresses
	// (CA, client certificate, server name). It is ignored when
	// HTTPClient is set: that client's transport is the caller's.
	TLS TLSConfig
}

// DefaultConfig returns a Config filled from SCHED_ADDR, SCHED_TOKEN,
// SCHED_NAMESPACE and the TLS variables (SCHED_CACERT, SCHED_CLIENT_CERT,
// SCHED_CLIENT_KEY, SCHED_TLS_SERVER_NAME), with DefaultAddress when
// SCHED_ADDR is unset.
func DefaultConfig() Config {
	c := Config{
		Address:   os.Getenv(EnvAddress),
		Token:     os.Getenv(EnvToken),
		Namespace: os.Getenv(EnvNamespace),
		TLS:       tlsConfigFromEnv(),
	}
	if c.Address == "" {
		c.Address = DefaultAddress
	}
	return c
}

// Client talks to one sched cluster. It is safe for concurrent use.
type Client struct {
	cfg  Config
	base string // scheme://host[:port][/prefix], no trailing slash
	http *http.Client
}

// Token is the token the client sends (Config.Token).
func (c *Client) Token() string { return c.cfg.Token }

// BaseURL is the server's address as scheme://host[:port][/prefix],
// with no trailing slash.
func (c *Client) BaseURL() string { return c.base }

// HTTPClient is the http.Client every request goes through.
func (c *Client) HTTPClient() *http.Client { return c.http }

// NewClient checks cfg, fills its defaults and returns a Client.
func NewClient(cfg Config) (*Client, error) {
	if cfg.Address == "" {
		cfg.Address = DefaultAddress
	}
	addr := cfg.Address
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, fmt.Errorf("api: invalid address %q: %w", cfg.Address, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("api: invalid address %q: scheme must be http or https", cfg.Address)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("api: invalid address %q: no host", cfg.Address)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("api: invalid address %q: must not carry a query or fragment", cfg.Address)
	}
	if cfg.HTTPClient == nil {
		// A transport of our own, so that tuning it (or a caller tuning
		// http.DefaultTransport) never leaks between clients.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if !cfg.TLS.IsZero() {
			if tr.TLSClientConfig, err = cfg.TLS.Build(); err != nil {
				return nil, err
			}
		}
		cfg.HTTPClient = &http.Client{Transport: tr}
	}
	return &Client{
		cfg:  cfg,
		base: strings.TrimSuffix(u.Scheme+"://"+u.Host+u.EscapedPath(), "/"),
		http: cfg.HTTPClient,
	}, nil
}

// Address returns the base URL the client sends requests to.
func (c *Client) Address() string { return c.base }

// StatusError is a non-2xx answer from the server. Body is the server's
// message with surrounding whitespace removed.
type StatusError struct {
	Code int
	Body string
}

// Error reads as Nomad's client words it, which scripts already match on.
func (e *StatusError) Error() string {
	return fmt.Sprintf("Unexpected response code: %d (%s)", e.Code, e.Body)
}

// IsNotFound reports whether err is, or wraps, a 404 StatusError.
func IsNotFound(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == http.StatusNotFound
}

// MaxErrorBody bounds how much of an error body is kept: the server sends
// one line, and a misbehaving proxy must not make us buffer a page.
const MaxErrorBody = 64 << 10

// request is one HTTP exchange, before options are applied.
type request struct {
	method string
	// path is already escaped (see PathOf).
	path   string
	params url.Values
	token  string
	// in, when non-nil, is encoded as the JSON body.
	in any
	// out, when non-nil, receives the decoded JSON body.
	out any
}

// PathOf joins segments into an escaped absolute path, so IDs holding
// slashes or spaces arrive as one segment.
func PathOf(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// do performs r and returns the response headers. It is the only place that
// touches the network, so encoding, auth and error mapping stay uniform.
func (c *Client) do(ctx context.Context, r request) (http.Header, error) {
	if strings.HasSuffix(r.path, "/") || strings.Contains(r.path, "//") {
		// An empty ID would silently address another endpoint.
		return nil, fmt.Errorf("api: %s %s: empty path segment (missing ID or name?)", r.method, r.path)
	}
	var body io.Reader
	if r.in != nil {
		buf, err := json.Marshal(r.in)
		if err != nil {
			return nil, fmt.Errorf("api: encode %s %s: %w", r.method, r.path, err)
		}
		body = bytes.NewReader(buf)
	}
	target := c.base + r.path
	if len(r.params) > 0 {
		target += "?" + r.params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return nil, fmt.Errorf("api: build %s %s: %w", r.method, r.path, err)
	}
	if r.in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if r.token != "" {
		req.Header.Set(HeaderToken, r.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("api: %s %s: %w", r.method, r.path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
		return nil, &StatusError{Code: resp.StatusCode, Body: strings.TrimSpace(string(msg))}
	}
	if r.out == nil {
		// Drain so the connection can be reused.
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Header, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(r.out); err != nil {
		return nil, fmt.Errorf("api: decode response of %s %s: %w", r.method, r.path, err)
	}
	return resp.Header, nil
}

// query runs a GET with the read options applied and returns its metadata.
func (c *Client) query(ctx context.Context, path string, params url.Values, q *QueryOptions, out any) (*QueryMeta, error) {
	if params == nil {
		params = url.Values{}
	}
	token := q.apply(c.cfg, params)
	h, err := c.do(ctx, request{method: http.MethodGet, path: path, params: params, token: token, out: out})
	if err != nil {
		return nil, err
	}
	return parseQueryMeta(h)
}

// write runs a PUT, POST or DELETE with the write options applied.
func (c *Client) write(ctx context.Context, method, path string, params url.Values, w *WriteOptions, in, out any) (*WriteMeta, error) {
	if params == nil {
		params = url.Values{}
	}
	token := w.apply(c.cfg, params)
	h, err := c.do(ctx, request{method: method, path: path, params: params, token: token, in: in, out: out})
	if err != nil {
		return nil, err
	}
	return parseWriteMeta(h)
}

// get is query for a typed result, so each read method is one line.
func get[T any](ctx context.Context, c *Client, path string, params url.Values, q *QueryOptions) (T, *QueryMeta, error) {
	var out T
	qm, err := c.query(ctx, path, params, q, &out)
	if err != nil {
		var zero T
		return zero, nil, err
	}
	return out, qm, nil
}

// send is write for a typed result.
func send[T any](ctx context.Context, c *Client, method, path string, params url.Values, w *WriteOptions, in any) (T, *WriteMeta, error) {
	var out T
	wm, err := c.write(ctx, method, path, params, w, in, &out)
	if err != nil {
		var zero T
		return zero, nil, err
	}
	return out, wm, nil
}
