package store

// clusterCommand returns the command of type t in this area's range, if any.
func clusterCommand(t MessageType) (command, bool) {
	switch t {
	case SchedulerConfigSetRequestType:
		return handler(applySchedulerConfigSet), true
	}
	return command{}, false
}

// clusterTables are this area's tables.
func clusterTables() []tableDef { return []tableDef{schedulerConfigTable()} }
