package http

// LeaderServices is what handlers need of the leader-only scheduler
// services. The scheduler issue defines its methods.
type LeaderServices interface{}

// schedulerRoutes registers nodes, node pools, evaluations, allocations,
// deployments, the plan dry run, evaluate and GC (the scheduler issue).
func (s *Server) schedulerRoutes() {}
