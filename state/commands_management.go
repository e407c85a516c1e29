package state

// managementCommand returns the command of type t in this area's range, if any.
func managementCommand(t MessageType) (command, bool) {
	switch t {
	}
	return command{}, false
}

// managementTables are this area's tables.
func managementTables() []tableDef { return nil }
