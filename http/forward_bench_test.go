package http

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkForwardedWrite is the cost of a write sent through a follower
// against the same write sent to the leader: the extra is the follower's
// handling and its request to the leader. The leader here answers at once,
// so the figures are the forwarding's own, without Raft.
func BenchmarkForwardedWrite(b *testing.B) {
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"Index":7}`)
	}))
	defer leader.Close()
	_, follower := followerServer(b, newFakeForwarder(hostOf(leader)))
	body := `{"Job":{"ID":"web","Type":"service"}}`
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	for _, c := range []struct{ name, url string }{
		{"leader", leader.URL},
		{"follower", follower.URL},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Post(c.url+"/v1/jobs", "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}

// TestProxyBuffersLendAndTakeBack: the proxy's pool lends 32 KiB
// buffers, takes back its own and drops any other size.
func TestProxyBuffersLendAndTakeBack(t *testing.T) {
	b := proxyBuffers.Get()
	if len(b) != proxyBufferSize {
		t.Fatalf("lent %d bytes, want %d", len(b), proxyBufferSize)
	}
	proxyBuffers.Put(b)
	proxyBuffers.Put(make([]byte, 100)) // not the pool's: dropped, no panic
	proxyBuffers.Put(make([]byte, 10, proxyBufferSize))
	if got := proxyBuffers.Get(); len(got) != proxyBufferSize {
		t.Fatalf("lent %d bytes after Puts, want %d", len(got), proxyBufferSize)
	}
}
