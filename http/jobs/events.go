package jobs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
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

// eventAPI serves the event stream, /v1/event/stream.
type eventAPI struct{ *api }

// eventRoutes registers the event stream.
func (h eventAPI) eventRoutes() {
	h.core.Route(http.MethodGet, "/v1/event/stream", h.eventStream)
}

// eventTopics is a subscription: topic → keys ("*": every key); the topic
// "*" matches every topic.
type eventTopics map[string]map[string]bool

// parseEventTopics reads the topic parameters (`Job:web`, `Allocation:*`,
// `Node`, `*`). None means every topic.
func parseEventTopics(values []string) (eventTopics, error) {
	if len(values) > maxEventTopics {
		return nil, codec.BadRequest("topic: %d topics given, at most %d allowed", len(values), maxEventTopics)
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
			return nil, codec.BadRequest("topic: key of %q is over %d bytes", topic, maxEventKeyLen)
		}
		if topic != "*" && !slices.Contains(state.EventTopics, topic) {
			return nil, codec.BadRequest("topic: %q is not a topic (one of %s, or *)", topic, strings.Join(state.EventTopics, ", "))
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
func (h eventAPI) eventStream(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	q := h.core.Query(r)
	topics, err := parseEventTopics(q["topic"])
	if err != nil {
		return nil, err
	}
	var next uint64
	if v := q.Get("index"); v != "" {
		if next, err = strconv.ParseUint(v, 10, 64); err != nil {
			return nil, codec.BadRequest("index: %q is not a non-negative integer", v)
		}
	}
	ns := h.core.Namespace(r)
	visible := h.eventVisibility(r, ns)
	if err := h.checkEventTopics(r, topics, visible, ns); err != nil {
		return nil, err
	}
	buf := h.store.Events()
	if next == 0 {
		next = buf.LastIndex() + 1
	}
	heartbeat := h.eventHeartbeat
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
		return codec.AlreadyWritten{}, nil
	}
	defer h.core.StreamOpened()()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		batches, wake := buf.After(next, eventBatchRead)
		for _, b := range batches {
			next = b.Index + 1
			n := 0
			for i := range b.Events {
				ev := &b.Events[i]
				if !topics.matches(ev) || !visible(ev) {
					continue
				}
				if n == 0 {
					fmt.Fprintf(bw, `{"Index":%d,"Events":[`, b.Index)
				} else {
					bw.WriteByte(',')
				}
				bw.Write(h.events.encode(b, i)) // encoded once for every subscriber
				n++
			}
			if n > 0 {
				if _, err := bw.WriteString("]}\n"); err != nil {
					return codec.AlreadyWritten{}, nil // the client went away
				}
			}
		}
		if len(batches) > 0 {
			if flush() != nil {
				return codec.AlreadyWritten{}, nil
			}
			if len(batches) == eventBatchRead {
				continue
			}
		}
		select {
		case <-r.Context().Done():
			return codec.AlreadyWritten{}, nil
		case <-wake:
		case <-tick.C:
			if _, err := bw.WriteString("{}\n"); err != nil || flush() != nil {
				return codec.AlreadyWritten{}, nil
			}
		}
	}
}

// eventVisibility returns what of the stream the request may see: the
// request's namespace (or every one with `*`) and, when ACLs are checked,
// what its token may read.
func (h eventAPI) eventVisibility(r *http.Request, ns string) func(ev *state.Event) bool {
	acl := h.core.ACL(r)
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
func (h eventAPI) checkEventTopics(r *http.Request, topics eventTopics, visible func(*state.Event) bool, ns string) error {
	canSee := func(topic string) bool {
		switch {
		case topic == state.TopicNode:
			return visible(&state.Event{Topic: topic})
		case ns != allNamespaces:
			return visible(&state.Event{Topic: topic, Namespace: ns})
		}
		acl := h.core.ACL(r)
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
// (each one still filters by its topics and ACL), and only when some
// subscriber's filters let it through: an event nobody asked for is never
// encoded. It keeps the encodings of the most recent entries, oldest
// evicted first.
type eventCache struct {
	mu      sync.Mutex
	byIndex map[uint64][][]byte // per entry, each event's JSON or nil
	order   []uint64            // indexes in byIndex, oldest first
	scratch bytes.Buffer        // reused by every encoding, under mu
	enc     *json.Encoder       // writes to scratch
}

// encode returns the JSON of b's i-th event.
func (c *eventCache) encode(b state.EventBatch, i int) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	enc, ok := c.byIndex[b.Index]
	if !ok {
		enc = make([][]byte, len(b.Events))
		if c.byIndex == nil {
			c.byIndex = map[uint64][][]byte{}
			c.enc = json.NewEncoder(&c.scratch)
		}
		if len(c.order) == eventCacheSize {
			delete(c.byIndex, c.order[0])
			c.order = append(c.order[:0], c.order[1:]...)
		}
		c.byIndex[b.Index] = enc
		c.order = append(c.order, b.Index)
	}
	if enc[i] == nil {
		enc[i] = c.encodeEvent(&b.Events[i])
	}
	return enc[i]
}

// encodeEvent writes ev as eventWire would encode, with its object under
// its topic's name in Payload, into one exactly sized slice. Only the
// object goes through encoding/json (into the reused scratch buffer); the
// envelope is appended by hand, which spares the allocations of a wire
// struct, a payload map and a copy of the whole encoding.
func (c *eventCache) encodeEvent(ev *state.Event) []byte {
	c.scratch.Reset()
	if err := c.enc.Encode(ev.Object); err != nil {
		return []byte(`{}`)
	}
	obj := bytes.TrimSuffix(c.scratch.Bytes(), []byte("\n"))
	size := 128 + len(obj) + len(ev.Topic)*2 + len(ev.Type) + len(ev.Key) + len(ev.Namespace)
	for _, k := range ev.FilterKeys {
		size += len(k) + 3
	}
	out := make([]byte, 0, size)
	out = append(out, `{"Topic":`...)
	out = state.AppendJSONString(out, ev.Topic)
	out = append(out, `,"Type":`...)
	out = state.AppendJSONString(out, ev.Type)
	out = append(out, `,"Key":`...)
	out = state.AppendJSONString(out, ev.Key)
	out = append(out, `,"Namespace":`...)
	out = state.AppendJSONString(out, ev.Namespace)
	out = append(out, `,"FilterKeys":[`...)
	for i, k := range ev.FilterKeys {
		if i > 0 {
			out = append(out, ',')
		}
		out = state.AppendJSONString(out, k)
	}
	out = append(out, `],"Index":`...)
	out = strconv.AppendUint(out, ev.Index, 10)
	out = append(out, `,"Payload":{`...)
	out = state.AppendJSONString(out, ev.Topic)
	out = append(out, ':')
	out = append(out, obj...)
	out = append(out, "}}"...)
	return out
}

// wireEvent is an event in its wire struct: what encodeEvent's output
// decodes to (the tests compare the two encodings).
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
