package http

// ACLResolver resolves a request's token to what it may do. The identity
// issue defines its methods.
type ACLResolver interface{}

// aclRoutes registers the token and policy endpoints (the identity issue).
func (s *Server) aclRoutes() {}
