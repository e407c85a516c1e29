package schedtest

import (
	"fmt"
	"sync"
)

// IDs makes sequential UUID-shaped IDs, so a test reads the same IDs every
// run. Its zero value starts at 1.
type IDs struct {
	mu sync.Mutex
	n  int
}

// Next returns the next ID.
func (c *IDs) Next() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", c.n)
}
