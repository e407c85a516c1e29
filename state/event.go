package state

// Event stream topics: one per kind of object whose changes are streamed.
const (
	TopicJob        = "Job"
	TopicEvaluation = "Evaluation"
	TopicAllocation = "Allocation"
	TopicDeployment = "Deployment"
	TopicNode       = "Node"
	TopicService    = "Service"
)

// EventTopics lists every topic, in the order the stream documents them.
var EventTopics = []string{TopicJob, TopicEvaluation, TopicAllocation, TopicDeployment, TopicNode, TopicService}

// Event is one change to the replicated state, made by the log entry at
// Index. Object is the object as written (or, for a deletion, as it was
// before); it is shared with the store and must never be mutated. Key is
// what a subscription's `Topic:Key` matches first (a job's ID, an
// allocation's ID, a service's name), FilterKeys what it matches besides
// (the job an allocation belongs to, ...).
type Event struct {
	Topic      string
	Type       string
	Key        string
	Namespace  string
	FilterKeys []string
	Index      uint64
	Object     any `json:"-"`
}

// EventBatch is what one applied log entry produced: the stream's unit,
// sent as one NDJSON line {"Index":N,"Events":[...]}.
type EventBatch struct {
	Index  uint64
	Events []Event
}
