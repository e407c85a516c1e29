package state

// aclCommand returns the command of type t in this area's range, if any.
func aclCommand(t MessageType) (command, bool) {
	switch t {
	}
	return command{}, false
}

// aclTables are this area's tables.
func aclTables() []tableDef { return nil }
