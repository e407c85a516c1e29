package state

// Scheduler algorithms: how the ranker scores a node that fits.
const (
	// SchedulerAlgorithmBinpack scores fuller nodes higher, packing
	// allocations onto as few nodes as possible (the default).
	SchedulerAlgorithmBinpack = "binpack"
	// SchedulerAlgorithmSpread scores emptier nodes higher, spreading
	// allocations across the nodes.
	SchedulerAlgorithmSpread = "spread"
)

// SchedulerConfiguration is the cluster's scheduler configuration, one
// replicated object set by GET/PUT /v1/operator/scheduler/configuration
// (Nomad's wire shape). The store answers DefaultSchedulerConfiguration
// until an operator writes one.
type SchedulerConfiguration struct {
	// SchedulerAlgorithm is binpack or spread; a node pool may override
	// it (NodePool.SchedulerConfiguration["SchedulerAlgorithm"]).
	SchedulerAlgorithm string
	// PreemptionConfig says which schedulers may evict lower-priority
	// allocations to place a higher-priority one.
	PreemptionConfig PreemptionConfig
	// MemoryOversubscriptionEnabled lets a task's memory_max (MemoryMaxMB)
	// reach the client: the task may use up to it, while the scheduler
	// counts only its memory. Off, memory_max is ignored.
	MemoryOversubscriptionEnabled bool
	// RejectJobRegistration refuses job registrations, dispatches and
	// reverts of every token but a management one.
	RejectJobRegistration bool
	// PauseEvalBroker stops the leader's eval broker from handing out
	// evaluations until it is unset.
	PauseEvalBroker bool
	CreateIndex     uint64
	ModifyIndex     uint64
}

// PreemptionConfig enables preemption per scheduler type.
type PreemptionConfig struct {
	SystemSchedulerEnabled   bool
	SysBatchSchedulerEnabled bool
	BatchSchedulerEnabled    bool
	ServiceSchedulerEnabled  bool
}

// DefaultSchedulerConfiguration is the configuration of a cluster whose
// operator never wrote one: binpack, preemption for system jobs only, as
// Nomad's.
func DefaultSchedulerConfiguration() *SchedulerConfiguration {
	return &SchedulerConfiguration{
		SchedulerAlgorithm: SchedulerAlgorithmBinpack,
		PreemptionConfig:   PreemptionConfig{SystemSchedulerEnabled: true},
	}
}

// Copy returns a copy of c (nil for nil).
func (c *SchedulerConfiguration) Copy() *SchedulerConfiguration { return ClonePtr(c) }

// Validate checks what an operator may set. An empty SchedulerAlgorithm
// is binpack (Canonicalize fills it).
func (c *SchedulerConfiguration) Validate() error {
	var v ValidationError
	switch c.SchedulerAlgorithm {
	case "", SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread:
	default:
		v.Add("SchedulerAlgorithm", "must be %q or %q, got %q", SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread, c.SchedulerAlgorithm)
	}
	return v.Err()
}

// Canonicalize fills the defaults of an operator's configuration.
func (c *SchedulerConfiguration) Canonicalize() {
	if c.SchedulerAlgorithm == "" {
		c.SchedulerAlgorithm = SchedulerAlgorithmBinpack
	}
}

// PreemptionEnabled reports whether the scheduler of jobType may preempt.
func (c *SchedulerConfiguration) PreemptionEnabled(jobType string) bool {
	if c == nil {
		c = DefaultSchedulerConfiguration()
	}
	p := c.PreemptionConfig
	switch jobType {
	case JobTypeSystem:
		return p.SystemSchedulerEnabled
	case JobTypeSysBatch:
		return p.SysBatchSchedulerEnabled
	case JobTypeBatch:
		return p.BatchSchedulerEnabled
	case JobTypeService:
		return p.ServiceSchedulerEnabled
	}
	return false
}

// AlgorithmFor is the algorithm that ranks nodes of pool: the pool's own
// (its SchedulerConfiguration's SchedulerAlgorithm) when it sets one, else
// the cluster's. pool may be nil.
func (c *SchedulerConfiguration) AlgorithmFor(pool *NodePool) string {
	if alg := PoolSchedulerAlgorithm(pool); alg != "" {
		return alg
	}
	if c == nil || c.SchedulerAlgorithm == "" {
		return SchedulerAlgorithmBinpack
	}
	return c.SchedulerAlgorithm
}

// PoolSchedulerAlgorithm is the algorithm a node pool sets for its nodes,
// "" when it sets none (or nothing valid).
func PoolSchedulerAlgorithm(pool *NodePool) string {
	if pool == nil {
		return ""
	}
	s, _ := pool.SchedulerConfiguration["SchedulerAlgorithm"].(string)
	switch s {
	case SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread:
		return s
	}
	return ""
}

// ValidatePoolSchedulerConfiguration checks a node pool's scheduler
// configuration: SchedulerAlgorithm, when present, is binpack or spread,
// and MemoryOversubscriptionEnabled, when present, a boolean.
func ValidatePoolSchedulerConfiguration(m map[string]any) error {
	var v ValidationError
	if a, ok := m["SchedulerAlgorithm"]; ok {
		if s, _ := a.(string); s != "" && s != SchedulerAlgorithmBinpack && s != SchedulerAlgorithmSpread {
			v.Add("SchedulerConfiguration.SchedulerAlgorithm", "must be %q or %q, got %v", SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread, a)
		}
	}
	if b, ok := m["MemoryOversubscriptionEnabled"]; ok && b != nil {
		if _, isBool := b.(bool); !isBool {
			v.Add("SchedulerConfiguration.MemoryOversubscriptionEnabled", "must be a boolean, got %v", b)
		}
	}
	return v.Err()
}

// SchedulerConfigurationResponse is GET /v1/operator/scheduler/configuration.
type SchedulerConfigurationResponse struct {
	SchedulerConfig *SchedulerConfiguration
	Index           uint64
}

// SchedulerSetConfigurationResponse is PUT
// /v1/operator/scheduler/configuration: whether the write happened (false
// when ?cas did not match) and the index of the write.
type SchedulerSetConfigurationResponse struct {
	Updated bool
	Index   uint64
}
