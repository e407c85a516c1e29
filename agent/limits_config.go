package agent

import (
	"errors"
	"fmt"
	"time"
)

// LimitsConfig bounds what clients of the HTTP API may hold on to:
//
//	limits {
//	  http_max_conns_per_client = 100     # open connections per client IP; 0: no cap
//	  http_read_timeout         = "30s"   # reading a request's body
//	  http_read_header_timeout  = "10s"   # reading a request's headers
//	  http_write_timeout        = "1m"    # writing an answer; blocking queries get their wait on top, streams none
//	  http_idle_timeout         = "2m"    # a keep-alive connection between requests
//	  http_max_header_bytes     = 1048576
//	  max_blocking_queries      = 10000   # blocking reads (?index=) waiting at once; -1: no cap
//	}
//
// Zero or unset values take these defaults, except that a -dev agent
// (loopback only) has no connection cap. Loopback clients are never
// counted against the cap.
type LimitsConfig struct {
	HTTPMaxConnsPerClient int
	HTTPReadTimeout       time.Duration
	HTTPReadHeaderTimeout time.Duration
	HTTPWriteTimeout      time.Duration
	HTTPIdleTimeout       time.Duration
	HTTPMaxHeaderBytes    int
	// MaxBlockingQueries bounds the blocking reads a server holds waiting
	// at once; one beyond it is answered at once with the current result
	// and index. Negative means no bound.
	MaxBlockingQueries int
}

// Defaults of LimitsConfig.
const (
	DefaultHTTPMaxConnsPerClient = 100
	DefaultHTTPReadTimeout       = 30 * time.Second
	DefaultHTTPReadHeaderTimeout = 10 * time.Second
	DefaultHTTPWriteTimeout      = time.Minute
	DefaultHTTPIdleTimeout       = 2 * time.Minute
	DefaultHTTPMaxHeaderBytes    = 1 << 20
	// DefaultMaxBlockingQueries is sized to memory: a waiting blocking
	// read costs a server about 20 KB (its connection, goroutines and
	// buffers; BenchmarkBlockingWaiters: +196 MB RSS for 10,000).
	DefaultMaxBlockingQueries = 10000
)

type fileLimits struct {
	HTTPMaxConnsPerClient *int    `hcl:"http_max_conns_per_client,optional"`
	HTTPReadTimeout       *string `hcl:"http_read_timeout,optional"`
	HTTPReadHeaderTimeout *string `hcl:"http_read_header_timeout,optional"`
	HTTPWriteTimeout      *string `hcl:"http_write_timeout,optional"`
	HTTPIdleTimeout       *string `hcl:"http_idle_timeout,optional"`
	HTTPMaxHeaderBytes    *int    `hcl:"http_max_header_bytes,optional"`
	MaxBlockingQueries    *int    `hcl:"max_blocking_queries,optional"`
}

// limitDurations is the block's duration keys, for parsing and defaults.
func (l *LimitsConfig) limitDurations() []struct {
	name string
	dst  *time.Duration
	def  time.Duration
} {
	return []struct {
		name string
		dst  *time.Duration
		def  time.Duration
	}{
		{"http_read_timeout", &l.HTTPReadTimeout, DefaultHTTPReadTimeout},
		{"http_read_header_timeout", &l.HTTPReadHeaderTimeout, DefaultHTTPReadHeaderTimeout},
		{"http_write_timeout", &l.HTTPWriteTimeout, DefaultHTTPWriteTimeout},
		{"http_idle_timeout", &l.HTTPIdleTimeout, DefaultHTTPIdleTimeout},
	}
}

// merge applies a config file's limits block over l.
func (l *LimitsConfig) merge(f *fileLimits) error {
	if f == nil {
		return nil
	}
	set(&l.HTTPMaxConnsPerClient, f.HTTPMaxConnsPerClient)
	set(&l.HTTPMaxHeaderBytes, f.HTTPMaxHeaderBytes)
	set(&l.MaxBlockingQueries, f.MaxBlockingQueries)
	src := []*string{f.HTTPReadTimeout, f.HTTPReadHeaderTimeout, f.HTTPWriteTimeout, f.HTTPIdleTimeout}
	for i, d := range l.limitDurations() {
		if src[i] == nil {
			continue
		}
		v, err := time.ParseDuration(*src[i])
		if err != nil {
			return fmt.Errorf("limits.%s: %q is not a duration with units, such as 30s or 5m", d.name, *src[i])
		}
		*d.dst = v
	}
	return nil
}

// finish fills the defaults and checks l.
func (l *LimitsConfig) finish(dev bool) error {
	var errs []error
	for _, d := range l.limitDurations() {
		if *d.dst < 0 {
			errs = append(errs, fmt.Errorf("limits.%s: must not be negative", d.name))
		}
		if *d.dst == 0 {
			*d.dst = d.def
		}
	}
	if l.HTTPMaxConnsPerClient < 0 {
		errs = append(errs, errors.New("limits.http_max_conns_per_client: must not be negative"))
	}
	if l.HTTPMaxConnsPerClient == 0 && !dev {
		l.HTTPMaxConnsPerClient = DefaultHTTPMaxConnsPerClient
	}
	if l.HTTPMaxHeaderBytes < 0 {
		errs = append(errs, errors.New("limits.http_max_header_bytes: must not be negative"))
	}
	if l.HTTPMaxHeaderBytes == 0 {
		l.HTTPMaxHeaderBytes = DefaultHTTPMaxHeaderBytes
	}
	if l.MaxBlockingQueries < -1 {
		errs = append(errs, errors.New("limits.max_blocking_queries: must be positive, or -1 for no cap"))
	}
	if l.MaxBlockingQueries == 0 {
		l.MaxBlockingQueries = DefaultMaxBlockingQueries
	}
	return errors.Join(errs...)
}
