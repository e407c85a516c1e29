package state

// planCommand returns the command of type t in this area's range, if any.
func planCommand(t MessageType) (command, bool) {
	switch t {
	}
	return command{}, false
}
