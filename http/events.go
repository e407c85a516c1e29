package http

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/state"
)

// Event stream limits.
const (
	// defaultEventHeartbeat is how often an idle stream sends `{}`, so
	// that clients and proxies see the connection is alive.
	defaultEventHeartbeat = 10 * time.Second
	// maxEventTopics bounds the topic parameters of one subscription.
	maxEventTopics = 64
	// maxEventKeyLen bounds one topic filter's key.
	maxEventKeyLen = 512
	// eventBatchRead is how many log entries' events are read from the
	// buffer at once.
	eventBatchRead = 64
)

// eventRoutes registers the event stream.
func (s *Server) eventRoutes() {
	s.handle(http.MethodGet, "/v1/event/stream", s.eventStream)
}

// eventTopics is a subscription: topic → keys ("*": every key); the topic
// "*" matches every topic.
type eventTopics map[string]map[string]bool

// parseEventTopics reads the topic parameters (`Job:web`, `Allocation:*`,
// `Node`, `*`). None means every topic.
func parseEventTopics(values []string) (eventTopics, error) {
	if len(values) > maxEventTopics {
		return nil, badRequest("topic: %d topics given, at most %d allowed", len(values), maxEventTopics)
	}
	out := eventTopics{}
	if len(values) == 0 {
		out["*"] = map[string]bool{"*": true}
		return out, nil
	}
	for _, v := range values {
		topic, key, ok := strings.Cut(v, ":")
		if !ok || key == "" {
			key = "*"
		}
		if len(key) > maxEventKeyLen {
			return nil, badRequest("topic: key of %q is over %d bytes", topic, maxEventKeyLen)
		}
		if topic != "*" && !slices.Contains(state.EventTopics, topic) {
			return nil, badRequest("topic: %q is not a topic (one of %s, or *)", topic, strings.Join(state.EventTopics, ", "))
		}
		if out[topic] == nil {
			out[topic] = map[string]bool{}
		}
		out[topic][key] = true
	}
	return out, nil
}

// matches reports whether ev is subscribed to.
func (t eventTopics) matches(ev *state.Event) bool {
	for _, topic := range []string{ev.Topic, "*"} {
		keys := t[topic]
		if keys == nil {
			continue
		}
		if keys["*"] || keys[ev.Key] {
			return true
		}
		for _, k := range ev.FilterKeys {
			if keys[k] {
				return true
			}
		}
	}
	return false
}

// eventWire is an event as the stream encodes it: the object under its
// topic's name in Payload.
type eventWire struct {
	Topic      string
	Type       string
	Key        string
	Namespace  string
	FilterKeys []string
	Index      uint64
	Payload    map[string]any
}

// eventLine is one NDJSON line of the stream.
type eventLine struct {
	Index  uint64
	Events []eventWire
}

// eventStream serves GET /v1/event/stream: NDJSON, one line per applied
// log entry with matching events, `{}` as heartbeat. index=N starts at the
// first entry at or after N still kept (the buffer is bounded), otherwise
// the stream starts with the next entry applied. namespace (default
// "default", `*` every namespace) filters namespaced topics; the caller's
// ACL filters every event: read-job in the event's namespace, node:read
// for Node events.
func (s *Server) eventStream(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	q := r.URL.Query()
	topics, err := parseEventTopics(q["topic"])
	if err != nil {
		return nil, err
	}
	var next uint64
	if v := q.Get("index"); v != "" {
		if next, err = strconv.ParseUint(v, 10, 64); err != nil {
			return nil, badRequest("index: %q is not a non-negative integer", v)
		}
	}
	ns := namespaceOf(r)
	visible := s.eventVisibility(r, ns)
	if err := checkEventTopics(r, topics, visible, ns); err != nil {
		return nil, err
	}
	buf := s.store.Events()
	if next == 0 {
		next = buf.LastIndex() + 1
	}
	heartbeat := s.eventHeartbeat
	if heartbeat <= 0 {
		heartbeat = defaultEventHeartbeat
	}

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	bw := bufio.NewWriter(w)
	flush := func() error {
		if err := bw.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	}
	if flush() != nil {
		return alreadyWritten{}, nil
	}
	s.metrics.eventSubscribers.Inc()
	defer s.metrics.eventSubscribers.Dec()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		batches, wake := buf.After(next, eventBatchRead)
		for _, b := range batches {
			next = b.Index + 1
			var encoded [][]byte // b's events, encoded once for every subscriber
			n := 0
			for i := range b.Events {
				ev := &b.Events[i]
				if !topics.matches(ev) || !visible(ev) {
					continue
				}
				if encoded == nil {
					encoded = s.events.encode(b)
				}
				if n == 0 {
					fmt.Fprintf(bw, `{"Index":%d,"Events":[`, b.Index)
				} else {
					bw.WriteByte(',')
				}
				bw.Write(encoded[i])
				n++
			}
			if n > 0 {
				if _, err := bw.WriteString("]}\n"); err != nil {
					return alreadyWritten{}, nil // the client went away
				}
			}
		}
		if len(batches) > 0 {
			if flush() != nil {
				return alreadyWritten{}, nil
			}
			if len(batches) == eventBatchRead {
				continue
			}
		}
		select {
		case <-r.Context().Done():
			return alreadyWritten{}, nil
		case <-wake:
		case <-tick.C:
			if _, err := bw.WriteString("{}\n"); err != nil || flush() != nil {
				return alreadyWritten{}, nil
			}
		}
	}
}

