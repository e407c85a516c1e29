package state

// ServiceListStub is one namespace of GET /v1/services, in Nomad's shape.
type ServiceListStub struct {
	Namespace string
	Services  []*ServiceListEntry
}

// ServiceListEntry is one service of a namespace in GET /v1/services:
// its name and the union of its instances' tags.
type ServiceListEntry struct {
	ServiceName string
	Tags        []string
}

// ServiceRegistrationsResponse answers the service writes. Index is zero
// when there was nothing to write (every entry's allocation is gone).
type ServiceRegistrationsResponse struct {
	Index uint64
}
