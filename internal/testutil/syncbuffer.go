package testutil

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer that one goroutine may write while another
// reads it: a process's output, a logger's, or a streamed response a test
// waits on. Its zero value is an empty buffer ready to use.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
