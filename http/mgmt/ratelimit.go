package mgmt

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/schedhq/sched/http/jsonapi"
)

// DefaultRateLimit is the management API's default rate limit:
// requests per second per token, TFE's documented limit.
const DefaultRateLimit = 30

// Rate-limit response headers, as TFE sends them and go-tfe reads them.
const (
	HeaderRateLimitLimit     = "X-RateLimit-Limit"
	HeaderRateLimitRemaining = "X-RateLimit-Remaining"
	// HeaderRateLimitReset is the number of seconds (a decimal, e.g.
	// "0.033") until the next request would be admitted: 0 while requests
	// are admitted.
	HeaderRateLimitReset = "X-RateLimit-Reset"
)

// rateLimiter is a token rateBucket per key (a token's accessor, or the
// client's address for requests without a valid token): each rateBucket holds
// up to rate tokens, refills at rate tokens per second, and a request
// takes one. A burst of rate requests is admitted at once; a steady
// client is held to rate per second.
//
// Buckets live only on the server that serves the request (writes are
// counted by the leader, to which followers forward them): the limit
// guards a server, it is not a cluster-wide quota.
type rateLimiter struct {
	// rate is requests per second; 0 or less disables the limit.
	rate float64
	now  func() time.Time

	mu      sync.Mutex
	buckets map[string]*rateBucket
}

type rateBucket struct {
	tokens float64
	last   time.Time
}

// maxBuckets bounds the rateBucket map: past it, buckets that have refilled
// (and so hold nothing a fresh rateBucket would not) are dropped.
const maxBuckets = 10000

// newRateLimiter returns a limiter of limit requests per second per key:
// 0 means DefaultRateLimit, a negative limit disables it. now is
// the clock (tests move it).
func newRateLimiter(limit float64, now func() time.Time) *rateLimiter {
	if limit == 0 {
		limit = DefaultRateLimit
	}
	return &rateLimiter{rate: limit, now: now, buckets: map[string]*rateBucket{}}
}

// take spends one token of key's rateBucket. It returns whether the request
// is admitted, the whole tokens left, and how long until the next request
// would be admitted.
func (l *rateLimiter) take(key string) (admitted bool, remaining int, reset time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.sweepLocked(now)
		}
		b = &rateBucket{tokens: l.rate, last: now}
		l.buckets[key] = b
	}
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = math.Min(l.rate, b.tokens+elapsed.Seconds()*l.rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		admitted = true
	}
	if b.tokens < 1 {
		reset = time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	}
	return admitted, int(b.tokens), reset
}

// sweepLocked drops buckets that are full again. l.mu must be held.
func (l *rateLimiter) sweepLocked(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.rate {
			delete(l.buckets, k)
		}
	}
}

// admit applies the limit to one request of key: it sets the rate-limit
// headers and returns a 429 error when the request is over the limit.
func (l *rateLimiter) admit(w http.ResponseWriter, key string) error {
	if l.rate <= 0 {
		return nil
	}
	admitted, remaining, reset := l.take(key)
	h := w.Header()
	h.Set(HeaderRateLimitLimit, strconv.FormatFloat(l.rate, 'f', -1, 64))
	h.Set(HeaderRateLimitRemaining, strconv.Itoa(remaining))
	h.Set(HeaderRateLimitReset, strconv.FormatFloat(reset.Seconds(), 'f', 3, 64))
	if admitted {
		return nil
	}
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(reset.Seconds()))))
	return jsonapi.NewError(http.StatusTooManyRequests, jsonapi.TitleRateLimited,
		fmt.Sprintf("rate limit of %s requests per second exceeded; retry in %.3fs", strconv.FormatFloat(l.rate, 'f', -1, 64), reset.Seconds()))
}
