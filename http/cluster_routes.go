package http

// Forwarder proxies requests to the leader. The cluster issue defines its
// methods.
type Forwarder interface{}

// clusterRoutes registers status, agent and operator endpoints (the
// three-server cluster issue).
func (s *Server) clusterRoutes() {}
