package state

// nodeCommand returns the command of type t in this area's range, if any.
func nodeCommand(t MessageType) (command, bool) {
	switch t {
	}
	return command{}, false
}
