package state

// Namespace partitions jobs and their objects. The `default` namespace
// always exists and cannot be deleted.
type Namespace struct {
	Name        string
	Description string
	Quota       string
	Meta        map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}