// eventVisibility returns what of the stream the request may see: the
// request's namespace (or every one with `*`) and, when ACLs are checked,
// what its token may read.
func (s *Server) eventVisibility(r *http.Request, ns string) func(ev *state.Event) bool {
	acl := aclOf(r)
	return func(ev *state.Event) bool {
		if ev.Topic == state.TopicNode {
			return acl == nil || acl.AllowNodeRead()
		}
		if ns != allNamespaces && ev.Namespace != ns {
			return false
		}
		return acl == nil || acl.AllowNamespaceOperation(ev.Namespace, state.NamespaceCapabilityReadJob)
	}
}

// checkEventTopics refuses (403) a subscription to a topic the caller can
// never see anything of: a Node topic without node:read, another without
// read-job in the namespace (or in any namespace with `*`).
func checkEventTopics(r *http.Request, topics eventTopics, visible func(*state.Event) bool, ns string) error {
	canSee := func(topic string) bool {
		switch {
		case topic == state.TopicNode:
			return visible(&state.Event{Topic: topic})
		case ns != allNamespaces:
			return visible(&state.Event{Topic: topic, Namespace: ns})
		}
		acl := aclOf(r)
		return acl == nil || acl.AllowAnyNamespace(state.NamespaceCapabilityReadJob)
	}
	any := false
	for topic := range topics {
		if topic == "*" {
			for _, t := range state.EventTopics {
				any = any || canSee(t)
			}
			continue
		}
		if !canSee(topic) {
			return errPermissionDenied
		}
		any = true
	}
	if !any {
		return errPermissionDenied
	}
	return nil
}

// eventCacheSize is how many log entries' encoded events are kept for
// the subscribers that have not read them yet.
const eventCacheSize = 256

// eventCache encodes each event once, whatever the number of subscribers
// (each one still filters by its topics and ACL). It keeps the encodings
// of the most recent entries, oldest evicted first.
type eventCache struct {
	mu      sync.Mutex
	byIndex map[uint64][][]byte
	order   []uint64 // indexes in byIndex, oldest first
}

// encode returns the JSON of each of b's events, in order.
func (c *eventCache) encode(b state.EventBatch) [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if enc, ok := c.byIndex[b.Index]; ok {
		return enc
	}
	enc := make([][]byte, len(b.Events))
	for i := range b.Events {
		buf, err := json.Marshal(wireEvent(&b.Events[i]))
		if err != nil {
			buf = []byte(`{}`)
		}
		enc[i] = buf
	}
	if c.byIndex == nil {
		c.byIndex = map[uint64][][]byte{}
	}
	if len(c.order) == eventCacheSize {
		delete(c.byIndex, c.order[0])
		c.order = c.order[1:]
	}
	c.byIndex[b.Index] = enc
	c.order = append(c.order, b.Index)
	return enc
}

// wireEvent encodes an event's object under its topic's name.
func wireEvent(ev *state.Event) eventWire {
	keys := ev.FilterKeys
	if keys == nil {
		keys = []string{}
	}
	return eventWire{
		Topic: ev.Topic, Type: ev.Type, Key: ev.Key, Namespace: ev.Namespace,
		FilterKeys: keys, Index: ev.Index,
		Payload: map[string]any{ev.Topic: ev.Object},
	}
}
