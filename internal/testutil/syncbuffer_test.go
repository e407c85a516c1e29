package testutil

import (
	"strings"
	"sync"
	"testing"
)

// Concurrent writes and reads are safe (run with -race) and lose nothing.
func TestSyncBufferConcurrentWrites(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 400) {
		t.Errorf("got %d bytes, want 400", len(got))
	}
}
