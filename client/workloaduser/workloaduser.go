// Package workloaduser gives every allocation on a client a uid of its
// own, drawn from a configured range, so that the tasks of one allocation
// can neither signal another allocation's processes nor read the files it
// keeps in its allocation directory. The tasks of one allocation share
// its uid, as they share its directory.
//
// A workload uid need not exist in /etc/passwd: a task runs with it
// directly, with a gid of the same number and no supplementary groups.
// Only a client that runs as root can switch uids; elsewhere tasks run as
// the client's own user and no pool is used.
package workloaduser

import (
	"errors"
	"fmt"
	"sync"
)

// Defaults of Range in an agent's configuration (client { users { … } }).
const (
	DefaultMin uint32 = 80000
	DefaultMax uint32 = 89999
)

// ErrExhausted is the failure of an allocation that finds every uid of
// the range held by other allocations.
var ErrExhausted = errors.New("no workload uid free")

// ErrClaimed is the failure to claim, for a restored allocation, a uid
// that another allocation holds.
var ErrClaimed = errors.New("workload uid already held")

// Range is the uids handed out, Min through Max inclusive. Its zero value
// means no range: dynamic workload users are off.
type Range struct {
	Min, Max uint32
}

// IsZero reports the zero Range.
func (r Range) IsZero() bool { return r == Range{} }

// Validate refuses a range that is empty or reaches uid 0 (root).
func (r Range) Validate() error {
	if r.Min == 0 {
		return fmt.Errorf("workload uid range %d-%d: the minimum must be above 0 (root)", r.Min, r.Max)
	}
	if r.Max < r.Min {
		return fmt.Errorf("workload uid range %d-%d: the maximum is below the minimum", r.Min, r.Max)
	}
	return nil
}

// String is "min-max".
func (r Range) String() string { return fmt.Sprintf("%d-%d", r.Min, r.Max) }

func (r Range) contains(uid uint32) bool { return uid >= r.Min && uid <= r.Max }

// Pool hands out the uids of a Range, each to one owner (an allocation
// ID) at a time. It holds only memory: a client persists each
// allocation's uid with the allocation's state and claims it again
// (Claim) when it restarts, before it hands out new ones.
//
// A released uid is handed out again only after every other free uid of
// the range: processes a destroyed allocation left behind are killed
// when it is destroyed (see Kill), and going round the range before
// reusing a uid narrows what could still be missed to the oldest. Pool is
// safe for concurrent use.
type Pool struct {
	r Range

	mu      sync.Mutex
	byUID   map[uint32]string
	byOwner map[string]uint32
	// next is where the next search for a free uid starts.
	next uint32
}

// NewPool returns an empty pool of r.
func NewPool(r Range) (*Pool, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &Pool{r: r, byUID: map[uint32]string{}, byOwner: map[string]uint32{}, next: r.Min}, nil
}

// Range is the pool's range.
func (p *Pool) Range() Range { return p.r }

// Acquire gives owner a free uid of the range, or the one it holds
// already. It fails with ErrExhausted when every uid is held.
func (p *Pool) Acquire(owner string) (uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if uid, ok := p.byOwner[owner]; ok {
		return uid, nil
	}
	size := uint64(p.r.Max) - uint64(p.r.Min) + 1
	uid := p.next
	for range size {
		if _, held := p.byUID[uid]; !held {
			p.holdLocked(owner, uid)
			p.next = p.after(uid)
			return uid, nil
		}
		uid = p.after(uid)
	}
	return 0, fmt.Errorf("%w: uids %s are all held by other allocations on this client", ErrExhausted, p.r)
}

// after is the uid following uid in the range, wrapping round.
func (p *Pool) after(uid uint32) uint32 {
	if uid >= p.r.Max {
		return p.r.Min
	}
	return uid + 1
}

// Claim records that owner holds uid, as a restored allocation does. A
// uid outside the range (the range changed since) is recorded too: the
// allocation keeps it, and the pool never hands it out anyway. Claiming
// a uid another owner holds fails with ErrClaimed.
func (p *Pool) Claim(owner string, uid uint32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.byUID[uid]; ok {
		if cur == owner {
			return nil
		}
		return fmt.Errorf("%w: uid %d is allocation %s's", ErrClaimed, uid, cur)
	}
	if prev, ok := p.byOwner[owner]; ok {
		delete(p.byUID, prev)
	}
	p.holdLocked(owner, uid)
	return nil
}

func (p *Pool) holdLocked(owner string, uid uint32) {
	p.byUID[uid] = owner
	p.byOwner[owner] = uid
}

// Release frees the uid owner holds, if any.
func (p *Pool) Release(owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if uid, ok := p.byOwner[owner]; ok {
		delete(p.byOwner, owner)
		delete(p.byUID, uid)
	}
}

// Held is the uid owner holds, and whether it holds one.
func (p *Pool) Held(owner string) (uint32, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	uid, ok := p.byOwner[owner]
	return uid, ok
}

// InUse is how many uids are held.
func (p *Pool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byUID)
}
