package store

import (
	"sync"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// allocWatch wakes the blocking reads of one allocation (AllocByID with a
// watch set) when that allocation is written, as a memdb row's watch
// channel did. The allocations table's own watch channels are per bucket
// (alloc_table.go): a read of one allocation would also wake for the
// ~250 others of its bucket at a million, and the read then answers at
// once, since the table's index has moved. Channels exist only for the
// allocations someone watches; a write closes and forgets those of the
// allocations it wrote.
type allocWatch struct {
	mu    sync.Mutex
	chans map[string]chan struct{}
}

// maxAllocWatches bounds how many allocations have a channel: watches of
// allocations that are never written (an ID that does not exist) would
// otherwise stay. Past it, every channel is closed (an early wake-up of a
// blocking read is allowed: it re-runs and compares indexes).
const maxAllocWatches = 1 << 16

// add adds to ws the channel of the allocation id. It must be called
// before the read whose result it watches, so that a write committed
// after the read's transaction opened closes it.
func (w *allocWatch) add(ws memdb.WatchSet, id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.chans[id]
	if !ok {
		if len(w.chans) >= maxAllocWatches {
			w.closeAllLocked()
		}
		if w.chans == nil {
			w.chans = map[string]chan struct{}{}
		}
		ch = make(chan struct{})
		w.chans[id] = ch
	}
	ws.Add(ch)
}

// notify closes the channels of the allocations a committed command wrote.
func (w *allocWatch) notify(writes []written) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.chans) == 0 {
		return
	}
	for _, wr := range writes {
		if wr.table != TableAllocs {
			continue
		}
		id := wr.obj.(*state.Allocation).ID
		if ch, ok := w.chans[id]; ok {
			close(ch)
			delete(w.chans, id)
		}
	}
}

// closeAll closes every channel (after a restore, or when too many).
func (w *allocWatch) closeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closeAllLocked()
}

func (w *allocWatch) closeAllLocked() {
	for id, ch := range w.chans {
		close(ch)
		delete(w.chans, id)
	}
}
