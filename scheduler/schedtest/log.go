package schedtest

import (
	"sync"

	"github.com/schedhq/sched/state/store"
)

// Log stands in for the Raft log: it encodes each command as a log entry
// and applies it to its store at the next index, one command at a time,
// in the order Apply is called.
type Log struct {
	// Store is the state the commands are applied to.
	Store *store.Store

	mu    sync.Mutex
	index uint64
}

// NewLog returns a log over an empty store.
func NewLog(t TestingT) *Log {
	t.Helper()
	st, err := store.NewStore(store.Config{})
	if err != nil {
		t.Fatalf("new store: %v", err)
	}
	return &Log{Store: st, index: st.LatestIndex()}
}

// Apply encodes one command and applies it at the next index. It returns
// the command's response and index; a command the store refuses still
// takes its index, as a committed log entry would.
func (l *Log) Apply(t store.MessageType, req any) (any, uint64, error) {
	data, err := store.Encode(t, req)
	if err != nil {
		return nil, 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.index++
	resp := l.Store.Apply(l.index, data)
	if err, ok := resp.(error); ok {
		return nil, l.index, err
	}
	return resp, l.index, nil
}

// Index is the index of the last command applied.
func (l *Log) Index() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.index
}
